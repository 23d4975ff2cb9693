#!/usr/bin/env bash
# Starts (idempotently) or stops Strom's own Redis on 127.0.0.1:$STROM_REDIS_PORT, data in var/redis.
# Usage: scripts/redis.sh start|stop
set -euo pipefail
port=${STROM_REDIS_PORT:-6390}
dir=$(pwd)/var/redis
pidfile=$dir/redis.pid
case "${1:-start}" in
  start)
    mkdir -p "$dir"
    if redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1; then exit 0; fi
    redis-server --bind 127.0.0.1 --port "$port" --dir "$dir" --daemonize yes \
      --pidfile "$pidfile" --logfile "$dir/redis.log" --save "" --appendonly no >/dev/null
    for _ in $(seq 1 100); do
      redis-cli -h 127.0.0.1 -p "$port" ping >/dev/null 2>&1 && exit 0
      sleep 0.1
    done
    echo "redis did not start on 127.0.0.1:$port; see $dir/redis.log" >&2; exit 1 ;;
  stop)
    redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
