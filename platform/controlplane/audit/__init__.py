"""The audit log: one row per change to the cluster (and per failed or refused attempt), written by
`services.record` — called through `controlplane.access` by the console, the REST API, management commands and
the dashboard, and directly by the brokers' internal API for Kafka Admin API calls."""
