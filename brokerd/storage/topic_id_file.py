"""`partition.metadata`: the id of the topic a partition's log belongs to (Kafka's `PartitionMetadataFile`,
KIP-516), kept beside the segments. A topic deleted and re-created under the same name while this broker
was down has a new id, so its old log is recognised as another topic's and deleted, never served as the
new topic's (`LogManager.get_or_create_log`, `delete_stray_logs`).

Format (text, as Kafka writes it)::

    version: 0
    topic_id: <the topic id as Kafka prints a Uuid: URL-safe base64, no padding, 22 characters>

Written atomically (temp file, fsync, rename, fsync of the directory) when a log is created (the directory's
fsync then done by the creator, `LogManager.create_logs`) or first adopted by a topic. No file means the id is
unknown (a log written before ids were kept): the log is adopted by the topic of its name. A file that does
not parse raises `KafkaStorageError`.
"""

import base64
import uuid
from pathlib import Path

from brokerd.storage.checkpoints import write_atomically
from brokerd.storage.errors import KafkaStorageError

FILE_NAME = "partition.metadata"
VERSION = 0


def kafka_uuid_string(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")


def read(directory: Path) -> uuid.UUID | None:
    """The topic id stored in `directory`, None if it has no `partition.metadata`."""
    path = directory / FILE_NAME
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
    try:
        if int(fields["version"]) != VERSION:
            raise ValueError(f"version {fields['version']}")
        return uuid.UUID(bytes=base64.urlsafe_b64decode(fields["topic_id"] + "=="))
    except (KeyError, ValueError) as exc:
        raise KafkaStorageError(f"{path} does not parse: {exc}") from exc


def write(directory: Path, topic_id: uuid.UUID, sync_directory: bool = True) -> None:
    write_atomically(directory / FILE_NAME, f"version: {VERSION}\ntopic_id: {kafka_uuid_string(topic_id)}\n".encode(),
                     sync_directory)
