# shellcheck shell=bash
# Sourced by scripts/servers.sh. A three-member etcd cluster (clients on
# 23801-23803, peers on 23811-23813) and a Redis primary (16401) with one
# replica (16402) watched by three Sentinels (26401-26403, quorum 2) under
# the master name "baton-sentinel". The conformance suite runs on each
# through the clients users run there: etcd clients spread over members,
# go-redis's failover client. The failover drills kill members, so they
# start clusters of their own on other ports; these stay up.

CL_ETCD_CLIENT="23801 23802 23803"
CL_SENTINEL_MASTER=baton-sentinel
CL_SENTINEL_PORTS="26401 26402 26403"

start_etcd_cluster() {
  local i initial="" c p
  for i in 1 2 3; do
    initial="${initial:+$initial,}cl$i=http://127.0.0.1:$((23810 + i))"
  done
  for i in 1 2 3; do
    c=$((23800 + i)) p=$((23810 + i))
    mkdir -p "$STATE/etcd-cl$i"
    claim "etcd member cl$i" "$c" "$STATE/etcd-cl$i/pid" && continue
    nohup etcd --name "cl$i" --data-dir "$STATE/etcd-cl$i/data" \
      --listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
      --listen-peer-urls "http://127.0.0.1:$p" --initial-advertise-peer-urls "http://127.0.0.1:$p" \
      --initial-cluster "$initial" --initial-cluster-state new --initial-cluster-token baton-cl \
      --heartbeat-interval 50 --election-timeout 500 --logger zap --log-level error \
      >"$STATE/etcd-cl$i/log" 2>&1 &
    echo $! >"$STATE/etcd-cl$i/pid"
  done
  for c in $CL_ETCD_CLIENT; do wait_port "$c"; done
  # A member's port opens before the cluster has a leader: wait for one.
  local ok
  for ok in $(seq 1 100); do
    etcdctl --endpoints "127.0.0.1:23801" endpoint status >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "servers.sh: the etcd cluster on 23801-23803 elected no leader in 20 s" >&2
  return 1
}

start_sentinel_set() {
  local p conf
  start_private_redis 16401 --save "" --appendonly no
  start_private_redis 16402 --save "" --appendonly no --replicaof 127.0.0.1 16401
  for p in $CL_SENTINEL_PORTS; do
    mkdir -p "$STATE/sentinel-$p"
    claim "redis-sentinel $p" "$p" "$STATE/sentinel-$p/pid" && continue
    conf="$STATE/sentinel-$p/sentinel.conf" # Sentinel rewrites it: one each
    cat >"$conf" <<CFG
port $p
bind 127.0.0.1
daemonize yes
pidfile $STATE/sentinel-$p/pid
logfile $STATE/sentinel-$p/log
dir $STATE/sentinel-$p
sentinel monitor $CL_SENTINEL_MASTER 127.0.0.1 16401 2
sentinel down-after-milliseconds $CL_SENTINEL_MASTER 1000
sentinel failover-timeout $CL_SENTINEL_MASTER 5000
CFG
    redis-sentinel "$conf"
    wait_port "$p"
  done
}

start_cluster_set() {
  start_etcd_cluster >&2
  start_sentinel_set >&2
  echo "export BATON_TEST_ETCD_CLUSTER=127.0.0.1:23801,127.0.0.1:23802,127.0.0.1:23803"
  echo "export BATON_TEST_SENTINEL=127.0.0.1:26401,127.0.0.1:26402,127.0.0.1:26403"
  echo "export BATON_TEST_SENTINEL_MASTER=$CL_SENTINEL_MASTER"
}

stop_cluster_set() {
  local f
  for f in "$STATE"/etcd-cl*/pid "$STATE"/sentinel-*/pid; do
    stop_pidfile "$f"
  done
  rm -rf "$STATE"/etcd-cl* "$STATE"/sentinel-*
  # redis-16401/16402 are removed with every redis-* by servers.sh stop.
}

EXTRA_START+=(start_cluster_set)
EXTRA_STOP+=(stop_cluster_set)
