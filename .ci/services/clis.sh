#!/usr/bin/env bash
# The coding CLIs the hook e2e tests run (tests/e2e/test_cli_hooks_e2e.py), from npm, pinned:
#   start: npm install --prefix into $PLANGUARD_CLI_PREFIX (default ~/.cache/planguard-clis) unless those
#          versions are there already; prints PLANGUARD_CLI_PREFIX=DIR
#   stop:  nothing (the install is a cache, kept between runs)
# Without npm/node it installs nothing and says so; the tests then skip, naming the reason.
# Only the PLANGUARD_CLI_PREFIX line goes to standard output (the caller evals it).
set -euo pipefail
PREFIX="${PLANGUARD_CLI_PREFIX:-$HOME/.cache/planguard-clis}"
# The versions the dialects were checked against (README: "Hooks for every coding CLI").
PACKAGES=(@openai/codex@0.171.0 @google/gemini-cli@0.61.0 opencode-ai@1.18.33 @anthropic-ai/claude-code@2.1.328)

start() {
  if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "clis.sh: npm/node not found: the coding-CLI e2e tests will skip" >&2
    return 0
  fi
  local stamp="$PREFIX/.planguard-clis"
  if [ "$(cat "$stamp" 2>/dev/null)" != "${PACKAGES[*]}" ]; then
    echo "clis.sh: npm install --prefix $PREFIX ${PACKAGES[*]}" >&2
    mkdir -p "$PREFIX"
    npm install --prefix "$PREFIX" --no-audit --no-fund --loglevel=error "${PACKAGES[@]}" >&2
    echo "${PACKAGES[*]}" >"$stamp"
  fi
  echo "PLANGUARD_CLI_PREFIX=$PREFIX"
}

stop() { :; }

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
