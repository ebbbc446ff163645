#!/usr/bin/env bash
# Arize Phoenix (OTLP/HTTP trace backend with a REST API) on 127.0.0.1, for planguard's e2e tests and dev.
#
#   bash .ci/services/phoenix.sh install   # venv + pip install (idempotent)
#   bash .ci/services/phoenix.sh start     # install, start, wait for /healthz; prints `export PHOENIX_URL=...` to eval
#   bash .ci/services/phoenix.sh stop      # stop it and remove its temporary working dir
#   bash .ci/services/phoenix.sh status
#
# Phoenix gets a venv of its own because its dependency tree is large and pins things planguard does not.
# Knobs (environment): PHOENIX_VENV (default ${PLANGUARD_SERVICES_DIR:-/opt}/phoenix-venv), PHOENIX_VERSION,
# PHOENIX_PORT (default: 6006 when free, else a free port), PLANGUARD_SERVICES_RUN (pid/env/log files),
# PHOENIX_START_TIMEOUT (seconds, default 180).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PHOENIX_VERSION="${PHOENIX_VERSION:-20.26.1}"
PHOENIX_VENV="${PHOENIX_VENV:-${PLANGUARD_SERVICES_DIR:-/opt}/phoenix-venv}"
RUN_DIR="${PLANGUARD_SERVICES_RUN:-/tmp/planguard-services}"
PID_FILE="$RUN_DIR/phoenix.pid"
ENV_FILE="$RUN_DIR/phoenix.env"
LOG_FILE="$RUN_DIR/phoenix.log"
WORKDIR_FILE="$RUN_DIR/phoenix.workdir"

log() { echo "phoenix.sh: $*" >&2; }

free_port() {  # first free 127.0.0.1 port at or after $1
    python3 - "$1" <<'PY'
import socket, sys
port = int(sys.argv[1])
for p in range(port, port + 200):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", p))
        except OSError:
            continue
        print(p)
        break
else:
    sys.exit("no free port")
PY
}

installed() {
    [ -x "$PHOENIX_VENV/bin/python" ] && "$PHOENIX_VENV/bin/python" - "$PHOENIX_VERSION" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
sys.exit(0 if version("arize-phoenix") == sys.argv[1] else 1)
PY
}

cmd_install() {
    if installed; then
        log "arize-phoenix $PHOENIX_VERSION already in $PHOENIX_VENV"
        return 0
    fi
    local t0=$SECONDS
    log "installing arize-phoenix==$PHOENIX_VERSION into $PHOENIX_VENV"
    mkdir -p "$(dirname "$PHOENIX_VENV")"
    python3 -m venv "$PHOENIX_VENV"
    "$PHOENIX_VENV/bin/pip" install -q --disable-pip-version-check "arize-phoenix==$PHOENIX_VERSION" >&2
    log "installed in $((SECONDS - t0))s"
}

running() {
    [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

cmd_start() {
    mkdir -p "$RUN_DIR"
    if running && [ -f "$ENV_FILE" ]; then
        log "already running (pid $(cat "$PID_FILE"))"
        print_env
        return 0
    fi
    cmd_install
    local port grpc_port workdir
    port="${PHOENIX_PORT:-$(free_port 6006)}"
    grpc_port="$(free_port $((port + 1000)))"
    workdir="$(mktemp -d "${TMPDIR:-/tmp}/planguard-phoenix.XXXXXX")"
    echo "$workdir" > "$WORKDIR_FILE"
    # The launcher pins Phoenix's gRPC listener to 127.0.0.1 (Phoenix binds it to [::] with no setting).
    PHOENIX_HOST=127.0.0.1 \
    PHOENIX_PORT="$port" \
    PHOENIX_GRPC_PORT="$grpc_port" \
    PHOENIX_WORKING_DIR="$workdir" \
    PHOENIX_TELEMETRY_ENABLED=false \
    PHOENIX_ALLOW_EXTERNAL_RESOURCES=false \
    PHOENIX_DISABLE_AGENT_ASSISTANT=true \
        setsid nohup "$PHOENIX_VENV/bin/python" "$HERE/phoenix_launch.py" serve >"$LOG_FILE" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
    local url="http://127.0.0.1:$port" deadline=$((SECONDS + ${PHOENIX_START_TIMEOUT:-180})) t0=$SECONDS
    until python3 - "$url/healthz" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
    do
        if ! running; then
            log "exited during start-up; last log lines:"; tail -n 30 "$LOG_FILE" >&2; return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log "no /healthz after ${PHOENIX_START_TIMEOUT:-180}s; last log lines:"; tail -n 30 "$LOG_FILE" >&2
            cmd_stop; return 1
        fi
        sleep 1
    done
    log "up at $url in $((SECONDS - t0))s (pid $(cat "$PID_FILE"), working dir $workdir)"
    printf 'PHOENIX_URL=%s\nPHOENIX_PID=%s\n' "$url" "$(cat "$PID_FILE")" > "$ENV_FILE"
    print_env
}

print_env() {  # `export KEY=VALUE` lines for eval; the env file keeps plain KEY=VALUE lines
    sed 's/^/export /' "$ENV_FILE"
}

cmd_stop() {
    if running; then
        local pid; pid="$(cat "$PID_FILE")"
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        if kill -0 "$pid" 2>/dev/null; then log "pid $pid ignored TERM; killing"; kill -KILL "$pid" || true; fi
        log "stopped (pid $pid)"
    fi
    if [ -f "$WORKDIR_FILE" ]; then
        local wd; wd="$(cat "$WORKDIR_FILE")"
        case "$wd" in */planguard-phoenix.*) rm -rf "$wd" ;; esac
    fi
    rm -f "$PID_FILE" "$ENV_FILE" "$WORKDIR_FILE"
}

cmd_status() {
    if running; then print_env 2>/dev/null || true; log "running (pid $(cat "$PID_FILE"))"; else log "not running"; return 1; fi
}

case "${1:-}" in
    install) cmd_install ;;
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) echo "usage: $0 {install|start|stop|status}" >&2; exit 2 ;;
esac
