#!/usr/bin/env bash
# The module-graph check: what does `go get` of one baton engine put into a
# user's module graph? For each case it creates a scratch module in a
# temporary directory that imports one package (replace directives point
# baton's modules at this checkout, as a scratch main module may), runs
# `go mod tidy` and `go mod graph`, and fails when
#   - the graph contains a module no library user should get: etcd's
#     server, toxiproxy, porcupine, the loggers (zap, zerolog, logrus;
#     zap only outside the etcdlock case: etcd's client needs it, which is
#     why etcdlock is a module of its own), or baton's cmd/baton, drill,
#     interop and bench modules, or its test-support module (testkit),
#     which only the nested modules' tests require;
#   - (redislock, sqllock, kubelock) the graph contains etcd's client, or the
#     modules the scratch module builds (its tidy go.mod) contain another
#     engine's client. Those engines' clients are requirements of the root
#     module, so they appear as edges of the graph, pruned: never built,
#     never in the user's go.mod or go.sum.
# On failure it prints the graph's module list.
#
# First it checks that every module of go.work, and the tool module
# scripts/kubeapiserver outside it, is tidy on its own
# (GOWORK=off; nested modules with temporary replace directives to this
# checkout, in a copy of their go.mod; the root module without any, as it
# must require no other baton module): in the workspace a package or test
# could import another baton module without its go.mod saying so, and the
# scratch modules, which read those go.mod files, would not see it. And it
# checks that no package or test of a module imports another module's
# internal/ package (see internalcheck).
#
#   MODCHECK_ALLOW=REGEX  exempts matching modules (for a branch whose
#                         dependencies are known to be in flux).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
root=github.com/baton-go/baton
zero=v0.0.0-00010101000000-000000000000
tmp=$(mktemp -d -t baton-modcheck.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

loggers='go\.uber\.org/zap|github\.com/rs/zerolog|github\.com/sirupsen/logrus'
never='go\.etcd\.io/etcd/server/|github\.com/Shopify/toxiproxy|github\.com/anishathalye/porcupine|github\.com/rs/zerolog|github\.com/sirupsen/logrus|github\.com/baton-go/baton/(cmd|drill|interop|bench|testkit)(/|$)'
etcdclient='go\.etcd\.io/etcd/client/'
zk='github\.com/go-zookeeper/zk'
redis='github\.com/redis/go-redis'
sqldrivers='github\.com/jackc/pgx|github\.com/go-sql-driver/mysql|modernc\.org/sqlite'

# check NAME PKG GRAPH_FORBIDDEN BUILD_FORBIDDEN
check() {
  local name=$1 pkg=$2 graphbad=$3 buildbad=$4 dir=$tmp/$1
  mkdir -p "$dir"
  cat >"$dir/go.mod" <<MOD
module example.com/modcheck/$name

go 1.26.8

require $root $zero

replace $root => $repo

replace $root/etcdlock => $repo/etcdlock

replace $root/kubelock => $repo/kubelock
MOD
  if [ "$pkg" = "$root/etcdlock" ] || [ "$pkg" = "$root/kubelock" ]; then
    (cd "$dir" && go mod edit -require "$pkg@$zero")
  fi
  printf 'package main\n\nimport _ "%s"\n\nfunc main() {}\n' "$pkg" >"$dir/main.go"
  if ! (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go mod tidy >"$dir/tidy.log" 2>&1); then
    echo "modcheck $name: go mod tidy failed:" >&2
    cat "$dir/tidy.log" >&2
    return 1
  fi
  # Every module of the graph, either side of an edge, without versions.
  (cd "$dir" && GOWORK=off GOFLAGS=-mod=mod go mod graph) | tr ' ' '\n' | sed 's/@.*//' | sort -u >"$dir/graph"
  # The modules the scratch module builds: its tidy go.mod's requirements.
  sed -n 's/^\t\([^ ]*\) v.*/\1/p; s/^require \([^ ]*\) v.*/\1/p' "$dir/go.mod" | sort -u >"$dir/build"
  local allow=${MODCHECK_ALLOW:-'^$'} bad
  bad=$( (grep -E "^($graphbad)" "$dir/graph" || true; grep -E "^($buildbad)" "$dir/build" || true) | grep -Ev "$allow" | sort -u || true)
  local n; n=$(wc -l <"$dir/graph")
  if [ -n "$bad" ]; then
    echo "modcheck $name: FAIL: importing only $pkg brings in:" >&2
    echo "$bad" | sed 's/^/  /' >&2
    echo "modcheck $name: the graph's $n modules:" >&2
    sed 's/^/  /' "$dir/graph" >&2
    echo "modcheck $name: modules built (go.mod):" >&2
    sed 's/^/  /' "$dir/build" >&2
    return 1
  fi
  echo "modcheck $name: ok: $n modules in the graph, $(wc -l <"$dir/build") built: $(tr '\n' ' ' <"$dir/build")"
}

# tidycheck DIR: is the module in DIR tidy without the workspace?
tidycheck() {
  local mod=$1 up m
  up=$(echo "$mod" | sed 's#[^/]*#..#g')
  cp "$mod/go.mod" "$tmp/tidy.mod"
  cp "$mod/go.sum" "$tmp/tidy.sum" 2>/dev/null || : >"$tmp/tidy.sum"
  if [ "$mod" != . ]; then
    for m in $(go work edit -json | sed -n 's/.*"DiskPath": "\.\/\(.*\)".*/\1/p'); do
      [ "$m" = "$mod" ] || (cd "$mod" && go mod edit -modfile="$tmp/tidy.mod" -replace "$root/$m=$up/$m")
    done
    (cd "$mod" && go mod edit -modfile="$tmp/tidy.mod" -replace "$root=$up")
  fi
  if ! (cd "$mod" && GOWORK=off go mod tidy -diff -modfile="$tmp/tidy.mod" >"$tmp/tidy.diff" 2>&1); then
    echo "modcheck tidy $mod: FAIL: go.mod is not what go mod tidy makes of it without the workspace (a package or test importing another baton module? run scripts/tidy.sh):" >&2
    cat "$tmp/tidy.diff" >&2
    return 1
  fi
}

# golinecheck DIR: a library module declares the lowest Go its
# dependencies allow, not the newest toolchain, so that a user is not
# forced onto it (go vet's stdversion check then flags any use of the
# standard library newer than the line). Run after tidycheck DIR, whose
# $tmp/tidy.mod it reads.
golinecheck() {
  local mod=$1 line need
  line=$(sed -n 's/^go //p' "$mod/go.mod")
  need=$(cd "$mod" && GOWORK=off go list -modfile="$tmp/tidy.mod" -m -f '{{if not .Main}}{{.GoVersion}}{{end}}' all |
    grep . | sort -V | tail -1)
  if [ "$line" != "$need" ]; then
    echo "modcheck go line $mod: FAIL: go.mod says go $line; its dependencies need go $need: say that" >&2
    return 1
  fi
}

# internalcheck DIR: no package or test of the module in DIR imports an
# internal/ package of another module. Go's internal rule goes by import
# path, so the compiler lets every baton module import the root module's
# internal/ packages; but each module is released on its own, and the
# first release of the root module that changes such a package would
# break the module importing it. go list -deps -test lists the module's
# packages and their tests' variants with their imports, and every
# package they reach with its module.
internalcheck() {
  local mod=$1 self bad
  self=$(sed -n 's/^module //p' "$mod/go.mod")
  if ! (cd "$mod" && go list -deps -test -f '{{if .Module}}{{.Module.Path}}{{end}}	{{.ImportPath}}	{{join .Imports ","}}' ./... >"$tmp/deps" 2>"$tmp/deps.log"); then
    echo "modcheck internal $mod: go list failed:" >&2
    cat "$tmp/deps.log" >&2
    return 1
  fi
  bad=$(awk -F'\t' -v self="$self" '
    function base(p) { sub(/ \[.*/, "", p); return p }
    { owner[base($2)] = $1; if ($1 == self) own[base($2)] = own[base($2)] "," $3 }
    END {
      for (p in own) {
        n = split(own[p], imps, ",")
        for (i = 1; i <= n; i++) {
          imp = base(imps[i])
          if (imp ~ /(^|\/)internal(\/|$)/ && owner[imp] != "" && owner[imp] != self)
            print "  " p " imports " imp " (module " owner[imp] ")"
        }
      }
    }' "$tmp/deps" | sort -u)
  if [ -n "$bad" ]; then
    echo "modcheck internal $mod: FAIL: module $self imports another module's internal/ packages (make them public, move them into the one module that uses them, or into testkit):" >&2
    echo "$bad" >&2
    return 1
  fi
}

status=0
mapfile -t modules < <(go work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p' | sed 's#^\./##')
for mod in "${modules[@]}"; do
  tidycheck "$mod" || status=1
  internalcheck "$mod" || status=1
  case "$mod" in
  . | etcdlock | prom | otel | drill | testkit) golinecheck "$mod" || status=1 ;; # the library modules and what they require
  esac
done
tidycheck scripts/kubeapiserver || status=1 # the tool module outside go.work
echo "modcheck tidy, internal imports: ${#modules[@]} modules checked: ${modules[*]}; tidy: scripts/kubeapiserver"
check redislock "$root/redislock" "$never|$loggers|$etcdclient" "$zk|$sqldrivers" || status=1
check sqllock "$root/sqllock" "$never|$loggers|$etcdclient" "$zk|$redis" || status=1
check etcdlock "$root/etcdlock" "$never" "$zk|$redis|$sqldrivers" || status=1
check kubelock "$root/kubelock" "$never|$loggers|$etcdclient" "$zk|$redis|$sqldrivers" || status=1
exit $status
