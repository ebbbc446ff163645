#!/usr/bin/env bash
# The whole test suite on a fresh machine: installs what it needs, starts the real backends on 127.0.0.1
# (Arize Phoenix, Prometheus), runs pytest, stops the backends.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"

SERVICES_ENV="$(mktemp)"
cleanup() {
  for svc in "$ROOT"/.ci/services/[!_]*.sh; do
    [ -f "$svc" ] && bash "$svc" stop >/dev/null 2>&1 || true
  done
  rm -f "$SERVICES_ENV"
}
trap cleanup EXIT
if [ "${PLANGUARD_SKIP_SERVICES:-0}" != "1" ]; then
  for svc in "$ROOT"/.ci/services/[!_]*.sh; do
    [ -f "$svc" ] || continue
    bash "$svc" start >>"$SERVICES_ENV"
  done
  set -a; source "$SERVICES_ENV"; set +a
fi

if [ "${PLANGUARD_SKIP_LINT:-0}" != "1" ]; then
  # Static checks first: they take seconds and a red lint must fail the run like a red test.
  ruff check .
  ruff format --check .
  mypy
  mypy --strict integrations/*/src/* integrations/proxy/planguard_proxy
fi

set +e
python -m pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests — failing on purpose" >&2
  exit 1
fi
exit "$status"
