"""Standard Webhooks signing (standardwebhooks.com) with the `standardwebhooks` package: HMAC-SHA256 over
`{webhook-id}.{webhook-timestamp}.{body}`, keyed with the endpoint secret (`whsec_` + base64 of 32 random
bytes), sent as `webhook-signature: v1,<base64>`. The id stays the same on every attempt (receivers
deduplicate on it); the timestamp is the attempt's (unix seconds), so a retry is not rejected as stale.
"""

import base64
import datetime
import secrets

from standardwebhooks import Webhook


def new_secret() -> str:
    """A fresh endpoint secret as shown to users: `whsec_` + base64 of 32 random bytes."""
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def signed_headers(secret: str, webhook_id: str, body: str, at: datetime.datetime) -> dict[str, str]:
    """The three Standard Webhooks headers for one attempt sending `body` at `at` (an aware datetime)."""
    at = at.astimezone(datetime.UTC)
    return {
        "webhook-id": webhook_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(webhook_id, at, body),
    }
