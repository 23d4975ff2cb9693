"""`manage.py consumer_groups` over a fake of the Kafka-client layer; bad input in a real process."""

import subprocess
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from controlplane.groups.kafka_client import Member, TopicPartition
from tests.conftest import ROOT
from tests.controlplane.groups.conftest import FakeLog

T0, T1 = TopicPartition("clicks", 0), TopicPartition("clicks", 1)


@pytest.fixture
def cluster_with_groups(connected_to_fake, local_superuser):
    """clicks-0: offsets 0-9; clicks-1: offsets 3-7. 'reports' (Empty) committed 2 and 4; 'stream' (Stable) has one
    member owning both partitions and committed clicks-0 at 9."""
    fake = connected_to_fake
    fake.add_topic("clicks", FakeLog(0, list(range(10))), FakeLog(3, list(range(5))))
    fake.add_group("reports", committed={T0: 2, T1: 4})
    fake.add_group("stream", "Stable", (Member("m-1", "app", "/10.0.0.7", None, (T0, T1)),), {T0: 9})
    return fake


def run(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("consumer_groups", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def lines(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_list(cluster_with_groups):
    assert run("--list")[0].split() == ["reports", "stream"]
    assert lines(run("--list", "--state")[0]) == [["GROUP", "STATE", "PROTOCOL-TYPE", "MEMBERS"],
                                                  ["reports", "Empty", "consumer", "0"],
                                                  ["stream", "Stable", "consumer", "1"]]


def test_describe_prints_kafkas_columns(cluster_with_groups):
    out, _ = run("--describe", "--group", "stream")
    assert lines(out) == [
        ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"],
        ["stream", "clicks", "0", "9", "10", "1", "m-1", "/10.0.0.7", "app"],
        ["stream", "clicks", "1", "-", "8", "-", "m-1", "/10.0.0.7", "app"]]
    header, first = out.strip().splitlines()[:2]
    assert header.index("LAG") == first.index(" 1 ") + 1, "columns are aligned"


def test_describe_an_inactive_group_says_so(cluster_with_groups):
    out, _ = run("--describe", "--group", "reports")
    assert "Consumer group 'reports' has no active members." in out
    assert lines(out)[-1] == ["reports", "clicks", "1", "4", "8", "4", "-", "-", "-"]


def test_reset_dry_run_is_the_default(cluster_with_groups):
    out, err = run("--reset-offsets", "--group", "reports", "--all-topics", "--to-earliest")
    assert "--execute option is missing" in err
    assert lines(out) == [
        ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET", "LOG-END-OFFSET", "LAG-AFTER"],
        ["reports", "clicks", "0", "2", "0", "10", "10"],
        ["reports", "clicks", "1", "4", "3", "8", "5"]]
    assert cluster_with_groups.committed["reports"] == {T0: 2, T1: 4}


@pytest.mark.parametrize(("args", "expected"), [
    (["--to-latest"], {T0: 10, T1: 8}),
    (["--shift-by", "-3"], {T0: 0, T1: 3}),
    (["--to-offset", "5"], {T0: 5, T1: 5}),
])
def test_reset_execute(cluster_with_groups, args, expected):
    out, err = run("--reset-offsets", "--group", "reports", "--topic", "clicks", *args, "--execute")
    assert cluster_with_groups.committed["reports"] == expected
    assert "--execute option is missing" not in err


def test_reset_partitions_and_clamping_warning(cluster_with_groups):
    out, err = run("--reset-offsets", "--group", "reports", "--topic", "clicks:1", "--to-offset", "50", "--dry-run")
    assert [row[:5] for row in lines(out)[1:]] == [["reports", "clicks", "1", "4", "8"]]
    assert "Warn: New offset (50) is higher than latest offset for topic partition clicks-1. Value will be set to 8" \
        in err


def test_reset_of_an_active_group(cluster_with_groups):
    _, err = run("--reset-offsets", "--group", "stream", "--all-topics", "--to-earliest", "--dry-run")
    assert "group 'stream' is Stable; --execute is refused" in err
    with pytest.raises(CommandError, match="Assignments can only be reset if the group 'stream' is inactive, but "
                                           "the current state is Stable."):
        run("--reset-offsets", "--group", "stream", "--all-topics", "--to-earliest", "--execute")
    assert cluster_with_groups.committed["stream"] == {T0: 9}


def test_delete(cluster_with_groups):
    assert run("--delete", "--group", "reports")[0].strip() == \
        "Deletion of requested consumer groups ('reports') was successful."
    with pytest.raises(CommandError, match="GROUP_ID_NOT_FOUND: Consumer group 'reports' does not exist."):
        run("--delete", "--group", "reports")


@pytest.mark.parametrize(("args", "message"), [
    (["--describe"], "This action needs --group"),
    (["--describe", "--group", "nobody"], "Consumer group 'nobody' does not exist."),
    (["--reset-offsets", "--group", "reports", "--to-earliest"], "needs --all-topics or --topic"),
    (["--reset-offsets", "--group", "reports", "--all-topics", "--topic", "clicks", "--to-latest"],
     "cannot be used together"),
    (["--reset-offsets", "--group", "reports", "--all-topics"], "needs one of --to-earliest"),
    (["--reset-offsets", "--group", "reports", "--all-topics", "--by-duration", "1h"], "Invalid duration '1h'"),
    (["--reset-offsets", "--group", "reports", "--topic", "clicks:x", "--to-latest"], "Invalid --topic"),
    (["--reset-offsets", "--group", "reports", "--topic", "nope", "--to-latest"], "Topic 'nope' does not exist."),
    (["--describe", "--group", "reports", "--to-latest"], "--to-latest is only valid with --reset-offsets"),
    (["--describe", "--group", "reports", "--state"], "--state is only valid with --list"),
])
def test_bad_input(cluster_with_groups, args, message):
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run(*args)


def test_bad_input_is_one_line_and_a_nonzero_exit():
    result = subprocess.run([sys.executable, "manage.py", "consumer_groups", "--reset-offsets", "--group", "g",
                             "--all-topics", "--shift-by", "two"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode != 0
    assert result.stderr.strip().splitlines() == ["CommandError: INVALID_REQUEST: --shift-by needs an integer, "
                                                  "got 'two'"]
