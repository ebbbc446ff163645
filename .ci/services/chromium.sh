#!/usr/bin/env bash
# Headless Chromium for the report's browser test (tests/e2e/test_report_browser.py): Debian's chromium.
#   start: installs chromium with apt-get if no binary is found, prints `export CHROMIUM_BIN=PATH`
#   stop:  nothing (no daemon: the test starts and ends its own browser per run)
# Only the export line goes to standard output (the caller evals it); everything else to standard error.
# Idempotent and fast when chromium is already installed: no apt-get call at all then.
set -euo pipefail

find_chromium() {
  local candidate
  for candidate in "${CHROMIUM_BIN:-}" /usr/bin/chromium chromium chromium-browser; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

start() {
  local bin
  if ! bin="$(find_chromium)"; then
    echo "chromium.sh: installing chromium (apt-get)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq chromium >&2
    bin="$(find_chromium)" || { echo "chromium.sh: chromium still not found after install" >&2; return 1; }
  fi
  echo "export CHROMIUM_BIN=$bin"
}

stop() {
  :
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
