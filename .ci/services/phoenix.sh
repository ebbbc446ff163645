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
NAME=phoenix
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/_lib.sh"
PHOENIX_VERSION="${PHOENIX_VERSION:-20.26.1}"
PHOENIX_VENV="${PHOENIX_VENV:-${PLANGUARD_SERVICES_DIR:-/opt}/phoenix-venv}"

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

cmd_start() {
    cmd_install
    local port grpc_port workdir
    port="${PHOENIX_PORT:-$(free_port 6006)}"
    grpc_port="$(free_port $((port + 1000)))"
    workdir="$(new_workdir)"
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
    local url="http://127.0.0.1:$port"
    wait_http "$url/healthz" "${PHOENIX_START_TIMEOUT:-180}"
    log "up at $url (working dir $workdir)"
    printf 'PHOENIX_URL=%s\nPHOENIX_PID=%s\n' "$url" "$(cat "$PID_FILE")" > "$ENV_FILE"
    print_env
}

dispatch "$@"
