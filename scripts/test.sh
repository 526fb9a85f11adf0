#!/usr/bin/env bash
# The README's test command: sets up a fresh Debian 12 machine and passes the
# tests against real servers.
#   1. installs the Debian packages that are missing (apt-get),
#   2. starts private servers on loopback ports (scripts/servers.sh); the
#      kube set's server is built from source (scripts/kube-build.sh) in
#      the background meanwhile,
#   3. runs go vet and go test -race in every module of go.work, and in
#      the tool module scripts/kubeapiserver (outside go.work),
#   4. checks what `go get` of one engine puts into a user's module graph
#      (scripts/modcheck.sh),
#   5. stops what it started.
# Long randomized fault drills (50+ trials per cell) are scripts/drill.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

# Every Debian package a script or test runs something from. A command the
# scripts call must come from one of these, from one they depend on, or
# from Debian's base system: scripts/scriptcheck (run below) proves it on
# any machine, so a package installed here by hand cannot hide a missing
# entry until a fresh machine fails. What runs from each:
#   zookeeper, default-jdk-headless, libcurator-recipes-java: ZooKeeper
#     servers and ensembles, java for them and the Curator interop;
#   etcd-server, etcd-client: etcd single, cluster, TLS, the store of the
#     kube set, and etcdctl;
#   redis-server, redis-sentinel: Redis primary, replica, Cluster, Redlock
#     nodes, TLS, and Sentinel;
#   postgresql, mariadb-server: initdb, pg_ctl, psql and the MariaDB server;
#   chromium: the browser tests of the exporter page and the drill report;
#   openssl, procps: certificates of the TLS deployments, and ps.
# The names are written out on the apt-get install command, a line of its
# own at the top level that starts "apt-get install", where any reader of
# the script (a person, a shell parser, a checker that reads a line at a
# time or runs the script) finds them. scripts/scriptcheck fails when the
# install commands name different packages.
#
# The package lists are updated first, at the top level too: a fresh
# machine's lists are empty, and an install before the update fails
# there. Both run with errexit off and their output on stderr (the exec
# around them). Without root both fail, and the script goes on only if
# every package is installed already.
export DEBIAN_FRONTEND=noninteractive
exec 3>&1 1>&2
set +e
apt-get update -qq
apt-get install -y -qq --no-install-recommends zookeeper default-jdk-headless libcurator-recipes-java etcd-server etcd-client redis-server redis-sentinel postgresql mariadb-server chromium openssl procps
installed=$?
set -e
if [ "$installed" -ne 0 ]; then
  dpkg-query -W zookeeper default-jdk-headless libcurator-recipes-java etcd-server etcd-client redis-server redis-sentinel postgresql mariadb-server chromium openssl procps >/dev/null
