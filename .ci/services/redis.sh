#!/usr/bin/env bash
# Redis for the proxy's replica tests: Debian's redis-server on 127.0.0.1, data in a temp dir.
#   start: installs redis-server with apt-get if missing, starts it, prints REDIS_URL=redis://127.0.0.1:PORT/0
#   stop:  stops it and removes the temp dir
# Only the REDIS_URL line goes to standard output (the caller evals it); everything else to standard error.
set -euo pipefail
STATE="${PLANGUARD_REDIS_STATE:-${TMPDIR:-/tmp}/planguard-ci-redis}"
PORT="${PLANGUARD_REDIS_PORT:-6391}"

start() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "redis.sh: installing redis-server (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends redis-server >&2
  fi
  if [ -f "$STATE/pid" ] && kill -0 "$(cat "$STATE/pid")" 2>/dev/null; then
    echo "REDIS_URL=redis://127.0.0.1:$(cat "$STATE/port")/0"
    return 0
  fi
  rm -rf "$STATE"
  mkdir -p "$STATE"
  echo "$PORT" >"$STATE/port"
  redis-server --bind 127.0.0.1 --port "$PORT" --protected-mode yes --dir "$STATE" \
    --save "" --appendonly no --daemonize yes --pidfile "$STATE/pid" --logfile "$STATE/redis.log" >&2
  for _ in $(seq 1 100); do
    if redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null | grep -q PONG; then
      echo "REDIS_URL=redis://127.0.0.1:$PORT/0"
      return 0
    fi
    sleep 0.1
  done
  echo "redis.sh: redis-server did not answer on 127.0.0.1:$PORT (log: $STATE/redis.log)" >&2
  return 1
}

stop() {
  if [ -f "$STATE/pid" ]; then
    local pid
    pid="$(cat "$STATE/pid")"  # redis removes its pidfile as it exits: read it once
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
  fi
  rm -rf "$STATE"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
