"""Run one fuzz target under atheris (libFuzzer, coverage-guided) for a bounded time.

    python -m tests.fuzz.run record_batch --seconds 600

Starts from the target's seeds (`tests/fuzz/corpus/<target>/`) and regression inputs, plus the inputs found by
earlier runs (`var/fuzz/<target>/`, where new ones are written: the repository's corpus stays small). Strom's
code and kio (the request bodies' decoder) are instrumented for coverage. A crash (an exception the target
does not allow, a timeout, memory beyond `--rss-limit-mb`) stops the run with a non-zero status and leaves the
input in `var/fuzz/crashes/<target>-*`: add it to `tests/fuzz/regressions/<target>/`, fix the cause, and
`tests/fuzz/test_fuzz.py` replays it from then on.
"""

import argparse
import logging
import sys
from pathlib import Path

import atheris

FUZZ_DIR = Path(__file__).resolve().parent
REPO_ROOT = FUZZ_DIR.parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("--seconds", type=int, default=10, help="total fuzzing time (default 10)")
    parser.add_argument("--rss-limit-mb", type=int, default=1536)
    parser.add_argument("--timeout-s", type=int, default=10, help="a single input running longer is a crash")
    args = parser.parse_args()

    with atheris.instrument_imports(include=["brokerd", "kafkaspec", "kio"]):
        from tests.fuzz.targets import TARGETS
    if args.target not in TARGETS:
        parser.error(f"unknown target {args.target}; one of {', '.join(TARGETS)}")
    work = REPO_ROOT / "var" / "fuzz" / args.target
    crashes = REPO_ROOT / "var" / "fuzz" / "crashes"
    work.mkdir(parents=True, exist_ok=True)
    crashes.mkdir(parents=True, exist_ok=True)
    seeds = [d for d in (FUZZ_DIR / "corpus" / args.target, FUZZ_DIR / "regressions" / args.target) if d.is_dir()]
    libfuzzer_args = [
        sys.argv[0], str(work), *map(str, seeds),
        f"-max_total_time={args.seconds}", f"-rss_limit_mb={args.rss_limit_mb}", f"-timeout={args.timeout_s}",
        f"-artifact_prefix={crashes}/{args.target}-", "-max_len=65536", "-print_final_stats=1",
    ]
    logging.disable(logging.CRITICAL)  # the targets log what they skip; at thousands of inputs a second, noise
    atheris.Setup(libfuzzer_args, TARGETS[args.target])
    atheris.Fuzz()


if __name__ == "__main__":
    main()
