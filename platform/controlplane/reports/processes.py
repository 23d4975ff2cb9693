"""The OS side of a report run's job: its process group, found, checked and stopped (Linux `/proc`).

A job runs in its own session, so its process group id is the job's pid and holds the job's Python driver, its
JVM and the JVM's Python workers. Every member carries `RUN_ID_ENV=<run id>` in its environment (inherited from
the job), so a group found again later — by the orphan reaper, after its runner died — is only stopped if it is
still that run's: a pid reused by another program is left alone.
"""

import os
import signal
import time
from pathlib import Path

RUN_ID_ENV = "STROM_REPORT_RUN_ID"
"""Set in the job's environment: the run id its processes belong to."""
POLL_S = 0.1


def alive(pid: int) -> bool:
    """Running: exists and is not a zombie (a killed process whose parent is gone stays one until reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(stat.parent.name))
    return members


def belongs_to_run(pid: int, run_id: str) -> bool:
    """Whether process `pid` was started for run `run_id` (its environment says so)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return False
    return f"{RUN_ID_ENV}={run_id}".encode() in environ


def run_group(pgid: int, run_id: str) -> list[int]:
    """The live members of group `pgid` if it is still run `run_id`'s job, else []."""
    members = group_members(pgid)
    return members if any(belongs_to_run(pid, run_id) for pid in members) else []


def stop_group(pgid: int, grace_s: float) -> bool:
    """SIGTERM the group, SIGKILL whatever is left after `grace_s`; True once no member is left (within a few
    seconds of the SIGKILL). Zombies do not count: a leader that is the caller's child is reaped by the caller."""
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait_s
        while group_members(pgid):
            if time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)
        else:
            return True
    return not group_members(pgid)
