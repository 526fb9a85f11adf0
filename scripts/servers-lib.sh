# shellcheck shell=bash
# The helpers every server script shares: sourced by scripts/servers.sh and
# by a scripts/servers.d/*.sh file run by hand. It defines functions only.

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

wait_port() {
  local i
  for i in $(seq 1 150); do port_open "$1" && return 0; sleep 0.2; done
  echo "servers.sh: port $1 did not open" >&2
  return 1
}

# running reports whether process $1 exists and has not exited: a process
# whose parent is gone and whose new parent does not reap it stays a
# zombie, which kill -0 still finds.
running() {
  local st
  st=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [ -n "$st" ] && [ "${st#Z}" = "$st" ]
}

# stop_pidfile kills the process in pidfile $1 and waits up to 10 s for it
# to exit, so that its data directory is not removed under it and a start
# right after finds its ports free (an etcd member that lost its peers
# takes a while to shut down).
stop_pidfile() {
  local pid i
  [ -f "$1" ] || return 0
  pid=$(head -1 "$1")
  rm -f "$1"
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 50); do running "$pid" || return 0; sleep 0.2; done
  kill -9 "$pid" 2>/dev/null || true
}

# port_holder names the process listening on loopback port $1, from /proc
# (no tool of its own needed): "pid N (command line)", or "an unknown
# process" when it belongs to another user's namespace.
port_holder() {
  local hex inode fd pid
  hex=$(printf '%04X' "$1")
  inode=$(awk -v p=":$hex" '$4 == "0A" && $2 ~ p"$" { print $10; exit }' /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  if [ -n "$inode" ]; then
    for fd in /proc/[0-9]*/fd/*; do
      if [ "$(readlink "$fd" 2>/dev/null)" = "socket:[$inode]" ]; then
        pid=${fd#/proc/}
        pid=${pid%%/*}
        echo "pid $pid ($(tr -s '\0 ' '  ' <"/proc/$pid/cmdline" | sed 's/ *$//' | cut -c1-120))"
        return 0
      fi
    done
  fi
  echo "an unknown process"
}

# claim NAME PORT PIDFILE decides whether a server must be started. It
# returns 0 when PIDFILE, in this state directory, names a live process
# and PORT answers: the server is this directory's own from an earlier
# start, and is reused. It returns 1 when PORT is free: start it. Anything
# else on PORT (the machine's own service, another state directory's
# server, a server configured by someone else) is never adopted, since
# the tests depend on the settings these scripts write (ZooKeeper's
# session-timeout range, Redis's persistence): claim fails the start,
# naming the port and the process that holds it.
claim() {
  local name=$1 port=$2 pidfile=$3 pid
  if [ -s "$pidfile" ] && pid=$(head -1 "$pidfile") && running "$pid" && port_open "$port"; then
    return 0
  fi
  if port_open "$port"; then
    echo "servers.sh: $name: port $port is held by $(port_holder "$port"), which $STATE did not start;" \
      "stop it, or stop the set that owns it with BATON_SERVERS_DIR=<its directory> scripts/servers.sh stop" >&2
    exit 1
  fi
  return 1
}

# pg_bin prints the newest installed PostgreSQL's bin directory.
pg_bin() {
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$d" ] || { echo "servers.sh: no PostgreSQL under /usr/lib/postgresql" >&2; return 1; }
  echo "$d"
}

zk_classpath() {
  local cp=/etc/zookeeper/conf j
  for j in zookeeper zookeeper-jute netty-handler netty-common netty-buffer netty-transport \
    netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common \
    slf4j-api slf4j-simple commons-cli commons-io metrics-core snappy-java jline; do
    [ -f "/usr/share/java/$j.jar" ] && cp="$cp:/usr/share/java/$j.jar"
  done
  echo "$cp"
}

# stop_postgres stops the PostgreSQL whose data directory is $1, if it runs.
stop_postgres() {
  [ -f "$1/postmaster.pid" ] || return 0
  runuser -u postgres -- "$(pg_bin)/pg_ctl" -D "$1" stop -m fast >/dev/null 2>&1 || true
}
