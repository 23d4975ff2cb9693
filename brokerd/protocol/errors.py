"""Byte streams and messages the codec cannot read. Either closes the connection: Kafka does the same, as
the stream can no longer be trusted to be in step."""


class InvalidFrameError(ValueError):
    """The byte stream cannot be a Kafka request stream (bad size prefix); close the connection."""


class MalformedRequestError(ValueError):
    """A frame whose header or body does not decode (or a response that does not match its request)."""
