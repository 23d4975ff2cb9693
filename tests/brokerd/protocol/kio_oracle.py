"""kio as the oracle of a response laid out by hand: what kio decodes from it, and what kio itself would encode."""

import io

from kio.index import load_response_schema
from kio.serial import entity_reader, entity_writer

from brokerd.protocol.api_keys import ApiKey


def assert_laid_out_as_kio(api_key: ApiKey, version: int, body: bytes, want: object) -> None:
    """`body` (a response after its correlation id) decodes with kio to exactly `want`, with nothing left over,
    and is byte for byte what kio encodes for `want`."""
    response_type = load_response_schema(api_key, version)
    offset = 1 if response_type.__flexible__ else 0  # the response header's tag section (header v1)
    decoded, used = entity_reader(response_type)(body, offset)
    assert offset + used == len(body)
    assert decoded == want
    encoded = io.BytesIO()
    entity_writer(response_type)(encoded, want)
    assert body[offset:] == encoded.getvalue()
