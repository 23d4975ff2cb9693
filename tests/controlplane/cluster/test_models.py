import pytest
from django.core.exceptions import ValidationError

from controlplane.cluster.models import Broker, ControllerState


@pytest.mark.django_db
def test_broker_endpoints_are_parsed_from_listeners():
    broker = Broker.objects.create(broker_id=7, listeners="PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9192")
    assert broker.endpoints == [("PLAINTEXT", "127.0.0.1", 9092), ("INTERNAL", "127.0.0.1", 9192)]


@pytest.mark.django_db
@pytest.mark.parametrize(("fields", "bad_field"), [
    ({"broker_id": -1, "listeners": "PLAINTEXT://h:1"}, "broker_id"),
    ({"broker_id": 1, "listeners": "h:1"}, "listeners"),
    ({"broker_id": 1, "listeners": "PLAINTEXT://h:1", "state": "dancing"}, "state"),
])
def test_invalid_brokers_are_refused(fields, bad_field):
    with pytest.raises(ValidationError) as error:
        Broker(**fields).full_clean()
    assert bad_field in error.value.message_dict


@pytest.mark.django_db
def test_controller_state_is_a_singleton():
    first = ControllerState.current()
    first.controller_epoch = 4
    first.save()
    assert ControllerState.current().controller_epoch == 4
    assert ControllerState.objects.count() == 1
