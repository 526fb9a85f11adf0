#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine and passes the
# tests against real servers.
#   1. installs the Debian packages that are missing (apt-get),
#   2. starts private servers on loopback ports (scripts/servers.sh),
#   3. runs go vet and go test -race in every module,
#   4. stops what it started.
# Long randomized fault drills (50+ trials per cell) are scripts/drill.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in zookeeper default-jdk-headless libcurator-recipes-java etcd-client redis-server \
  postgresql mariadb-server; do
  have "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "test.sh: installing ${need[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
if ! command -v go >/dev/null 2>&1; then
  [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin
fi
command -v go >/dev/null 2>&1 || { echo "test.sh: Go 1.26 is required (https://go.dev/dl)" >&2; exit 69; }

export BATON_SERVERS_DIR=${BATON_SERVERS_DIR:-$(mktemp -d -t baton-servers.XXXXXX)}
trap 'scripts/servers.sh stop || true' EXIT
eval "$(scripts/servers.sh start)"

status=0
for mod in . bench; do
  [ -f "$mod/go.mod" ] || continue
  echo "== $mod: go vet" >&2
  (cd "$mod" && go vet ./...) || status=1
  echo "== $mod: go test -race" >&2
  (cd "$mod" && go test -race -count=1 -timeout 15m ./...) || status=1
done
exit $status
