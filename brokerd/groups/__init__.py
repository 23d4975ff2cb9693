"""Consumer-group coordination (Kafka's classic group protocol) over the `__consumer_offsets` topic.

`schemas` holds the record formats of that topic; `state` the group and member model and its state
machine; `coordinator` the sans-IO coordinator of one `__consumer_offsets` partition.
"""
