#!/usr/bin/env bash
# Starts (or stops) baton's private test servers on loopback ports and
# prints the environment the tests read. Sourced by scripts/test.sh; usable
# by hand:  eval "$(scripts/servers.sh start)"   …   scripts/servers.sh stop
# `start SET…` starts only the sets named (zk, etcd, redis,
# redis_private_set, postgres, mariadb, cluster_set, kube, kube_fault,
# tls, zkensemble); `start --except SET…` starts every set but those named
# (scripts/test.sh starts kube and kube_fault on their own once their
# server is built).
#
# ZooKeeper runs privately with a short tickTime (sessions can expire in
# about 2 s), maxClientCnxns=0 (hundreds of test sessions from one host)
# and every 4lw command whitelisted (mntr counts requests per handoff).
# Every server is private: started by this script, in the state directory
# $BATON_SERVERS_DIR, and reused by a later start only when that
# directory's pid file says it is its own (see claim); a port held by
# anything else fails the start instead of being adopted.
set -euo pipefail

STATE=${BATON_SERVERS_DIR:-${TMPDIR:-/tmp}/baton-servers}
ZK_PORT=${BATON_ZK_PORT:-21810}
ETCD_PORT=${BATON_ETCD_PORT:-23790} # clients; peers on ETCD_PORT+1
REDIS_PORT=${BATON_REDIS_PORT:-16379}
PG_PORT=15432
MY_PORT=13306

. "$(dirname "$0")/servers-lib.sh"

start_zk() {
  mkdir -p "$STATE/zk/data"
  echo "export BATON_TEST_ZK=127.0.0.1:$ZK_PORT"
  claim zookeeper "$ZK_PORT" "$STATE/zk/pid" && return 0
  cat >"$STATE/zk/zoo.cfg" <<CFG
tickTime=200
initLimit=10
syncLimit=5
dataDir=$STATE/zk/data
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=400
maxSessionTimeout=60000
4lw.commands.whitelist=*
admin.enableServer=false
CFG
  nohup java -Xmx512m -Dzookeeper.admin.enableServer=false -Dznode.container.checkIntervalMs=500 -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$(zk_classpath)" org.apache.zookeeper.server.ZooKeeperServerMain "$STATE/zk/zoo.cfg" \
    >"$STATE/zk/zk.log" 2>&1 &
  echo $! >"$STATE/zk/pid"
  wait_port "$ZK_PORT" >&2
}

start_redis() {
  start_private_redis "$REDIS_PORT" --save "" --appendonly no
  echo "export BATON_TEST_REDIS=127.0.0.1:$REDIS_PORT"
}

# Private redis-servers for the Redis engine's tests, always our own (tests
# reconfigure and kill them): five independent Redlock nodes persisting
# every write (appendfsync always: Redlock's quorum token assumes counters
# are never rewound), a primary and a replica the tests wire together (the
# replica's link goes through their fault proxy), and a one-node Redis
# Cluster owning every slot (scripts see Cluster's cross-slot rules).
#
# The Redlock nodes keep their append-only files in memory (/dev/shm where
# it exists): a fsync there costs nothing, so a disk busy with the other
# tests' servers cannot stall all five nodes at once for seconds, while a
# killed node still restarts from its file, which is the failure the
# setting guards against.
REDLOCK_PORTS="16381 16382 16383 16384 16385"
# Each state directory has its own directory there, named by a checksum
# of its path, so that stopping one set of servers never deletes the
# files of another's (two state directories run side by side: a
# developer's and a helper's or CI's).
AOF_STATE=$STATE
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  AOF_STATE=/dev/shm/baton-servers-$(id -u)/$(printf %s "$STATE" | cksum | cut -d' ' -f1)
fi
start_private_redis() { # PORT ARGS… (REDIS_DIR= overrides the data directory)
  local port=$1 dir=${REDIS_DIR:-$STATE/redis-$1}; shift
  mkdir -p "$STATE/redis-$port" "$dir"
  claim "redis-server $port" "$port" "$STATE/redis-$port/pid" && return 0
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" \
    --pidfile "$STATE/redis-$port/pid" --logfile "$STATE/redis-$port/log" "$@" >&2
  wait_port "$port" >&2
}

start_redis_private_set() {
  local p
  for p in $REDLOCK_PORTS; do
    REDIS_DIR="$AOF_STATE/redis-$p" start_private_redis "$p" --save "" --appendonly yes --appendfsync always
  done
  start_private_redis 16390 --save "" --appendonly no
  start_private_redis 16391 --save "" --appendonly no
  start_private_redis 16392 --save "" --appendonly no --cluster-enabled yes \
    --cluster-config-file "$STATE/redis-16392/nodes.conf"
  if ! redis-cli -p 16392 cluster info | grep -q 'cluster_state:ok'; then
    redis-cli -p 16392 cluster addslotsrange 0 16383 >/dev/null
    local i
    for i in $(seq 1 50); do
      redis-cli -p 16392 cluster info | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
  fi
  redis-cli -p 16392 cluster info | grep -q 'cluster_state:ok' ||
    { echo "servers.sh: the Redis Cluster on 16392 has no slots" >&2; return 1; }
  echo "export BATON_TEST_REDLOCK=$(echo $REDLOCK_PORTS | sed 's/\([0-9]*\)/127.0.0.1:\1/g; s/ /,/g')"
  echo "export BATON_TEST_REDIS_PRIMARY=127.0.0.1:16390"
  echo "export BATON_TEST_REDIS_REPLICA=127.0.0.1:16391"
  echo "export BATON_TEST_REDIS_CLUSTER=127.0.0.1:16392"
}

