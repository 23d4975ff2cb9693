#!/usr/bin/env bash
# The whole suite: lint, import contracts, every test on SQLite, then the control-plane tests again on a
# throwaway PostgreSQL. Starts its own Redis and PostgreSQL and stops them on exit.
set -euo pipefail
BIN=.venv/bin
export STROM_REDIS_PORT=${STROM_REDIS_PORT:-6391}
export CELERY_BROKER_URL=redis://127.0.0.1:$STROM_REDIS_PORT/0
trap 'scripts/redis.sh stop; scripts/postgres.sh stop' EXIT
scripts/redis.sh start

echo "== ruff";         $BIN/ruff check .
echo "== import contracts"; $BIN/lint-imports
echo "== tests (SQLite)"
$BIN/pytest "$@"
echo "== control-plane tests (PostgreSQL)"
DATABASE_URL=$(scripts/postgres.sh start) $BIN/pytest tests/controlplane tests/webui "$@"
