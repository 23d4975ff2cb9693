import pytest

from kafkaspec.listeners import Endpoint, InvalidListenerError, parse_listeners


def test_parse_listener_list():
    assert parse_listeners("PLAINTEXT://127.0.0.1:9092, internal://[::1]:9093") == [
        Endpoint("PLAINTEXT", "127.0.0.1", 9092), Endpoint("INTERNAL", "::1", 9093)]


def test_empty_host_means_default_interface():
    assert parse_listeners("PLAINTEXT://:9092") == [Endpoint("PLAINTEXT", "", 9092)]


@pytest.mark.parametrize(("text", "message"), [
    ("", "No listener"),
    ("127.0.0.1:9092", "expected NAME://host:port"),
    ("PLAINTEXT://host:99999", "out of range"),
    ("PLAINTEXT://a:1,PLAINTEXT://b:2", "different name"),
])
def test_invalid_listeners(text, message):
    with pytest.raises(InvalidListenerError, match=message):
        parse_listeners(text)
