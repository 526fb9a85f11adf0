# shellcheck shell=bash
# The `kube` set: a real Kubernetes API server on loopback, for the tests
# of baton's Kubernetes Lease engine. No Debian package ships one, so
# scripts/kube-build.sh builds kube-apiserver v1.37.2 from source into a
# cache outside the checkout (minutes, once per machine; this set waits
# for a build in progress). The server keeps its objects in a private etcd
# (Debian's etcd-server) of its own:
#
#   kube-apiserver  16443  https only (a private CA signs its certificate,
#                          SAN IP:127.0.0.1 and DNS:localhost), bearer
#                          tokens from a token file, RBAC
#   etcd            23860  its store; peers on 23861
#
# Users (random tokens per start of the server, in $STATE/kube/tokens.csv,
# 0600): baton-admin (group system:masters: anything), baton-limited
# (get/list/watch/create/update/delete on coordination.k8s.io Leases in
# namespace baton-test only), baton-noupdate (the same minus update and
# patch). scripts/kubeapiserver/setup creates the namespace and the RBAC
# rules once the server is ready. Each user has a kubeconfig in
# $STATE/kube (0600: it holds the token) whose context's namespace is
# baton-test; the export lines name them, never a token.
#
# The `kube_fault` set is a second deployment of the same kind, private
# to the Lease engine's fault drills, which freeze its etcd (SIGSTOP to
# BATON_TEST_K8S_FAULT_ETCD_PIDFILE's pid) and restart its server (kill
# BATON_TEST_K8S_FAULT_PIDFILE's pid, then
# `nohup bash "$BATON_TEST_K8S_FAULT_RUN" >>LOG 2>&1 &` runs it again with
# the same flags and tokens, writing its pid to that file itself). A
# fault there breaks no other test: the `kube` set serves the modules
# whose tests run beside the drills (cmd/baton, testkit, examples).
#
#   kube-apiserver  16444  as the kube set's, with tokens of its own
#   etcd            23880  its store; peers on 23881
#   state           $STATE/kube-fault; exports BATON_TEST_K8S_FAULT*
#
# Sourced by scripts/servers.sh (start prints export lines on stdout), or
# run by hand:  BATON_SERVERS_DIR=/tmp/x bash scripts/servers.d/kube.sh start|stop

KUBE_NAMESPACE=baton-test
KUBE_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if ! declare -F claim >/dev/null; then # run by hand: the shared helpers
  . "$KUBE_SCRIPTS/servers-lib.sh"
fi

# kube_set NAME sets the deployment the functions below act on: its state
# directory (KUBE_DIR), its API server's and etcd's ports and the prefix of
# its export lines. Each set is a function call's own: the functions read
# these globals, and servers.sh runs every set's start in a job of its own.
kube_set() {
  case "$1" in
  kube) KUBE_DIR=$STATE/kube KUBE_PORT=16443 KUBE_ETCD_PORT=23860 KUBE_ENV=BATON_TEST_K8S ;;
  kube_fault) KUBE_DIR=$STATE/kube-fault KUBE_PORT=16444 KUBE_ETCD_PORT=23880 KUBE_ENV=BATON_TEST_K8S_FAULT ;;
  *) echo "servers.sh: no kube set named $1" >&2 && return 64 ;;
  esac
  KUBE_NAME=$1
}

