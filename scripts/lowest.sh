#!/usr/bin/env bash
# CI's second pass: the suite against the lowest versions the manifests allow. uv (installed into .venv by
# scripts/bootstrap.sh) resolves every direct requirement of the core and the integrations to its lower bound
# (`--resolution lowest-direct`; transitive ones stay newest) in .venv-lowest, and pytest runs there: every
# core and integration test (the integrations' end-to-end runs included) except tests/e2e, which need the
# backends scripts/test.sh starts, and the wheel-install test, which checks packaging, not versions (the
# normal pass runs it). A red run means a lower bound in a pyproject.toml is a version the code does not
# work with: raise it.
#
# Two steps, because the Prometheus extra's lowest exporter needs a newer opentelemetry-sdk than the core's
# lower bound: first everything without that extra (the core at its lowest OpenTelemetry), then the extra
# added at its lower bound and the telemetry tests again.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"

LOWEST="$ROOT/.venv-lowest"
uv venv -q --allow-existing --python "$ROOT/.venv/bin/python" "$LOWEST"

install_lowest() {  # $1: the core's extras
  local requirements=(-e "$ROOT[$1]")
  for pkg in "$ROOT"/integrations/*/; do
    [ -f "$pkg/pyproject.toml" ] && requirements+=(-e "$pkg[test]")
  done
  VIRTUAL_ENV="$LOWEST" uv pip install -q --resolution lowest-direct "${requirements[@]}"
  echo "lowest.sh: direct requirements at their lower bounds:" >&2
  VIRTUAL_ENV="$LOWEST" uv pip list 2>/dev/null | grep -iE '^(pydantic|opentelemetry-(api|sdk|exporter-prometheus)|httpx|pyyaml|rich|orjson|langchain|langchain-core|langgraph|openai-agents|mini-swe-agent|uvicorn|httptools|uvloop|numpy|redis) ' >&2 || true
}

run_pytest() {
  set +e
  "$LOWEST/bin/python" -m pytest -p no:randomly "$@"
  local status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "lowest.sh: pytest collected no tests — failing on purpose" >&2
    return 1
  fi
  return "$status"
}

install_lowest "dev,otlp,experiment"
# The tests skip an integration whose import fails; here that would hide a bad lower bound, so import each.
"$LOWEST/bin/python" -c "import langchain.agents, planguard_langchain, planguard_proxy, planguard_openai_agents, \
planguard_mini_swe_agent, planguard_hooks, planguard_hooks.sdk, planguard_claude_code"
run_pytest --ignore=tests/e2e --ignore=tests/integrations/test_wheel_install.py \
  --ignore=tests/unit/sinks/test_telemetry_build.py --ignore=tests/unit/sinks/test_telemetry_export.py \
  --ignore=tests/unit/sinks/test_grafana_dashboard.py "$@"

install_lowest "dev,otlp,prometheus,experiment"
run_pytest tests/unit/sinks/test_telemetry_*.py tests/unit/sinks/test_grafana_dashboard.py "$@"
