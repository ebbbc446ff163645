#!/usr/bin/env bash
# CI's second pass: the suite against the lowest versions the manifests allow. uv (installed into .venv by
# scripts/bootstrap.sh) resolves every direct requirement of the core and the integrations to its lower bound
# (`--resolution lowest-direct`; transitive ones stay newest) in .venv-lowest, and pytest runs there: every
# core and integration test (the integrations' end-to-end runs included) except tests/e2e, which need the
# backends scripts/test.sh starts, and the wheel-install test, which checks packaging, not versions (the
# normal pass runs it). A red run means a lower bound in a pyproject.toml is a version the code does not
# work with: raise it.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"

LOWEST="$ROOT/.venv-lowest"
uv venv -q --allow-existing --python "$ROOT/.venv/bin/python" "$LOWEST"
requirements=(-e "$ROOT[dev,otlp,prometheus,experiment]")
for pkg in "$ROOT"/integrations/*/; do
  [ -f "$pkg/pyproject.toml" ] && requirements+=(-e "$pkg[test]")
done
VIRTUAL_ENV="$LOWEST" uv pip install -q --resolution lowest-direct "${requirements[@]}"
echo "lowest.sh: direct requirements at their lower bounds:" >&2
VIRTUAL_ENV="$LOWEST" uv pip list 2>/dev/null | grep -iE '^(pydantic|opentelemetry-(api|sdk)|httpx|pyyaml|rich|orjson|langchain|langchain-core|langgraph|langgraph-prebuilt|openai-agents|mini-swe-agent|uvicorn|httptools|uvloop|numpy) ' >&2 || true

# The tests skip an integration whose import fails; here that would hide a bad lower bound, so import each.
"$LOWEST/bin/python" -c "import langchain.agents, planguard_langchain, planguard_proxy, planguard_openai_agents, \
planguard_mini_swe_agent, planguard_claude_code, planguard_claude_code.sdk"

set +e
"$LOWEST/bin/python" -m pytest --ignore=tests/e2e --ignore=tests/test_wheel_install.py -p no:randomly "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "lowest.sh: pytest collected no tests — failing on purpose" >&2
  exit 1
fi
exit "$status"
