"""Sans-IO Kafka wire codec: framing, request headers, message schemas (kio), error codes, API versions.

Nothing here touches a socket, the event loop or storage: bytes in, typed values out, and back.
"""
