"""Burrow-style consumer-lag evaluation and alerting, as a library without Django (the control plane
imports it; `python -m monitoring` runs it alone).

Laid out as Burrow's pipeline: `collector` (commits from `__consumer_offsets`, heads by ListOffsets,
record times) → `storage` (windows and head rings) → `evaluator` (Burrow's rules, pure) → `notifier`
(incidents, payloads, signing, delivery attempts); beside it `history` (lag samples topic), `burrow_api`
(Burrow's HTTP v3 bodies), `prometheus` (lag metrics), `persistence` (state and incidents across restarts);
`service.LagMonitor` wires them together.
"""
