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
# A drill may freeze etcd (SIGSTOP to BATON_TEST_K8S_ETCD_PIDFILE's pid)
# or restart the server: kill BATON_TEST_K8S_PIDFILE's pid, then
# `nohup bash "$BATON_TEST_K8S_RUN" >>LOG 2>&1 &` runs it again with the
# same flags and tokens, writing its pid to that file itself.
#
# Sourced by scripts/servers.sh (start prints export lines on stdout), or
# run by hand:  BATON_SERVERS_DIR=/tmp/x bash scripts/servers.d/kube.sh start|stop

KUBE_PORT=16443
KUBE_ETCD_PORT=23860 # peers on 23861
KUBE_NAMESPACE=baton-test
KUBE_SCRIPTS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if ! declare -F claim >/dev/null; then # run by hand: the shared helpers
  . "$KUBE_SCRIPTS/servers-lib.sh"
fi

# kube_certs writes, once per state directory, the CA, the server's
# certificate it signs and the service-account signing key.
kube_certs() {
  local d="$STATE/kube"
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
  local f="$STATE/kube/tokens.csv"
  rm -f "$f"
  (
    umask 077
    echo "$(openssl rand -hex 32),baton-admin,baton-admin,\"system:masters\"" >"$f"
    echo "$(openssl rand -hex 32),baton-limited,baton-limited" >>"$f"
    echo "$(openssl rand -hex 32),baton-noupdate,baton-noupdate" >>"$f"
  )
}

# kube_config USER writes $STATE/kube/USER.kubeconfig with USER's token
# from the token file the running server read.
kube_config() {
  local d="$STATE/kube" user=$1 token f
  f="$d/$user.kubeconfig"
  token=$(awk -F, -v u="$user" '$2 == u { print $1 }' "$d/tokens.csv")
  [ -n "$token" ] || { echo "servers.sh: kube: no token for $user in $d/tokens.csv" >&2; return 1; }
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
  local d="$STATE/kube" bin=$1
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

start_kube() {
  local d="$STATE/kube" bin
  mkdir -p "$d"
  # The build first: when it fails, nothing of the set is left running.
  bin=$(bash "$KUBE_SCRIPTS/kube-build.sh") || { echo "servers.sh: kube: kube-apiserver did not build" >&2; return 1; }
  if ! claim "Kubernetes' etcd" "$KUBE_ETCD_PORT" "$d/etcd.pid"; then
    nohup etcd --name baton-kube --data-dir "$d/etcd" \
      --listen-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$KUBE_ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" \
      --initial-advertise-peer-urls "http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" \
      --initial-cluster "baton-kube=http://127.0.0.1:$((KUBE_ETCD_PORT + 1))" --logger zap --log-level error \
      >"$d/etcd.log" 2>&1 &
    echo $! >"$d/etcd.pid"
    wait_port "$KUBE_ETCD_PORT" >&2
  fi
  if ! claim kube-apiserver "$KUBE_PORT" "$d/apiserver.pid"; then
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
    echo "servers.sh: kube: the API server did not get ready; the end of $d/apiserver.log:" >&2
    tail -20 "$d/apiserver.log" >&2
    return 1
  fi
  echo "export BATON_TEST_K8S=$d/baton-admin.kubeconfig"
  echo "export BATON_TEST_K8S_LIMITED=$d/baton-limited.kubeconfig"
  echo "export BATON_TEST_K8S_NOUPDATE=$d/baton-noupdate.kubeconfig"
  echo "export BATON_TEST_K8S_ADDR=127.0.0.1:$KUBE_PORT"
  echo "export BATON_TEST_K8S_PIDFILE=$d/apiserver.pid"
  echo "export BATON_TEST_K8S_RUN=$d/run-apiserver.sh"
  echo "export BATON_TEST_K8S_ETCD_PIDFILE=$d/etcd.pid"
  echo "export BATON_TEST_K8S_ETCD=127.0.0.1:$KUBE_ETCD_PORT"
}

stop_kube() {
  stop_pidfile "$STATE/kube/apiserver.pid"
  stop_pidfile "$STATE/kube/etcd.pid"
  rm -rf "$STATE/kube"
}

EXTRA_START+=(start_kube)
EXTRA_STOP+=(stop_kube)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run by hand
  set -euo pipefail
  STATE=${BATON_SERVERS_DIR:-${TMPDIR:-/tmp}/baton-servers}
  case "${1:-start}" in
  start) mkdir -p "$STATE" && chmod 755 "$STATE" && start_kube ;;
  stop) stop_kube ;;
  *) echo "usage: $0 start|stop" >&2 && exit 64 ;;
  esac
fi
