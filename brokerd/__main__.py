"""`python -m brokerd [server.properties] --standalone --listeners PLAINTEXT://127.0.0.1:9092 --log-dirs DIR
[--override key=value ...]`, or in a cluster `python -m brokerd --broker-id N --controlplane
http://127.0.0.1:8000 --listeners ... --log-dirs ...` (Kafka keys `node.id`/`broker.id`,
`strom.controlplane.url`; the cluster secret from $STROM_CLUSTER_SECRET or `strom.cluster.secret`).
Kafka broker keys come from the properties file, then `--override`, then the dedicated flags. Misuse
exits with status 2 and one line on stderr. SIGTERM/SIGINT stop gracefully.
"""

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

from brokerd import allocator, gc_policy, loop_priority, sched_slice, slow_callbacks
from brokerd.config import ConfigError, build_config, load_properties

SWITCH_INTERVAL_S = 0.001


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, like every other CLI error of the broker
        self.exit(2, f"brokerd: {message}\n")


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="python -m brokerd", description="Strom broker")
    parser.add_argument("properties", nargs="?", type=Path, help="Kafka server.properties file")
    parser.add_argument("--standalone", action="store_true",
                        help="single broker keeping its metadata in a local file")
    parser.add_argument("--broker-id", type=int, help="this broker's id (Kafka key: node.id / broker.id)")
    parser.add_argument("--controlplane", metavar="URL",
                        help="cluster mode: the control plane (Kafka-style key: strom.controlplane.url)")
    parser.add_argument("--listeners", help="e.g. PLAINTEXT://127.0.0.1:9092 (Kafka key: listeners)")
    parser.add_argument("--log-dirs", help="comma-separated data directories (Kafka key: log.dirs)")
    parser.add_argument("--override", action="append", default=[], metavar="KEY=VALUE",
                        help="any Kafka broker config key; repeatable")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    try:
        properties = load_properties(args.properties) if args.properties else {}
        for override in args.override:
            key, sep, value = override.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"--override expects key=value, got '{override}'")
            properties[key.strip()] = value.strip()
        if args.listeners:
            properties["listeners"] = args.listeners
        if args.log_dirs:
            properties["log.dirs"] = args.log_dirs
        if args.broker_id is not None:
            properties["node.id"] = str(args.broker_id)
        if args.controlplane:
            properties["strom.controlplane.url"] = args.controlplane
        if args.standalone and properties.get("strom.controlplane.url"):
            raise ConfigError("--standalone and a control plane URL exclude each other")
        if not args.standalone and not properties.get("strom.controlplane.url"):
            raise ConfigError("choose --standalone or --controlplane URL (strom.controlplane.url)")
        config = build_config(properties)
    except ConfigError as exc:
        print(f"brokerd: {exc}", file=sys.stderr)
        return 2
    # Another thread holding the GIL (log maintenance, a kio schema loading) hands it to the event loop
    # within this many seconds instead of the default 5 ms: no loop stall from them beyond 1 ms.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # Request buffers freed stay in the heap for the next requests, not re-faulted from the kernel each time.
    allocator.keep_freed_memory()
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # The CPU slice (a short one: a woken broker preempts a task with a longer slice instead of waiting it out);
    # asked before any thread starts, as threads inherit it, and also when 0, to drop a slice inherited.
    if not sched_slice.request(config.sched_slice_us) and config.sched_slice_us:
        logging.getLogger("brokerd").warning("strom.sched.slice.us: no %d µs CPU slice here (Linux, SCHED_OTHER "
                                             "only); the kernel's default applies", config.sched_slice_us)
    from brokerd.server.broker import Broker, run_until_stopped

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        if config.slow_callback_ms:
            slow_callbacks.install(config.slow_callback_ms)
        gc_policy.install(loop)  # long-lived objects out of full collections as they accumulate
        # The loop thread real-time while light (a woken broker runs at once); threads started from now on do not.
        loop_priority.install(loop, config.loop_priority, config.sched_slice_us)
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await run_until_stopped(Broker(config), stop)

    try:
        asyncio.run(run())
    except OSError as exc:
        print(f"brokerd: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