fi
exec 1>&3 3>&-
if ! command -v go >/dev/null 2>&1; then
  [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin
fi
command -v go >/dev/null 2>&1 || { echo "test.sh: Go 1.26 is required (https://go.dev/dl)" >&2; exit 69; }

# The kube set needs kube-apiserver, which a fresh machine builds from
# source: minutes of CPU that must not come before everything else. So
# the build starts first, in the background (niced), and the kube set
# (with kube_fault, the fault drills' private deployment) starts as soon
# as it is done, beside the other sets and the tests; the
# modules whose tests need it (kube_modules) run last in their lane,
# waiting for it. The job runs in a session of its own, so that an early
# exit ends it, the build's compilers and all. Its status lands in
# $logs/kube.rc, its export lines in $logs/kube.env.
export BATON_SERVERS_DIR=${BATON_SERVERS_DIR:-$(mktemp -d -t baton-servers.XXXXXX)}
logs=$(mktemp -d -t baton-lanes.XXXXXX)
setsid bash -c 'scripts/kube-build.sh >/dev/null && scripts/servers.sh start kube kube_fault; echo $? >"$1/kube.rc.tmp"; mv "$1/kube.rc.tmp" "$1/kube.rc"' \
  - "$logs" >"$logs/kube.env" 2>"$logs/kube.log" </dev/null &
kube=$!
# On exit a job still running is ended whole: its session is its process
# group; a finished one's servers are stopped like the rest.
trap 'if kill -0 $kube 2>/dev/null; then kill -- -$kube || true; wait $kube || true; fi; scripts/servers.sh stop || true; rm -rf "$logs"' EXIT

echo "== scripts: every command from a package above" >&2
(cd scripts/scriptcheck && go run . -root ../..) || exit 69

# The servers. A set that does not start fails the run under CI=true,
# where every test must run; by hand the tests that need it skip.
if ! servers=$(scripts/servers.sh start --except kube kube_fault); then
  if [ "${CI:-}" = true ]; then
    echo "test.sh: a server set did not start (see above): under CI=true every test must run" >&2
    exit 69
  fi
  echo "test.sh: going on without the sets that did not start: their tests skip" >&2
fi
eval "$servers"

# The modules, as go.work lists them; every one runs in the workspace.
# The tool modules outside it (scripts/kubeapiserver's doc comment says
# why) run on their own, with GOWORK=off, vetted in their lane.
mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
[ ${#modules[@]} -gt 0 ] || { echo "test.sh: no modules in go.work" >&2; exit 70; }
tools=(./scripts/kubeapiserver)
# The modules whose tests need the kube set (a Kubernetes API server):
# the Lease engine's, those that run every engine (the conformance
# runner in testkit, examples/anyengine), bench (kubelock beside
# client-go's leaderelection) and cmd/baton (the CLI on k8s://).
kube_modules=(./kubelock ./scripts/kubeapiserver ./testkit ./examples ./bench ./cmd/baton)
gowork() { # MOD: the GOWORK to run MOD's go commands with
  local t
  for t in "${tools[@]}"; do [ "$1" = "$t" ] && echo off && return; done
  echo "${GOWORK:-}"
}

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
    if needs_kube "$mod"; then await_kube; fi
    if [ "$(gowork "$mod")" = off ]; then # a tool module: not vetted above
      echo "== $mod: go vet"
      (cd "$mod" && GOWORK=off go vet ./...) || rc=1
    fi
    echo "== $mod: go test -race -p $p"
    (cd "$mod" && GOWORK=$(gowork "$mod") go test -race -p "$p" -count=1 -timeout 15m ./...) || rc=1
    if [ "$mod" = ./bench ] || [ "$mod" = bench ]; then
      # Allocation counts mean nothing under -race (it turns sync.Pool
      # off): the allocation guards run once more without it.
      echo "== bench: allocation guard without -race"
      (cd "$mod" && go test -count=1 -run 'TestAllocGuard' .) || rc=1
    fi
    if [ "$mod" = . ]; then
      # The root module's allocation tests, likewise.
      echo "== .: allocation tests without -race"
      go test -count=1 -run 'TestMutexAllocs|TestMutexCreateAllocs|TestHubJoinAllocs' ./redislock ./sqllock || rc=1
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
# await_kube waits for the kube set (40 minutes at most: a build that
# hangs must not eat CI's time) and exports its environment, once per
# lane; a module whose tests need the set calls it first.
await_kube() {
  local waited=0
  [ -z "${kube_ready:-}" ] || return 0
  kube_ready=1
  while [ ! -f "$logs/kube.rc" ] && [ $waited -lt 2400 ]; do sleep 1 && waited=$((waited + 1)); done
  # The export lines are those of the sets that started: kube's tests
  # still run when only kube_fault failed.
  eval "$(cat "$logs/kube.env" 2>/dev/null)"
  if [ "$(cat "$logs/kube.rc" 2>/dev/null)" != 0 ]; then
    echo "== kube: a set did not start (its log is printed below): its tests fail under CI=true, skip by hand"
  fi
}
needs_kube() { case " ${kube_modules[*]} " in *" $1 "*) return 0 ;; esac; return 1; }
# Each lane runs its modules that need the kube set last, so that the
# build has the most time to end before anything waits for it.
laneA=() laneB=() lastA=() lastB=()
for mod in "${modules[@]}" "${tools[@]}"; do
  case "$mod" in
  ./drill | drill | ./cmd/baton | cmd/baton) if needs_kube "$mod"; then lastB+=("$mod"); else laneB+=("$mod"); fi ;;
  *) if needs_kube "$mod"; then lastA+=("$mod"); else laneA+=("$mod"); fi ;;
  esac
done
laneA+=("${lastA[@]}") laneB+=("${lastB[@]}")
lane 1 "${laneA[@]}" >"$logs/a" 2>&1 &
pidA=$!
lane 2 "${laneB[@]}" >"$logs/b" 2>&1 &
pidB=$!
wait $pidA || status=1
cat "$logs/a" >&2
wait $pidB || status=1
cat "$logs/b" >&2
echo "== kube set: build and start" >&2
cat "$logs/kube.log" >&2
echo "== module graphs" >&2
scripts/modcheck.sh || status=1
if [ "$(cat "$logs/kube.rc" 2>/dev/null)" != 0 ] && [ "${CI:-}" = true ]; then
  echo "test.sh: the kube set did not build or start (see above): under CI=true every test must run" >&2
  exit 69
fi
exit $status
