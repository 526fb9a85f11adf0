# shellcheck shell=bash
# TLS and authentication deployments, one private server per engine on
# loopback, each refusing plain text and unauthenticated clients:
#
#   ZooKeeper  21850  Netty secureClientPort only, client certificate needed
#                     (digest identities are the clients' own: the tests
#                     check that the ACLs keep other identities out); Java
#                     clients take the client pair from client.p12
#   etcd       23850  https client URL, client certificate needed, then
#                     user/password auth: user baton (role baton, readwrite
#                     on the prefix baton/), user outsider (role outsider,
#                     readwrite on other/ only), user reader (role reader,
#                     read only on baton/); peers on 23851
#   Redis      16450  --port 0 --tls-port, client certificate needed, ACL
#                     users baton (keys and channels baton:*, the commands
#                     redislock and redlock send) and outsider (keys
#                     other:*); the default user is off. The ACL file is
#                     $STATE/tls/redis-users.acl: the Redlock tests start
#                     their nodes with it
#   PostgreSQL 15433  ssl=on, pg_hba hostssl scram-sha-256 clientcert=verify-ca
#                     only (a client certificate and the password), user baton
#                     (owns database baton) and user outsider (no CREATE)
#   MariaDB    13307  ssl-ca/ssl-cert/ssl-key, users baton (all on baton.*)
#                     and outsider (no grant), both REQUIRE SSL
#
# Passwords are random per deployment, in $STATE/tls/<engine>-<user>.pass.
#
# A private CA signs the servers' certificate (SAN IP:127.0.0.1,
# DNS:localhost) and the client certificate (CN baton-client, no etcd user: etcd would take a
# certificate CN naming a user as that user); a second CA, which
# no server trusts, signs a rogue client certificate and a rogue server
# certificate for the refusal tests. Everything lives in $STATE/tls.
#
# Sourced by scripts/servers.sh (start prints export lines on stdout), or
# run by hand:  BATON_SERVERS_DIR=/tmp/x bash scripts/servers.d/tls.sh start|stop

TLS_ZK_PORT=21850
TLS_ETCD_PORT=23850 # peers on 23851
TLS_REDIS_PORT=16450
TLS_PG_PORT=15433
TLS_MY_PORT=13307

if ! declare -F claim >/dev/null; then # run by hand: the shared helpers
  . "$(dirname "${BASH_SOURCE[0]}")/../servers-lib.sh"
fi

# tls_secret prints the password stored in $STATE/tls/NAME.pass, creating
# it first: random per deployment, readable by its owner only.
tls_secret() {
  local f="$STATE/tls/$1.pass"
  [ -s "$f" ] || (umask 077 && openssl rand -hex 16 >"$f")
  cat "$f"
}

# tls_sign NAME CA CN EXT: a P-256 key and a certificate signed by CA.
tls_sign() {
  local d="$STATE/tls" name=$1 ca=$2 cn=$3 ext=$4
  openssl ecparam -name prime256v1 -genkey -noout -out "$d/$name.key" 2>/dev/null
  openssl req -new -key "$d/$name.key" -subj "/CN=$cn" -out "$d/$name.csr" 2>/dev/null
  printf '%s\n' "$ext" >"$d/$name.ext"
  openssl x509 -req -in "$d/$name.csr" -CA "$d/$ca.pem" -CAkey "$d/$ca.key" -CAcreateserial \
    -days 30 -sha256 -extfile "$d/$name.ext" -out "$d/$name.pem" 2>/dev/null
  rm -f "$d/$name.csr" "$d/$name.ext"
}

