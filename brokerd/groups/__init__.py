"""Consumer-group coordination (Kafka's classic group protocol) over the `__consumer_offsets` topic.

Top to bottom (import contract `groups`): `manager` runs one coordinator per `__consumer_offsets` partition
this broker leads (loading, writes through the replica manager, the timer), with `loader` (a partition read
back into records through its `Partition`) and `offsets_topic` (creating the topic, group → coordinator
broker); `coordinator` is the sans-IO `GroupCoordinator` of one partition (lifecycle, the table of groups,
DescribeGroups/ListGroups), which hands requests to `offsets` (commits, fetches, deletions, expiry) and
`membership` (joins, syncs, heartbeats, leaves, rebalances, sessions); `persistence` (the records written and
replayed, and how failed writes are answered) and `deadlines` (the timers); `state` (the group and member
model and its state machine); `api` (request and result types, group states) and `errors`. The topic's
record formats are Kafka's, shared with the lag monitor: `kafkaspec.consumer_offsets`; the consumer
protocol's subscriptions and assignments: `kafkaspec.consumer_protocol`.
"""
