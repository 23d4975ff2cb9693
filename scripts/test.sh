#!/usr/bin/env bash
# The whole suite: lint, import contracts, then every test once, in two passes side by side (their databases
# and ports are apart; most of the integration tests' time is spent waiting on brokers, not on the CPU):
#   - the control-plane and dashboard tests on a throwaway PostgreSQL (production's database);
#   - the rest on SQLite (the integration tests' control planes run on SQLite, `make run`'s default), then the
#     control-plane tests of SQLite's write lock (marker sqlite_lock), which the PostgreSQL pass skips, and of
#     what differs by database (marker sqlite_pass), which both passes run.
# Starts its own Redis and PostgreSQL and stops them on exit. Each pass ends with its 30 slowest tests; the
# PostgreSQL pass's output is kept in var/test-postgresql.log and printed after the SQLite pass's.
set -euo pipefail
BIN=.venv/bin
export STROM_REDIS_PORT=${STROM_REDIS_PORT:-6391}
export CELERY_BROKER_URL=redis://127.0.0.1:$STROM_REDIS_PORT/0
postgresql_pass=
# (`|| true`: under `set -e` a failed kill of a pass that already ended would stop the trap before the servers.)
trap 'kill $postgresql_pass 2>/dev/null || true; scripts/redis.sh stop; scripts/postgres.sh stop' EXIT
scripts/redis.sh start

echo "== ruff";         $BIN/ruff check .
echo "== import contracts"; $BIN/lint-imports
database_url=$(scripts/postgres.sh start)
mkdir -p var
DATABASE_URL=$database_url $BIN/pytest tests/controlplane tests/webui --durations=30 "$@" >var/test-postgresql.log 2>&1 &
postgresql_pass=$!
echo "== tests (SQLite; the control-plane and dashboard tests run meanwhile on PostgreSQL)"
sqlite_status=0
$BIN/pytest --ignore=tests/controlplane --ignore=tests/webui --durations=30 "$@" || sqlite_status=$?
echo "== control-plane tests of SQLite's write lock and of what differs by database (SQLite)"
$BIN/pytest tests/controlplane -m "sqlite_lock or sqlite_pass" "$@" || sqlite_status=$?
postgresql_status=0
wait $postgresql_pass || postgresql_status=$?
echo "== control-plane and dashboard tests (PostgreSQL)"
cat var/test-postgresql.log
echo "== SQLite pass exit $sqlite_status, PostgreSQL pass exit $postgresql_status"
[ $sqlite_status -eq 0 ] && [ $postgresql_status -eq 0 ]
