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
  # One resolution for the core and every integration, all editable: each integration requires
  # planguard-agents>=X.Y, which the editable core satisfies, so pip keeps it (edits to the checkout are live).
  editables=(-e "$ROOT[dev,otlp,otlp-grpc,prometheus,experiment]")
  for pkg in "$ROOT"/integrations/*/; do
    [ -f "$pkg/pyproject.toml" ] && editables+=(-e "$pkg[test]")
  done
  "$VENV_PY" -m pip install -q --disable-pip-version-check "${editables[@]}"
  touch "$stamp"
fi
export PATH="$ROOT/.venv/bin:$PATH"