# kube_certs writes, once per state directory, the CA, the server's
# certificate it signs and the service-account signing key.
kube_certs() {
  local d=$KUBE_DIR
  [ -f "$d/server.pem" ] && [ -f "$d/sa.pub" ] && return 0
  openssl ecparam -name prime256v1 -genkey -noout -out "$d/ca.key" 2>/dev/null
  openssl req -x509 -new -key "$d/ca.key" -subj "/CN=baton test kube CA" -days 30 -sha256 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out "$d/ca.pem" 2>/dev/null
  openssl ecparam -name prime256v1 -genkey -noout -out "$d/server.key" 2>/dev/null
  openssl req -new -key "$d/server.key" -subj "/CN=kube-apiserver" -out "$d/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/server.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$d/server.ext" -out "$d/server.pem" 2>/dev/null
  openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$d/sa.key" 2>/dev/null
  openssl pkey -in "$d/sa.key" -pubout -out "$d/sa.pub"
  rm -f "$d/server.csr" "$d/server.ext"
  chmod 600 "$d"/*.key
}

# kube_tokens writes a new token file: one random token per user.
kube_tokens() {
  local f="$KUBE_DIR/tokens.csv"
  rm -f "$f"
  (
    umask 077
    echo "$(openssl rand -hex 32),baton-admin,baton-admin,\"system:masters\"" >"$f"
    echo "$(openssl rand -hex 32),baton-limited,baton-limited" >>"$f"
    echo "$(openssl rand -hex 32),baton-noupdate,baton-noupdate" >>"$f"
  )
}

# kube_config USER writes $KUBE_DIR/USER.kubeconfig with USER's token
# from the token file the running server read.
kube_config() {
  local d=$KUBE_DIR user=$1 token f
  f="$d/$user.kubeconfig"
  token=$(awk -F, -v u="$user" '$2 == u { print $1 }' "$d/tokens.csv")
  [ -n "$token" ] || { echo "servers.sh: $KUBE_NAME: no token for $user in $d/tokens.csv" >&2; return 1; }
  rm -f "$f"
  (
    umask 077
    cat >"$f" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: baton
  cluster:
    server: https://127.0.0.1:$KUBE_PORT
    certificate-authority: $d/ca.pem
users:
- name: $user
  user:
    token: $token
contexts:
- name: $user
  context:
    cluster: baton
    user: $user
    namespace: $KUBE_NAMESPACE
current-context: $user
YAML
  )
}

# kube_run_script writes the script that runs the server in the
# foreground: it records its own pid, then becomes kube-apiserver.
kube_run_script() {
  local d=$KUBE_DIR bin=$1
  cat >"$d/run-apiserver.sh" <<RUN
# Runs this state directory's kube-apiserver (written by servers.d/kube.sh).
echo \$\$ >"$d/apiserver.pid"
exec "$bin" --etcd-servers=http://127.0.0.1:$KUBE_ETCD_PORT \\
  --secure-port=$KUBE_PORT --bind-address=127.0.0.1 --advertise-address=127.0.0.1 \\
  --tls-cert-file="$d/server.pem" --tls-private-key-file="$d/server.key" --cert-dir="$d/certs" \\
  --token-auth-file="$d/tokens.csv" --authorization-mode=RBAC \\
  --service-account-issuer=https://kubernetes.default.svc \\
  --service-account-key-file="$d/sa.pub" --service-account-signing-key-file="$d/sa.key" \\
  --service-cluster-ip-range=10.96.0.0/24 --endpoint-reconciler-type=none --profiling=false
RUN
}

# kube_start starts the set kube_set chose and prints its export lines.
kube_start() {
  local d=$KUBE_DIR bin
  mkdir -p "$d"
  # The build first: when it fails, nothing of the set is left running.
  bin=$(bash "$KUBE_SCRIPTS/kube-build.sh") || { echo "servers.sh: $KUBE_NAME: kube-apiserver did not build" >&2; return 1; }
  if ! claim "$KUBE_NAME's etcd" "$KUBE_ETCD_PORT" "$d/etcd.pid"; then
    nohup etcd --name "baton-$KUBE_NAME" --data-dir "$d/etcd" \
      --listen-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" \
      --initial-advertise-peer-urls "http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" \
      --initial-cluster "baton-$KUBE_NAME=http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" --logger zap --log-level error \
      >"$d/etcd.log" 2>&1 &
    echo $! >"$d/etcd.pid"
    wait_port "$KUBE_ETCD_PORT" >&2
  fi
  if ! claim "$KUBE_NAME's kube-apiserver" "$KUBE_PORT" "$d/apiserver.pid"; then
    kube_certs
    kube_tokens
    kube_run_script "$bin"
    nohup bash "$d/run-apiserver.sh" >"$d/apiserver.log" 2>&1 &
    echo $! >"$d/apiserver.pid" # the script writes the same pid, for restarts
  fi
  kube_config baton-admin
  kube_config baton-limited
  kube_config baton-noupdate
  # setup waits for /readyz, then creates the namespace and RBAC rules.
  # Built like kube-apiserver (-trimpath, no cgo), it reuses the client
  # packages that build compiled.
  if ! (cd "$KUBE_SCRIPTS/kubeapiserver" &&
    GOWORK=off CGO_ENABLED=0 go run -trimpath ./setup -kubeconfig "$d/baton-admin.kubeconfig" -wait 3m) >&2; then
    echo "servers.sh: $KUBE_NAME: the API server did not get ready; the end of $d/apiserver.log:" >&2
    tail -20 "$d/apiserver.log" >&2
    return 1
  fi
  echo "export $KUBE_ENV=$d/baton-admin.kubeconfig"
  echo "export ${KUBE_ENV}_LIMITED=$d/baton-limited.kubeconfig"
  echo "export ${KUBE_ENV}_NOUPDATE=$d/baton-noupdate.kubeconfig"
  echo "export ${KUBE_ENV}_ADDR=127.0.0.1:$KUBE_PORT"
  echo "export ${KUBE_ENV}_PIDFILE=$d/apiserver.pid"
  echo "export ${KUBE_ENV}_RUN=$d/run-apiserver.sh"
  echo "export ${KUBE_ENV}_ETCD_PIDFILE=$d/etcd.pid"
  echo "export ${KUBE_ENV}_ETCD=127.0.0.1:$KUBE_ETCD_PORT"
}

kube_stop() {
  stop_pidfile "$KUBE_DIR/apiserver.pid"
  stop_pidfile "$KUBE_DIR/etcd.pid"
  rm -rf "$KUBE_DIR"
}

start_kube() { kube_set kube && kube_start; }
stop_kube() { kube_set kube && kube_stop; }
start_kube_fault() { kube_set kube_fault && kube_start; }
stop_kube_fault() { kube_set kube_fault && kube_stop; }

EXTRA_START+=(start_kube start_kube_fault)
EXTRA_STOP+=(stop_kube stop_kube_fault)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run by hand
  set -euo pipefail
  STATE=${BATON_SERVERS_DIR:-${TMPDIR:-/tmp}/baton-servers}
  case "${1:-start}" in
  start) mkdir -p "$STATE" && chmod 755 "$STATE" && start_kube && start_kube_fault ;;
  stop) stop_kube; stop_kube_fault ;;
  *) echo "usage: $0 start|stop" >&2 && exit 64 ;;
  esac
fi
