#!/usr/bin/env bash
# Starts (or stops) baton's private test servers on loopback ports and
# prints the environment the tests read. Sourced by scripts/test.sh; usable
# by hand:  eval "$(scripts/servers.sh start)"   …   scripts/servers.sh stop
#
# ZooKeeper runs privately with a short tickTime (sessions can expire in
# about 2 s), maxClientCnxns=0 (hundreds of test sessions from one host)
# and every 4lw command whitelisted (mntr counts requests per handoff).
# Redis on 6379 is used where the machine already runs it, else started
# privately; every other server is private.
set -euo pipefail

STATE=${BATON_SERVERS_DIR:-${TMPDIR:-/tmp}/baton-servers}
ZK_PORT=${BATON_ZK_PORT:-21810}
ETCD_PORT=${BATON_ETCD_PORT:-23790} # clients; peers on ETCD_PORT+1

zk_classpath() {
  local cp=/etc/zookeeper/conf j
  for j in zookeeper zookeeper-jute netty-handler netty-common netty-buffer netty-transport \
    netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common \
    slf4j-api slf4j-simple commons-cli commons-io metrics-core snappy-java jline; do
    [ -f "/usr/share/java/$j.jar" ] && cp="$cp:/usr/share/java/$j.jar"
  done
  echo "$cp"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# stop_pidfile kills the process in pidfile $1 and waits up to 10 s for it
# to exit, so that its data directory is not removed under it and a start
# right after finds its ports free (an etcd member that lost its peers
# takes a while to shut down).
stop_pidfile() {
  local pid i
  [ -f "$1" ] || return 0
  pid=$(cat "$1")
  rm -f "$1"
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 50); do running "$pid" || return 0; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
}

# running reports whether process $1 exists and has not exited: a process
# whose parent is gone and whose new parent does not reap it stays a
# zombie, which kill -0 still finds.
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

wait_port() {
  local i
  for i in $(seq 1 150); do port_open "$1" && return 0; sleep 0.2; done
  echo "servers.sh: port $1 did not open" >&2
  return 1
}

start_zk() {
  mkdir -p "$STATE/zk/data"
  if port_open "$ZK_PORT"; then return 0; fi
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
  wait_port "$ZK_PORT"
}

