"""Consumer-group coordination (Kafka's classic group protocol) over the `__consumer_offsets` topic.

`state` holds the group and member model and its state machine; `coordinator` the sans-IO coordinator of
one `__consumer_offsets` partition; `loader` reads a partition's log back into records; `offsets_topic`
creates the topic and maps a group to its coordinator broker; `manager` runs one coordinator per partition
this broker leads (loading, writes, the timer). The topic's record formats are Kafka's, shared with the lag
monitor: `kafkaspec.consumer_offsets`.
"""
