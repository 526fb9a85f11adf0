# A 3-member ZooKeeper ensemble (three JVMs of Debian's zookeeper) on
# loopback, for the conformance suite on an ensemble
# (BATON_TEST_ZK_ENSEMBLE). Sourced by scripts/servers.sh, whose
# helpers (scripts/servers-lib.sh) it uses.
#
# Clients on ZK_ENSEMBLE_PORT+1..+3 (21811-21813), quorum and election on
# ZK_ENSEMBLE_PEER+0..+5 (21821-21826). The settings are the single
# server's (tickTime 200, maxClientCnxns 0, every 4lw command), so the
# same session timeouts are granted. The fault drills start ensembles of
# their own (they kill members); this one is never faulted.
ZK_ENSEMBLE_PORT=${BATON_ZK_ENSEMBLE_PORT:-21810}
ZK_ENSEMBLE_PEER=${BATON_ZK_ENSEMBLE_PEER:-21821}

zkensemble_servers() {
  local i
  for i in 1 2 3; do
    echo "server.$i=127.0.0.1:$((ZK_ENSEMBLE_PEER + 2 * i - 2)):$((ZK_ENSEMBLE_PEER + 2 * i - 1))"
  done
}

# zk_mode prints a member's role (leader, follower; empty while it has no
# quorum) from its srvr answer.
zk_mode() {
  local out
  out=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && timeout 2 cat <&3) 2>/dev/null) || return 0
  sed -n 's/^Mode: //p' <<<"$out"
}

start_zkensemble() {
  local i port dir ready
  for i in 1 2 3; do
    port=$((ZK_ENSEMBLE_PORT + i))
    dir="$STATE/zkensemble/$i"
    mkdir -p "$dir/data"
    claim "ZooKeeper ensemble member $i" "$port" "$dir/pid" && continue
    echo "$i" >"$dir/data/myid"
    cat >"$dir/zoo.cfg" <<CFG
tickTime=200
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=400
maxSessionTimeout=60000
4lw.commands.whitelist=*
admin.enableServer=false
$(zkensemble_servers)
CFG
    nohup java -Xmx256m -Dzookeeper.admin.enableServer=false -Dznode.container.checkIntervalMs=500 \
      -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$(zk_classpath)" \
      org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" >"$dir/zk.log" 2>&1 &
    echo $! >"$dir/pid"
  done
  for i in 1 2 3; do wait_port $((ZK_ENSEMBLE_PORT + i)) >&2; done
  # A member listens before the ensemble has elected a leader; the tests
  # want one that serves.
  for _ in $(seq 1 150); do
    ready=0
    for i in 1 2 3; do
      case "$(zk_mode $((ZK_ENSEMBLE_PORT + i)))" in leader | follower) ready=$((ready + 1)) ;; esac
    done
    [ "$ready" = 3 ] && break
    sleep 0.2
  done
  [ "$ready" = 3 ] || { echo "servers.sh: only $ready of 3 ZooKeeper ensemble members serve" >&2; return 1; }
  echo "export BATON_TEST_ZK_ENSEMBLE=127.0.0.1:$((ZK_ENSEMBLE_PORT + 1)),127.0.0.1:$((ZK_ENSEMBLE_PORT + 2)),127.0.0.1:$((ZK_ENSEMBLE_PORT + 3))"
}

stop_zkensemble() {
  local p
  for p in "$STATE"/zkensemble/*/pid; do
    stop_pidfile "$p"
  done
  rm -rf "$STATE/zkensemble"
}

EXTRA_START+=(start_zkensemble)
EXTRA_STOP+=(stop_zkensemble)
