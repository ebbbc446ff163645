#!/usr/bin/env bash
# Prometheus (Debian's package) on 127.0.0.1, scraping the planguard metrics endpoint that a test process
# serves with opentelemetry-exporter-prometheus (planguard.telemetry.start_prometheus_exporter).
#
#   bash .ci/services/prometheus.sh install   # apt-get install prometheus (idempotent)
#   bash .ci/services/prometheus.sh start     # prints `export PROMETHEUS_URL=... PLANGUARD_PROM_EXPORTER_PORT=...`
#   bash .ci/services/prometheus.sh stop
#   bash .ci/services/prometheus.sh status
#
# The scrape target is 127.0.0.1:$PLANGUARD_PROM_EXPORTER_PORT (default: 9464 when free), every second.
# Knobs: PROMETHEUS_PORT (default: 9090 when free), PLANGUARD_SERVICES_RUN (pid/env/log files),
# PROMETHEUS_START_TIMEOUT (seconds, default 60).
set -euo pipefail

RUN_DIR="${PLANGUARD_SERVICES_RUN:-/tmp/planguard-services}"
PID_FILE="$RUN_DIR/prometheus.pid"
ENV_FILE="$RUN_DIR/prometheus.env"
LOG_FILE="$RUN_DIR/prometheus.log"
WORKDIR_FILE="$RUN_DIR/prometheus.workdir"

log() { echo "prometheus.sh: $*" >&2; }

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

cmd_install() {
    if command -v prometheus >/dev/null 2>&1; then
        log "$(prometheus --version 2>&1 | head -n 1)"
        return 0
    fi
    local t0=$SECONDS
    log "installing Debian's prometheus package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    # The package's service is not started here (no init system in CI); we run the binary ourselves.
    apt-get install -y -q --no-install-recommends prometheus >&2
    log "installed in $((SECONDS - t0))s: $(prometheus --version 2>&1 | head -n 1)"
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
    local port target workdir
    port="${PROMETHEUS_PORT:-$(free_port 9090)}"
    target="${PLANGUARD_PROM_EXPORTER_PORT:-$(free_port 9464)}"
    workdir="$(mktemp -d "${TMPDIR:-/tmp}/planguard-prometheus.XXXXXX")"
    echo "$workdir" > "$WORKDIR_FILE"
    cat > "$workdir/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: planguard
    static_configs:
      - targets: ["127.0.0.1:$target"]
EOF
    setsid nohup prometheus \
        --config.file="$workdir/prometheus.yml" \
        --storage.tsdb.path="$workdir/data" \
        --web.listen-address="127.0.0.1:$port" \
        --log.level=warn \
        >"$LOG_FILE" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
    local url="http://127.0.0.1:$port" deadline=$((SECONDS + ${PROMETHEUS_START_TIMEOUT:-60})) t0=$SECONDS
    until python3 - "$url/-/ready" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
    do
        if ! running; then
            log "exited during start-up; last log lines:"; tail -n 30 "$LOG_FILE" >&2; return 1
        fi
        if [ $SECONDS -ge $deadline ]; then
            log "not ready after ${PROMETHEUS_START_TIMEOUT:-60}s; last log lines:"; tail -n 30 "$LOG_FILE" >&2
            cmd_stop; return 1
        fi
        sleep 0.5
    done
    log "up at $url in $((SECONDS - t0))s (pid $(cat "$PID_FILE")), scraping 127.0.0.1:$target"
    printf 'PROMETHEUS_URL=%s\nPLANGUARD_PROM_EXPORTER_PORT=%s\nPROMETHEUS_PID=%s\n' \
        "$url" "$target" "$(cat "$PID_FILE")" > "$ENV_FILE"
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
        case "$wd" in */planguard-prometheus.*) rm -rf "$wd" ;; esac
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
