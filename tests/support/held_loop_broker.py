"""`python -m tests.support.held_loop_broker <brokerd arguments>`: `python -m brokerd` whose event loop can be
held from outside: on SIGUSR1 its main thread (the loop's) sleeps `STROM_TEST_LOOP_HOLD_MS` (default 6000), as a
callback blocking the loop would, and logs `loop held from` / `loop free again` to stderr around it. Other threads
run on meanwhile; a SIGSTOP, by contrast, stops them all."""

import logging
import os
import signal
import sys
import time

from brokerd.__main__ import main

HOLD_ENV = "STROM_TEST_LOOP_HOLD_MS"
log = logging.getLogger("tests.held_loop")


def hold_the_loop(signum, frame) -> None:
    hold_ms = int(os.environ.get(HOLD_ENV, "6000"))
    log.warning("loop held from now for %d ms", hold_ms)
    time.sleep(hold_ms / 1000)
    log.warning("loop free again")


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, hold_the_loop)
    sys.exit(main())
