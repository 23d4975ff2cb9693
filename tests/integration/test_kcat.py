"""kcat 1.7.1 (Debian, librdkafka 2.0.2: the strictest client) against a real standalone broker:
metadata, produce/consume with every codec (needs Produce ∋ 0 advertised), keys, headers, offsets by
timestamp."""

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by the setup")
TIMEOUT_S = 30


def kcat(broker, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run(["kcat", "-b", broker.bootstrap, *args], input=stdin, capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_metadata_lists_this_broker_as_controller(broker):
    assert "(controller)" in kcat(broker, "-L")


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_produce_and_consume_with_keys_and_headers(broker, topic_name, codec):
    lines = [f"key{i}\tvalue-{i}-" + "x" * 2000 for i in range(20)]
    kcat(broker, "-P", "-t", topic_name, "-z", codec, "-K", "\t", "-H", "origin=kcat", stdin="\n".join(lines) + "\n")
    out = kcat(broker, "-C", "-t", topic_name, "-o", "beginning", "-e", "-f", "%k|%s|%h|%o\n")
    assert out.splitlines() == [f"key{i}|value-{i}-{'x' * 2000}|origin=kcat|{i}" for i in range(20)]


def test_query_offset_by_timestamp(broker, topic_name):
    kcat(broker, "-P", "-t", topic_name, stdin="a\nb\n")
    out = kcat(broker, "-Q", "-t", f"{topic_name}:0:1")
    assert f"{topic_name} [0] offset 0" in out
