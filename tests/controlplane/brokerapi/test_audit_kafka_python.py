"""kafka-python's KafkaAdminClient.create_topics against a running broker in cluster mode: the control plane's
audit log, read through the REST API with a token from POST /api/token/, names the Kafka client (its address and
client id) as the actor."""

import pytest
import requests
from kafka.admin import KafkaAdminClient
from kafka.errors import TopicAlreadyExistsError

from tests.support.cluster import broker_cluster
from tests.support.controlplane import ADMIN_PASSWORD, ADMIN_USER, control_plane


def test_create_topics_by_kafka_python_is_audited_with_the_client(tmp_path):
    with control_plane(tmp_path, controller=False) as plane, broker_cluster(plane, tmp_path, 1) as cluster:
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, client_id="audit-probe")
        try:
            admin.create_topics({"audited": {"num_partitions": 2, "replication_factor": 1}})
            with pytest.raises(TopicAlreadyExistsError):
                admin.create_topics({"audited": {"num_partitions": 2, "replication_factor": 1}})
        finally:
            admin.close()

        token = requests.post(f"{plane.url}/api/token/", json={"username": ADMIN_USER, "password": ADMIN_PASSWORD},
                              timeout=10).json()["token"]
        audit = requests.get(f"{plane.url}/api/audit/?action=create_topics&target=audited&ordering=at",
                             headers={"Authorization": f"Token {token}"}, timeout=10)
        assert audit.status_code == 200
        rows = audit.json()["results"]
        assert [(r["actor"], r["address"], r["client_id"], r["source"], r["target"], r["result"]) for r in rows] == [
            ("audit-probe@127.0.0.1", "127.0.0.1", "audit-probe", "kafka", "topic:audited", "ok"),
            ("audit-probe@127.0.0.1", "127.0.0.1", "audit-probe", "kafka", "topic:audited", "failed")]
        assert rows[0]["after"]["partitions"] == 2
        assert rows[1]["detail"].startswith("TOPIC_ALREADY_EXISTS:")
