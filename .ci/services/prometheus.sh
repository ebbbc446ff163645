#!/usr/bin/env bash
# Prometheus (Debian's package) on 127.0.0.1, scraping the planguard metrics endpoint that a test process
# serves with opentelemetry-exporter-prometheus (planguard.sinks.otel.start_prometheus_exporter).
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
NAME=prometheus
source "$(dirname "${BASH_SOURCE[0]}")/_lib.sh"

cmd_install() {
    if command -v prometheus >/dev/null 2>&1; then
        log "$(prometheus --version 2>&1 | head -n 1)"
        return 0
    fi
    local t0=$SECONDS
    log "installing Debian's prometheus package"
    # The package's service is not started here (no init system in CI); we run the binary ourselves.
    apt_install prometheus
    log "installed in $((SECONDS - t0))s: $(prometheus --version 2>&1 | head -n 1)"
}

cmd_start() {
    cmd_install
    local port target workdir
    port="${PROMETHEUS_PORT:-$(free_port 9090)}"
    target="${PLANGUARD_PROM_EXPORTER_PORT:-$(free_port 9464)}"
    workdir="$(new_workdir)"
    cat > "$workdir/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: planguard
    static_configs:
      - targets: ["127.0.0.1:$target"]
YML
    setsid nohup prometheus \
        --config.file="$workdir/prometheus.yml" \
        --storage.tsdb.path="$workdir/data" \
        --web.listen-address="127.0.0.1:$port" \
        --log.level=warn \
        >"$LOG_FILE" 2>&1 < /dev/null &
    echo $! > "$PID_FILE"
    local url="http://127.0.0.1:$port"
    wait_http "$url/-/ready" "${PROMETHEUS_START_TIMEOUT:-60}"
    log "up at $url, scraping 127.0.0.1:$target"
    printf 'PROMETHEUS_URL=%s\nPLANGUARD_PROM_EXPORTER_PORT=%s\nPROMETHEUS_PID=%s\n' \
        "$url" "$target" "$(cat "$PID_FILE")" > "$ENV_FILE"
    print_env
}

dispatch "$@"