start_redis() {
  if port_open 6379; then REDIS_ADDR=127.0.0.1:6379; return 0; fi
  mkdir -p "$STATE/redis"
  redis-server --daemonize yes --bind 127.0.0.1 --port 16379 --save "" --appendonly no \
    --dir "$STATE/redis" --pidfile "$STATE/redis/pid" --logfile "$STATE/redis/log"
  wait_port 16379
  REDIS_ADDR=127.0.0.1:16379
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
AOF_STATE=$STATE
if [ -d /dev/shm ] && [ -w /dev/shm ]; then AOF_STATE=/dev/shm/baton-servers-$(id -u); fi
start_private_redis() { # PORT ARGS… (REDIS_DIR= overrides the data directory)
  local port=$1 dir=${REDIS_DIR:-$STATE/redis-$1}; shift
  mkdir -p "$STATE/redis-$port" "$dir"
  if port_open "$port"; then return 0; fi
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --dir "$dir" \
    --pidfile "$STATE/redis-$port/pid" --logfile "$STATE/redis-$port/log" "$@"
  wait_port "$port"
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
}

# etcd (Debian's etcd-server) runs privately: the etcdlock module's tests
# and the interop tests talk to it; only `baton demo` and the drills embed
# a server of their own, so that no library module requires etcd's server.
start_etcd() {
  if port_open "$ETCD_PORT"; then return 0; fi
  local peer=$((ETCD_PORT + 1))
  mkdir -p "$STATE/etcd"
  nohup etcd --name baton-test --data-dir "$STATE/etcd/data" \
    --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "baton-test=http://127.0.0.1:$peer" --logger zap --log-level error \
    >"$STATE/etcd/log" 2>&1 &
  echo $! >"$STATE/etcd/pid"
  wait_port "$ETCD_PORT"
}

# PostgreSQL and MariaDB run privately too, with room for the conformance
# suites' and drills' connections (go test runs packages in parallel: the
# default 100 PostgreSQL connections ran out).
start_postgres() {
  PG_PORT=15432
  if port_open 15432; then return 0; fi
  local bin; bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  mkdir -p "$STATE/pg"; chown postgres "$STATE/pg" 2>/dev/null || true
  if [ ! -f "$STATE/pg/data/PG_VERSION" ]; then
    runuser -u postgres -- "$bin/initdb" -D "$STATE/pg/data" -A trust -U postgres >/dev/null
  fi
  runuser -u postgres -- "$bin/pg_ctl" -D "$STATE/pg/data" -o "-p 15432 -k $STATE/pg -c listen_addresses=127.0.0.1 -c max_connections=600 -c shared_buffers=64MB -c fsync=off" \
    -l "$STATE/pg/log" start >/dev/null
  wait_port 15432
}

start_mariadb() {
  MY_PORT=13306
  if port_open 13306; then return 0; fi
  mkdir -p "$STATE/my"; chown mysql "$STATE/my" 2>/dev/null || true
  if [ ! -d "$STATE/my/data/mysql" ]; then
    mariadb-install-db --user=mysql --datadir="$STATE/my/data" --auth-root-authentication-method=normal >/dev/null
  fi
  nohup mariadbd --user=mysql --datadir="$STATE/my/data" --port=13306 --bind-address=127.0.0.1 \
    --socket="$STATE/my/sock" --pid-file="$STATE/my/pid" --max-connections=600 \
    --innodb-flush-log-at-trx-commit=2 --skip-log-bin >"$STATE/my/log" 2>&1 &
  wait_port 13306
}

# Extra deployments (clusters, TLS servers) live in scripts/servers.d/*.sh:
# each file defines its functions and appends them to EXTRA_START (each
# prints its export lines on stdout) and EXTRA_STOP.
EXTRA_START=() EXTRA_STOP=()
for f in "$(dirname "$0")"/servers.d/*.sh; do
  [ -f "$f" ] && . "$f"
done

case "${1:-start}" in
start)
  mkdir -p "$STATE"; chmod 755 "$STATE"
  start_zk >&2
  start_etcd >&2
  start_redis >&2
  start_redis_private_set >&2
  start_postgres >&2
  start_mariadb >&2
  psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname='baton'" 2>/dev/null | grep -q 1 ||
    psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -qc "CREATE DATABASE baton" >&2
  mariadb -h 127.0.0.1 -P "$MY_PORT" -u root -e "CREATE DATABASE IF NOT EXISTS baton" >&2
  echo "export BATON_TEST_ZK=127.0.0.1:$ZK_PORT"
  echo "export BATON_TEST_ETCD=127.0.0.1:$ETCD_PORT"
  echo "export BATON_TEST_REDIS=$REDIS_ADDR"
  echo "export BATON_TEST_REDLOCK=$(echo $REDLOCK_PORTS | sed 's/\([0-9]*\)/127.0.0.1:\1/g; s/ /,/g')"
  echo "export BATON_TEST_REDIS_PRIMARY=127.0.0.1:16390"
  echo "export BATON_TEST_REDIS_REPLICA=127.0.0.1:16391"
  echo "export BATON_TEST_REDIS_CLUSTER=127.0.0.1:16392"
  echo "export BATON_TEST_POSTGRES='postgres://postgres@127.0.0.1:$PG_PORT/baton?sslmode=disable'"
  echo "export BATON_TEST_MYSQL='root@tcp(127.0.0.1:$MY_PORT)/baton'"
  for fn in "${EXTRA_START[@]}"; do "$fn"; done
  ;;
stop)
  for fn in "${EXTRA_STOP[@]}"; do "$fn" || true; done
  for p in "$STATE"/zk/pid "$STATE"/etcd/pid "$STATE"/redis/pid "$STATE"/redis-*/pid "$STATE"/my/pid; do
    stop_pidfile "$p"
  done
  if [ -f "$STATE/pg/data/postmaster.pid" ]; then
    bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
    runuser -u postgres -- "$bin/pg_ctl" -D "$STATE/pg/data" stop -m fast >/dev/null 2>&1 || true
  fi
  rm -rf "$STATE/zk/data" "$STATE/etcd/data" "$STATE"/redis-* "$AOF_STATE"/redis-*
  ;;
*)
  echo "usage: $0 start|stop" >&2
  exit 64
  ;;
esac
