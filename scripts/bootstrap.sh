#!/usr/bin/env bash
# Create .venv (if missing) and install planguard with the extras the tests and demo use.
# Sourced by scripts/demo.sh and scripts/test.sh; idempotent and quiet when already installed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
VENV_PY="$ROOT/.venv/bin/python"
stamp="$ROOT/.venv/.planguard-installed"
# Reinstall when a manifest changed since the last install.
if [ ! -f "$stamp" ] || [ -n "$(find "$ROOT/pyproject.toml" "$ROOT"/integrations/*/pyproject.toml -newer "$stamp" 2>/dev/null)" ]; then
  "$VENV_PY" -m pip install -q --disable-pip-version-check --upgrade pip
  "$VENV_PY" -m pip install -q --disable-pip-version-check -e "$ROOT[dev,otlp,otlp-grpc,prometheus,experiment]"
  for pkg in "$ROOT"/integrations/*/; do
    [ -f "$pkg/pyproject.toml" ] && "$VENV_PY" -m pip install -q --disable-pip-version-check -e "$pkg[test]"
  done
  # The integrations depend on planguard by path, which pip installs as a copy; put the editable core back.
  "$VENV_PY" -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT"
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