# etcd (Debian's etcd-server) runs privately: the etcdlock module's tests
# and the interop tests talk to it; only `baton demo` and the drills embed
# a server of their own, so that no library module requires etcd's server.
start_etcd() {
  local peer=$((ETCD_PORT + 1))
  mkdir -p "$STATE/etcd"
  echo "export BATON_TEST_ETCD=127.0.0.1:$ETCD_PORT"
  claim etcd "$ETCD_PORT" "$STATE/etcd/pid" && return 0
  nohup etcd --name baton-test --data-dir "$STATE/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "baton-test=http://127.0.0.1:$peer" --logger zap --log-level error \
    >"$STATE/etcd/log" 2>&1 &
  echo $! >"$STATE/etcd/pid"
  wait_port "$ETCD_PORT" >&2
}

# PostgreSQL and MariaDB run privately too, with room for the conformance
# suites' and drills' connections (go test runs packages in parallel: the
# default 100 PostgreSQL connections ran out).
start_postgres() {
  local bin
  mkdir -p "$STATE/pg"; chown postgres "$STATE/pg" 2>/dev/null || true
  if ! claim postgres "$PG_PORT" "$STATE/pg/data/postmaster.pid"; then
    bin=$(pg_bin)
    if [ ! -f "$STATE/pg/data/PG_VERSION" ]; then
      runuser -u postgres -- "$bin/initdb" -D "$STATE/pg/data" -A trust -U postgres >/dev/null
    fi
    runuser -u postgres -- "$bin/pg_ctl" -D "$STATE/pg/data" -o "-p $PG_PORT -k $STATE/pg -c listen_addresses=127.0.0.1 -c max_connections=600 -c shared_buffers=64MB -c fsync=off" \
      -l "$STATE/pg/log" start >/dev/null
    wait_port "$PG_PORT" >&2
  fi
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='baton'" | grep -q 1 ||
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE baton" >&2
  echo "export BATON_TEST_POSTGRES='postgres://postgres@127.0.0.1:$PG_PORT/baton?sslmode=disable'"
}

start_mariadb() {
  mkdir -p "$STATE/my"; chown mysql "$STATE/my" 2>/dev/null || true
  if ! claim mariadb "$MY_PORT" "$STATE/my/pid"; then
    if [ ! -d "$STATE/my/data/mysql" ]; then
      mariadb-install-db --user=mysql --datadir="$STATE/my/data" --auth-root-authentication-method=normal >/dev/null
    fi
    nohup mariadbd --user=mysql --datadir="$STATE/my/data" --port="$MY_PORT" --bind-address=127.0.0.1 \
      --socket="$STATE/my/sock" --pid-file="$STATE/my/pid" --max-connections=600 \
      --innodb-flush-log-at-trx-commit=2 --skip-log-bin >"$STATE/my/log" 2>&1 &
    wait_port "$MY_PORT" >&2
  fi
  mariadb -h 127.0.0.1 -P "$MY_PORT" -u root -e "CREATE DATABASE IF NOT EXISTS baton" >&2
  echo "export BATON_TEST_MYSQL='root@tcp(127.0.0.1:$MY_PORT)/baton'"
}

# Extra deployments (clusters, TLS servers) live in scripts/servers.d/*.sh:
# each file defines its functions and appends them to EXTRA_START (each
# prints its export lines on stdout) and EXTRA_STOP.
EXTRA_START=() EXTRA_STOP=()
for f in "$(dirname "$0")"/servers.d/*.sh; do
  [ -f "$f" ] && . "$f"
done

# start_sets starts each set in turn and prints the export lines of those
# that started. A set runs as a job of its own, so that errexit holds in
# it (bash ignores errexit in a function called where its status is
# tested) and one set's failure does not stop the rest from starting; its
# export lines are printed only when it succeeded, so no test is pointed
# at a server that is not there. The start fails when any set did not
# start, naming each.
start_sets() {
  local fn out failed=() sets=("$@")
  out=$(mktemp "$STATE/.exports.XXXXXX")
  for fn in "${sets[@]}"; do
    "$fn" >"$out" &
    if wait $!; then
      cat "$out"
    else
      failed+=("${fn#start_}")
    fi
  done
  rm -f "$out"
  if [ ${#failed[@]} -gt 0 ]; then
    echo "servers.sh: did not start: ${failed[*]} (the messages above say why; logs are under $STATE)" >&2
    return 1
  fi
}

case "${1:-start}" in
start)
  mkdir -p "$STATE"; chmod 755 "$STATE"
  shift || true
  except=false named=()
  [ "${1:-}" = --except ] && except=true && shift
  for name in "$@"; do
    declare -F "start_$name" >/dev/null || { echo "servers.sh: no set named $name" >&2; exit 64; }
    named+=("start_$name")
  done
  sets=("${named[@]}")
  if $except || [ ${#named[@]} -eq 0 ]; then
    sets=()
    for fn in start_zk start_etcd start_redis start_redis_private_set start_postgres start_mariadb "${EXTRA_START[@]}"; do
      [[ " ${named[*]} " == *" $fn "* ]] || sets+=("$fn")
    done
  fi
  start_sets "${sets[@]}"
  ;;
stop)
  for fn in "${EXTRA_STOP[@]}"; do "$fn" || true; done
  for p in "$STATE"/zk/pid "$STATE"/etcd/pid "$STATE"/redis-*/pid "$STATE"/my/pid; do
    stop_pidfile "$p"
  done
  stop_postgres "$STATE/pg/data"
  rm -rf "$STATE/zk/data" "$STATE/etcd/data" "$STATE"/redis-* "$AOF_STATE"/redis-*
  ;;
*)
  echo "usage: $0 start [SET…] | start --except SET… | stop" >&2
  exit 64
  ;;
esac
