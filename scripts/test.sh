#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine and passes the
# tests against real servers.
#   1. installs the Debian packages that are missing (apt-get),
#   2. starts private servers on loopback ports (scripts/servers.sh),
#   3. runs go vet and go test -race in every module of go.work,
#   4. checks what `go get` of one engine puts into a user's module graph
#      (scripts/modcheck.sh),
#   5. stops what it started.
# Long randomized fault drills (50+ trials per cell) are scripts/drill.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Debian package a script or test runs something from: ZooKeeper
# and the Curator interop (zookeeper, the JDK, libcurator-recipes-java),
# etcd, Redis and its Sentinels, PostgreSQL, MariaDB, chromium (the
# exporter page's and the drill report's browser tests), openssl (the TLS
# deployments' certificates), procps (ps: whether a server's pid still
# runs). A command the scripts call must come from one of these, from one
# they depend on, or from Debian's base system: scripts/scriptcheck (run
# below) proves it on any machine, so a package installed here by hand
# cannot hide a missing entry until a fresh machine fails.
packages=(zookeeper default-jdk-headless libcurator-recipes-java etcd-server etcd-client redis-server redis-sentinel postgresql mariadb-server chromium openssl procps)
need=()
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
for pkg in "${packages[@]}"; do
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

echo "== scripts: every command from a package above" >&2
(cd scripts/scriptcheck && go run . -root ../..) || exit 69

# The servers. A set that does not start fails the run under CI=true,
# where every test must run; by hand the tests that need it skip.
export BATON_SERVERS_DIR=${BATON_SERVERS_DIR:-$(mktemp -d -t baton-servers.XXXXXX)}
trap 'scripts/servers.sh stop || true' EXIT
if ! servers=$(scripts/servers.sh start); then
  if [ "${CI:-}" = true ]; then
    echo "test.sh: a server set did not start (see above): under CI=true every test must run" >&2
    exit 69
  fi
  echo "test.sh: going on without the sets that did not start: their tests skip" >&2
fi
eval "$servers"

# The modules, as go.work lists them; every one runs in the workspace.
mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
[ ${#modules[@]} -gt 0 ] || { echo "test.sh: no modules in go.work" >&2; exit 70; }

status=0
for mod in "${modules[@]}"; do
  echo "== $mod: go vet" >&2
  (cd "$mod" && go vet ./...) || status=1
done

# The tests run in two lanes at once: most of their time is spent waiting
# out TTLs and sessions, not computing, and one lane alone would take past
# the CI budget. The fault drills and baton drill's own (drill, cmd/baton)
# share one lane, so the two most timing-sensitive modules never run at
# once; every other module runs in the other, one package at a time (-p 1):
# it still ends before the drill lane, and two test binaries at once on two
# cores leave the servers room (Redlock's 50-client conformance run timed
# out on its nodes beside two other binaries). A lane's output is printed
# whole when the lane ends, so the logs do not interleave. The first
# argument is the lane's -p.
lane() {
  local p=$1 mod rc=0
  shift
  for mod in "$@"; do
    echo "== $mod: go test -race -p $p"
    (cd "$mod" && go test -race -p "$p" -count=1 -timeout 15m ./...) || rc=1
    if [ "$mod" = ./bench ] || [ "$mod" = bench ]; then
      # Allocation counts mean nothing under -race (it turns sync.Pool
      # off): the allocation guards run once more without it.
      echo "== bench: allocation guard without -race"
      (cd "$mod" && go test -count=1 -run 'TestAllocGuard' .) || rc=1
    fi
    if [ "$mod" = ./drill ] || [ "$mod" = drill ]; then
      # go-zookeeper v1.0.4 races with itself when a session with
      # watches moves to another member (go-zookeeper/zk#35): under -race
      # the ZooKeeper leader failover rows skip, so they run once more
      # without it.
      echo "== drill: ZooKeeper leader failover without -race"
      (cd "$mod" && go test -count=1 -timeout 10m -run 'TestFailoverZK' .) || rc=1
    fi
  done
  return $rc
}
laneA=() laneB=()
for mod in "${modules[@]}"; do
  case "$mod" in
  ./drill | drill | ./cmd/baton | cmd/baton) laneB+=("$mod") ;;
  *) laneA+=("$mod") ;;
  esac
done
logs=$(mktemp -d -t baton-lanes.XXXXXX)
lane 1 "${laneA[@]}" >"$logs/a" 2>&1 &
pidA=$!
lane 2 "${laneB[@]}" >"$logs/b" 2>&1 &
pidB=$!
wait $pidA || status=1
cat "$logs/a" >&2
wait $pidB || status=1
cat "$logs/b" >&2
rm -rf "$logs"
echo "== module graphs" >&2
scripts/modcheck.sh || status=1
exit $status