tls_certs() {
  local d="$STATE/tls" ca
  mkdir -p "$d"
  chmod 755 "$d"
  tls_secret zk-baton >/dev/null # the digest password of the ZooKeeper tests
  [ -f "$d/client.pem" ] && { tls_client_p12; return 0; }
  for ca in ca rogue-ca; do
    openssl ecparam -name prime256v1 -genkey -noout -out "$d/$ca.key" 2>/dev/null
    openssl req -x509 -new -key "$d/$ca.key" -subj "/CN=baton test $ca" -days 30 -sha256 \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out "$d/$ca.pem" 2>/dev/null
  done
  local server="subjectAltName=IP:127.0.0.1,DNS:localhost
extendedKeyUsage=serverAuth,clientAuth"
  tls_sign server ca localhost "$server"
  tls_sign client ca baton-client "extendedKeyUsage=clientAuth"
  tls_sign rogue-client rogue-ca baton-client "extendedKeyUsage=clientAuth"
  tls_sign rogue-server rogue-ca localhost "$server"
  # Java reads PKCS#12: the server's key store and a trust store of the CA.
  openssl pkcs12 -export -in "$d/server.pem" -inkey "$d/server.key" -name server \
    -passout "pass:$(tls_secret keystore)" -out "$d/server.p12"
  rm -f "$d/truststore.p12"
  keytool -importcert -noprompt -alias ca -file "$d/ca.pem" -keystore "$d/truststore.p12" \
    -storetype PKCS12 -storepass "$(tls_secret keystore)" >/dev/null 2>&1
  chmod 644 "$d"/*.pem
  chmod 600 "$d"/*.key "$d"/*.p12 # libpq refuses a key others can read
  tls_client_p12
}

# tls_client_p12 writes the client pair as PKCS#12 for Java clients (the
# Curator interop tests), password keystore.pass; a deployment whose
# certificates predate it gets it on its next start.
tls_client_p12() {
  local d="$STATE/tls"
  [ -f "$d/client.p12" ] && return 0
  openssl pkcs12 -export -in "$d/client.pem" -inkey "$d/client.key" -name client \
    -passout "pass:$(tls_secret keystore)" -out "$d/client.p12"
  chmod 600 "$d/client.p12"
}

start_tls_zk() {
  local dir="$STATE/zk-tls" d="$STATE/tls"
  mkdir -p "$dir/data"
  claim "TLS ZooKeeper" "$TLS_ZK_PORT" "$dir/pid" && return 0
  cat >"$dir/zoo.cfg" <<CFG
tickTime=200
initLimit=10
syncLimit=5
dataDir=$dir/data
secureClientPort=$TLS_ZK_PORT
secureClientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=400
maxSessionTimeout=60000
admin.enableServer=false
ssl.keyStore.location=$d/server.p12
ssl.keyStore.password=$(tls_secret keystore)
ssl.keyStore.type=PKCS12
ssl.trustStore.location=$d/truststore.p12
ssl.trustStore.password=$(tls_secret keystore)
ssl.trustStore.type=PKCS12
ssl.clientAuth=need
CFG
  chmod 600 "$dir/zoo.cfg"
  nohup java -Xmx256m -Dzookeeper.admin.enableServer=false -Dznode.container.checkIntervalMs=500 \
    -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -Dzookeeper.serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory \
    -cp "$(zk_classpath)" org.apache.zookeeper.server.ZooKeeperServerMain "$dir/zoo.cfg" \
    >"$dir/zk.log" 2>&1 &
  echo $! >"$dir/pid"
}

start_tls_etcd() {
  local dir="$STATE/etcd-tls" d="$STATE/tls" peer=$((TLS_ETCD_PORT + 1))
  mkdir -p "$dir"
  claim "TLS etcd" "$TLS_ETCD_PORT" "$dir/pid" && return 0
  nohup etcd --name baton-tls --data-dir "$dir/data" \
    --listen-client-urls "https://127.0.0.1:$TLS_ETCD_PORT" --advertise-client-urls "https://127.0.0.1:$TLS_ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
    --initial-cluster "baton-tls=http://127.0.0.1:$peer" --logger zap --log-level error \
    --cert-file "$d/server.pem" --key-file "$d/server.key" --trusted-ca-file "$d/ca.pem" --client-cert-auth \
    >"$dir/log" 2>&1 &
  echo $! >"$dir/pid"
  wait_port "$TLS_ETCD_PORT"
  local ctl=(etcdctl --endpoints "https://127.0.0.1:$TLS_ETCD_PORT" --cacert "$d/ca.pem" --cert "$d/client.pem" --key "$d/client.key")
  local i
  for i in $(seq 1 50); do
    ETCDCTL_API=3 "${ctl[@]}" endpoint health >/dev/null 2>&1 && break
    sleep 0.2
  done
  [ -f "$dir/data/auth-enabled" ] && return 0
  {
    "${ctl[@]}" user add "root:$(tls_secret etcd-root)"
    "${ctl[@]}" user grant-role root root
    "${ctl[@]}" role add baton
    "${ctl[@]}" role grant-permission baton --prefix=true readwrite baton/
    "${ctl[@]}" user add "baton:$(tls_secret etcd-baton)"
    "${ctl[@]}" user grant-role baton baton
    "${ctl[@]}" role add outsider
    "${ctl[@]}" role grant-permission outsider --prefix=true readwrite other/
    "${ctl[@]}" user add "outsider:$(tls_secret etcd-outsider)"
    "${ctl[@]}" user grant-role outsider outsider
    "${ctl[@]}" role add reader
    "${ctl[@]}" role grant-permission reader --prefix=true read baton/
    "${ctl[@]}" user add "reader:$(tls_secret etcd-reader)"
    "${ctl[@]}" user grant-role reader reader
    "${ctl[@]}" auth enable
  } >/dev/null
  touch "$dir/data/auth-enabled"
}

start_tls_redis() {
  local dir="$STATE/redis-tls" d="$STATE/tls"
  mkdir -p "$dir"
  claim "TLS Redis" "$TLS_REDIS_PORT" "$dir/pid" && return 0
  # The commands redislock sends, directly and from its scripts.
  local cmds="+ping +hello +auth +client|setname +client|id +select +info +eval +evalsha +script|load +script|exists \
+time +del +exists +get +set +append +hget +hmget +hset +incr +pexpire +pttl +scan +zadd +zcard +zrange +zrangebyscore \
+zremrangebyscore +zrem +zscore +subscribe +unsubscribe +publish +wait"
  # In the certificates' directory: tests start Redlock nodes with it.
  cat >"$d/redis-users.acl" <<ACL
user default off
user baton on >$(tls_secret redis-baton) resetkeys ~baton:* resetchannels &baton:* -@all $cmds
user outsider on >$(tls_secret redis-outsider) resetkeys ~other:* resetchannels &other:* -@all $cmds
ACL
  chmod 600 "$d/redis-users.acl"
  redis-server --daemonize yes --bind 127.0.0.1 --port 0 --tls-port "$TLS_REDIS_PORT" \
    --tls-cert-file "$d/server.pem" --tls-key-file "$d/server.key" --tls-ca-cert-file "$d/ca.pem" \
    --tls-auth-clients yes --aclfile "$d/redis-users.acl" --save "" --appendonly no \
    --dir "$dir" --pidfile "$dir/pid" --logfile "$dir/log"
}

start_tls_postgres() {
  local dir="$STATE/pg-tls" d="$STATE/tls" bin
  claim "TLS PostgreSQL" "$TLS_PG_PORT" "$dir/data/postmaster.pid" && return 0
  bin=$(pg_bin)
  mkdir -p "$dir"
  # PostgreSQL refuses a key others can read: its own copy, 0600.
  install -m 600 "$d/server.key" "$dir/server.key"
  install -m 644 "$d/server.pem" "$dir/server.pem"
  install -m 644 "$d/ca.pem" "$dir/ca.pem"
  chown -R postgres "$dir" 2>/dev/null || true
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    runuser -u postgres -- "$bin/initdb" -D "$dir/data" --auth-local=trust --auth-host=reject -U postgres >/dev/null
  fi
  # TLS with a client certificate from the CA, then the password.
  cat >"$dir/data/pg_hba.conf" <<HBA
local     all  postgres                trust
hostssl   all  all       127.0.0.1/32  scram-sha-256  clientcert=verify-ca
HBA
  chown postgres "$dir/data/pg_hba.conf" 2>/dev/null || true
  runuser -u postgres -- "$bin/pg_ctl" -D "$dir/data" -o "-p $TLS_PG_PORT -k $dir -c listen_addresses=127.0.0.1 \
-c ssl=on -c ssl_cert_file=$dir/server.pem -c ssl_key_file=$dir/server.key -c ssl_ca_file=$dir/ca.pem \
-c password_encryption=scram-sha-256 \
-c max_connections=100 -c shared_buffers=16MB -c fsync=off" -l "$dir/log" start >/dev/null
  wait_port "$TLS_PG_PORT"
  local sql="psql -h $dir -p $TLS_PG_PORT -U postgres -qtA"
  runuser -u postgres -- $sql -c "SELECT 1 FROM pg_roles WHERE rolname='baton'" | grep -q 1 ||
    runuser -u postgres -- $sql -c "CREATE ROLE baton LOGIN PASSWORD '$(tls_secret pg-baton)'" >/dev/null
  runuser -u postgres -- $sql -c "SELECT 1 FROM pg_database WHERE datname='baton'" | grep -q 1 ||
    runuser -u postgres -- $sql -c "CREATE DATABASE baton OWNER baton" >/dev/null
  # outsider may connect but not create tables (public schema: owner only).
  runuser -u postgres -- $sql -c "SELECT 1 FROM pg_roles WHERE rolname='outsider'" | grep -q 1 ||
    runuser -u postgres -- $sql -c "CREATE ROLE outsider LOGIN PASSWORD '$(tls_secret pg-outsider)'" >/dev/null
  runuser -u postgres -- $sql -d baton -c "REVOKE CREATE ON SCHEMA public FROM PUBLIC" >/dev/null
}

start_tls_mariadb() {
  local dir="$STATE/my-tls" d="$STATE/tls"
  claim "TLS MariaDB" "$TLS_MY_PORT" "$dir/pid" && return 0
  mkdir -p "$dir"
  install -m 600 "$d/server.key" "$dir/server.key"
  chown -R mysql "$dir" 2>/dev/null || true
  if [ ! -d "$dir/data/mysql" ]; then
    mariadb-install-db --user=mysql --datadir="$dir/data" --auth-root-authentication-method=socket \
      --skip-test-db >/dev/null 2>&1
  fi
  nohup mariadbd --user=mysql --datadir="$dir/data" --port="$TLS_MY_PORT" --bind-address=127.0.0.1 \
    --socket="$dir/sock" --pid-file="$dir/pid" --max-connections=100 --skip-log-bin \
    --innodb-buffer-pool-size=16M --innodb-flush-log-at-trx-commit=2 \
    --ssl-ca="$d/ca.pem" --ssl-cert="$d/server.pem" --ssl-key="$dir/server.key" >"$dir/log" 2>&1 &
  wait_port "$TLS_MY_PORT"
  # outsider has no grant on baton's database.
  mariadb --socket="$dir/sock" -u root <<SQL
CREATE DATABASE IF NOT EXISTS baton;
CREATE USER IF NOT EXISTS 'baton'@'127.0.0.1' IDENTIFIED BY '$(tls_secret my-baton)' REQUIRE SSL;
GRANT ALL ON baton.* TO 'baton'@'127.0.0.1';
CREATE USER IF NOT EXISTS 'outsider'@'127.0.0.1' IDENTIFIED BY '$(tls_secret my-outsider)' REQUIRE SSL;
SQL
}

# start_tls starts the five deployments (the JVM and etcd side by side:
# they are the slow ones) and prints their environment.
start_tls() {
  tls_certs >&2
  start_tls_zk >&2
  start_tls_etcd >&2
  start_tls_redis >&2
  start_tls_postgres >&2
  start_tls_mariadb >&2
  wait_port "$TLS_REDIS_PORT" >&2
  wait_port "$TLS_ZK_PORT" >&2
  local d="$STATE/tls"
  echo "export BATON_TEST_TLS_DIR=$d"
  echo "export BATON_TEST_ZK_TLS=127.0.0.1:$TLS_ZK_PORT"
  echo "export BATON_TEST_ETCD_TLS=127.0.0.1:$TLS_ETCD_PORT"
  echo "export BATON_TEST_REDIS_TLS=127.0.0.1:$TLS_REDIS_PORT"
  echo "export BATON_TEST_PG_TLS='postgres://baton:$(tls_secret pg-baton)@localhost:$TLS_PG_PORT/baton?sslmode=verify-full&sslrootcert=$d/ca.pem&sslcert=$d/client.pem&sslkey=$d/client.key'"
  echo "export BATON_TEST_MYSQL_TLS='mysql://baton:$(tls_secret my-baton)@127.0.0.1:$TLS_MY_PORT/baton'"
}

stop_tls() {
  local p
  for p in "$STATE"/zk-tls/pid "$STATE"/etcd-tls/pid "$STATE"/redis-tls/pid "$STATE"/my-tls/pid; do
    stop_pidfile "$p"
  done
  stop_postgres "$STATE/pg-tls/data"
  rm -rf "$STATE/zk-tls/data" "$STATE/etcd-tls/data"
}

EXTRA_START+=(start_tls)
EXTRA_STOP+=(stop_tls)

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run by hand
  set -euo pipefail
  STATE=${BATON_SERVERS_DIR:-${TMPDIR:-/tmp}/baton-servers}
  case "${1:-start}" in
  start) mkdir -p "$STATE" && chmod 755 "$STATE" && start_tls ;;
  stop) stop_tls ;;
  *) echo "usage: $0 start|stop" >&2 && exit 64 ;;
  esac
fi
