#!/usr/bin/env bash
# Long randomized fault drills: every fault scenario with 50 seeded trials
# per cell (CI runs a few). Histories of failing trials are kept and their
# paths printed. Usage: scripts/drill.sh [go test flags…]
set -euo pipefail
cd "$(dirname "$0")/.."
export BATON_SERVERS_DIR=${BATON_SERVERS_DIR:-$(mktemp -d -t baton-servers.XXXXXX)}
trap 'scripts/servers.sh stop || true' EXIT
eval "$(scripts/servers.sh start)"
export BATON_DRILL_TRIALS=${BATON_DRILL_TRIALS:-50}
go test -race -count=1 -timeout 120m "$@" ./drill/
