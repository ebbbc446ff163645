#!/usr/bin/env bash
# The main job: a monitored coding-agent run with no API key and no network; telemetry goes to the local
# store under .planguard/ (see README).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/bootstrap.sh"
cd "$ROOT"
exec planguard demo "$@"
