#!/usr/bin/env bash
# A throwaway PostgreSQL for the test suite: cluster in var/postgres, port $STROM_PG_PORT (5439),
# owned by the 'postgres' system user (initdb refuses root). Prints the DATABASE_URL on start.
# Usage: scripts/postgres.sh start|stop
set -euo pipefail
port=${STROM_PG_PORT:-5439}
bindir=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | sort -V | tail -1)")
root=$(pwd)/var/postgres
data=$root/data
if [ "$(id -u)" -eq 0 ]; then as_pg() { runuser -u postgres -- "$@"; }; else as_pg() { "$@"; }; fi
case "${1:-start}" in
  start)
    mkdir -p "$root"
    if [ "$(id -u)" -eq 0 ]; then
      chown postgres: "$root"
      # The server runs as 'postgres', which must be able to reach var/ (e.g. in a 0700 temp clone).
      d=$root
      while [ "$d" != / ]; do
        d=$(dirname "$d")
        runuser -u postgres -- test -x "$d" || chmod o+x "$d"
      done
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
      as_pg "$bindir/initdb" -D "$data" -U strom --auth=trust -E UTF8 >/dev/null
    fi
    if ! as_pg "$bindir/pg_ctl" -D "$data" status >/dev/null 2>&1; then
      if ! as_pg "$bindir/pg_ctl" -D "$data" -l "$root/postgres.log" -w -t 60 \
        -o "-p $port -k $root -c listen_addresses=127.0.0.1 -c fsync=off" start >/dev/null; then
        # pg_ctl only says "Examine the log output": name the cause (e.g. port 5439 taken) in one line.
        echo "postgres.sh: PostgreSQL did not start on port $port:" \
          "$(grep -E 'FATAL|could not bind' "$root/postgres.log" | tail -2 | sed 's/^[^]]*] *//' | paste -sd';' | sed 's/;/; /g')" \
          "(log: $root/postgres.log; another port: STROM_PG_PORT)" >&2
        exit 1
      fi
    fi
    echo "postgres://strom@127.0.0.1:$port/strom" ;;
  stop)
    [ -f "$data/PG_VERSION" ] && as_pg "$bindir/pg_ctl" -D "$data" -m fast stop >/dev/null 2>&1 || true ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
