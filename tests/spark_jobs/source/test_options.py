"""The strom source's options (spark_jobs.source.options): Spark's Kafka option names, table-driven."""

import pytest

from spark_jobs.source.options import (
    EARLIEST,
    LATEST,
    Bound,
    OptionError,
    TopicSelection,
    include_headers,
    parse_sink_options,
    parse_source_options,
)

BOOTSTRAP = {"kafka.bootstrap.servers": "127.0.0.1:9092"}


def parse(streaming=False, **options):
    return parse_source_options({**BOOTSTRAP, **options}, streaming=streaming)


def test_defaults_as_spark_has_them():
    batch = parse(subscribe="orders")
    assert batch.starting == Bound(every=EARLIEST) and batch.ending == Bound(every=LATEST)
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.poll_timeout_s == 120 and batch.max_offsets_per_trigger is None
    stream = parse(streaming=True, subscribe="orders")
    assert stream.starting == Bound(every=LATEST) and stream.ending is None


def test_keys_are_case_insensitive_and_kafka_options_reach_the_client():
    # Spark hands the source lower-cased keys; users write camelCase
    options = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "kafka.client.id": "me",
                                    "Subscribe": "a, b ,", "STARTINGOFFSETS": "earliest"}, streaming=False)
    assert options.client == {"bootstrap.servers": "h:1", "client.id": "me"}
    assert options.topics == TopicSelection(subscribe=("a", "b"))


@pytest.mark.parametrize(("options", "expected"), [
    ({"subscribe": "a"}, TopicSelection(subscribe=("a",))),
    ({"subscribePattern": "orders-.*"}, TopicSelection(pattern="orders-.*")),
    ({"assign": '{"a": [0, 2], "b": [1]}'}, TopicSelection(assign={"a": (0, 2), "b": (1,)})),
])
def test_topic_selection(options, expected):
    assert parse(**options).topics == expected


def test_a_pattern_must_match_the_whole_name():
    selection = TopicSelection(pattern="orders-.*")
    assert selection.matches("orders-eu") and not selection.matches("old-orders-eu")


@pytest.mark.parametrize(("options", "expected"), [
    ({"startingOffsets": "earliest", "endingOffsets": "latest"}, (Bound(every=EARLIEST), Bound(every=LATEST))),
    ({"startingOffsets": '{"a": {"0": 23, "1": -2}}', "endingOffsets": '{"a": {"0": -1, "1": 50}}'},
     (Bound(offsets={("a", 0): 23, ("a", 1): EARLIEST}), Bound(offsets={("a", 0): LATEST, ("a", 1): 50}))),
    ({"startingTimestamp": "1700000000000", "endingTimestamp": "1700000600000"},
     (Bound(timestamp=1700000000000), Bound(timestamp=1700000600000))),
    ({"startingOffsetsByTimestamp": '{"a": {"0": 5}}', "endingOffsetsByTimestamp": '{"a": {"0": 9}}'},
     (Bound(timestamps={("a", 0): 5}), Bound(timestamps={("a", 0): 9}))),
    # precedence, as in Spark: by-timestamp, then timestamp, then offsets
    ({"startingOffsetsByTimestamp": '{"a": {"0": 5}}', "startingTimestamp": "7", "startingOffsets": "earliest"},
     (Bound(timestamps={("a", 0): 5}), Bound(every=LATEST))),
    ({"startingTimestamp": "7", "startingOffsets": "earliest"}, (Bound(timestamp=7), Bound(every=LATEST))),
])
def test_bounds(options, expected):
    parsed = parse(subscribe="a", **options)
    assert (parsed.starting, parsed.ending) == expected


@pytest.mark.parametrize(("streaming", "options", "message"), [
    (False, {}, "exactly one of the options 'subscribe', 'subscribePattern' or 'assign'"),
    (False, {"subscribe": "a", "assign": '{"a": [0]}'}, "(got subscribe, assign)"),
    (False, {"subscribePattern": "a("}, "not a valid regular expression"),
    (False, {"assign": "[1]"}, "assign must be a JSON object"),
    (False, {"assign": '{"a": ["x"]}'}, 'assign must look like {"topic": [0, 1]}'),
    (False, {"subscribe": "a", "startingOffsets": "latest"}, "'latest' is not allowed in a batch query"),
    (False, {"subscribe": "a", "startingOffsets": '{"a": {"0": -1}}'}, "-1 (latest) is not allowed in a batch"),
    (False, {"subscribe": "a", "startingOffsets": '{"a": {"0": -3}}'}, "offsets must be >= 0, -1"),
    (False, {"subscribe": "a", "startingOffsets": "soon"}, "startingOffsets must be a JSON object"),
    (False, {"subscribe": "a", "startingOffsets": '{"a": [1]}'}, "startingOffsets must be earliest, latest or JSON"),
    (False, {"subscribe": "a", "endingOffsets": "earliest"}, "endingOffsets 'earliest' (-2) is not allowed"),
    (False, {"subscribe": "a", "startingTimestamp": "yesterday"}, "startingTimestamp must be an integer"),
    (False, {"subscribe": "a", "minPartitions": "0"}, "'minPartitions' must be a positive integer"),
    (False, {"subscribe": "a", "maxRecordsPerPartition": "x"}, "'maxRecordsPerPartition' must be a positive"),
    (False, {"subscribe": "a", "failOnDataLoss": "maybe"}, "'failOnDataLoss' must be true or false"),
    (False, {"subscribe": "a", "minOffsetsPerTrigger": "5"}, "'minOffsetsPerTrigger' is not supported"),
    (False, {"subscribe": "a", "kafka.auto.offset.reset": "earliest"}, "the strom source manages it"),
    (False, {"subscribe": "a", "startingOffsetsByTimestampStrategy": "skip"}, "must be 'error' or 'latest'"),
    (True, {"subscribe": "a", "endingOffsets": "latest"}, "apply to batch queries only"),
])
def test_bad_options_are_refused_with_one_line(streaming, options, message):
    with pytest.raises(OptionError) as error:
        parse(streaming=streaming, **options)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_bootstrap_servers_are_required():
    with pytest.raises(OptionError, match="'kafka.bootstrap.servers' is required"):
        parse_source_options({"subscribe": "a"}, streaming=False)


def test_streaming_limits():
    assert parse(streaming=True, subscribe="a", maxOffsetsPerTrigger="500").max_offsets_per_trigger == 500
    assert parse(streaming=True, subscribe="a", startingOffsets="earliest").starting == Bound(every=EARLIEST)


def test_include_headers_alone_decides_the_schema():
    assert include_headers({"includeheaders": "true"}) and not include_headers({})


def test_sink_options():
    sink = parse_sink_options({**BOOTSTRAP, "Topic": "out", "kafka.acks": "all"})
    assert sink.topic == "out" and sink.client == {"bootstrap.servers": "127.0.0.1:9092", "acks": "all"}
    assert parse_sink_options(BOOTSTRAP).topic is None
