#!/usr/bin/env bash
# The whole suite: lint, import contracts, then every test once — the control-plane and dashboard tests on a
# throwaway PostgreSQL (production's database), the rest on SQLite (the integration tests' control plane runs on
# SQLite, `make run`'s default, migrations included). Starts its own Redis and PostgreSQL and stops them on exit.
# The 30 slowest tests are listed at the end of each pass (CI's 25-minute budget).
set -euo pipefail
BIN=.venv/bin
export STROM_REDIS_PORT=${STROM_REDIS_PORT:-6391}
export CELERY_BROKER_URL=redis://127.0.0.1:$STROM_REDIS_PORT/0
trap 'scripts/redis.sh stop; scripts/postgres.sh stop' EXIT
scripts/redis.sh start

echo "== ruff";         $BIN/ruff check .
echo "== import contracts"; $BIN/lint-imports
echo "== tests (SQLite)"
$BIN/pytest --ignore=tests/controlplane --ignore=tests/webui --durations=30 "$@"
echo "== control-plane and dashboard tests (PostgreSQL)"
DATABASE_URL=$(scripts/postgres.sh start) $BIN/pytest tests/controlplane tests/webui --durations=30 "$@"
