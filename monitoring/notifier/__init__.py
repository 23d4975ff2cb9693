"""Alerting (Burrow's notifier, without its noise): `incidents` decides what to announce and when (pure
logic over an incident store), `payloads` builds request bodies (Jinja templates with Burrow's variables,
Standard Webhooks JSON, Slack, Microsoft Teams, PagerDuty Events v2), `signing` signs them the Standard
Webhooks way, `sender` performs one delivery attempt and classifies the answer for retries."""
