# Shared by the service scripts in this folder (sourced, not run; scripts/test.sh skips `_*.sh`).
# The sourcing script sets NAME (log prefix, file names) before sourcing; RUN_DIR holds pid/env/log files.

RUN_DIR="${PLANGUARD_SERVICES_RUN:-/tmp/planguard-services}"
PID_FILE="$RUN_DIR/$NAME.pid"
ENV_FILE="$RUN_DIR/$NAME.env"
LOG_FILE="$RUN_DIR/$NAME.log"
WORKDIR_FILE="$RUN_DIR/$NAME.workdir"

log() { echo "$NAME.sh: $*" >&2; }

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

apt_install() {  # apt_install PACKAGE...: Debian packages, quietly (CI machines start without them)
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends "$@" >&2
}

running() {
    [ -f "$PID_FILE" ] && kill -0 "$(cat "$PID_FILE")" 2>/dev/null
}

new_workdir() {  # a fresh temporary working dir, remembered so `stop` removes it
    local wd
    wd="$(mktemp -d "${TMPDIR:-/tmp}/planguard-$NAME.XXXXXX")"
    echo "$wd" > "$WORKDIR_FILE"
    echo "$wd"
}

wait_http() {  # wait_http URL TIMEOUT_S: poll until URL answers 200; on failure show the log and stop
    local url="$1" timeout="$2" deadline=$((SECONDS + $2)) t0=$SECONDS
    until python3 - "$url" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
    do
        if ! running; then
            log "exited during start-up; last log lines:"; tail -n 30 "$LOG_FILE" >&2; return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log "$url not ready after ${timeout}s; last log lines:"; tail -n 30 "$LOG_FILE" >&2
            cmd_stop; return 1
        fi
        sleep 0.5
    done
    log "ready in $((SECONDS - t0))s (pid $(cat "$PID_FILE"))"
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
        case "$wd" in */planguard-"$NAME".*) rm -rf "$wd" ;; esac
    fi
    rm -f "$PID_FILE" "$ENV_FILE" "$WORKDIR_FILE"
}

cmd_status() {
    if running; then print_env 2>/dev/null || true; log "running (pid $(cat "$PID_FILE"))"; else log "not running"; return 1; fi
}

dispatch() {  # dispatch "$@": the scripts' common command line
    case "${1:-}" in
        install) cmd_install ;;
        start)
            mkdir -p "$RUN_DIR"
            if running && [ -f "$ENV_FILE" ]; then
                log "already running (pid $(cat "$PID_FILE"))"
                print_env
            else
                cmd_start
            fi
            ;;
        stop) cmd_stop ;;
        status) cmd_status ;;
        *) echo "usage: $0 {install|start|stop|status}" >&2; exit 2 ;;
    esac
}
