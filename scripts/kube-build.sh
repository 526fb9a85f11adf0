#!/usr/bin/env bash
# Builds kube-apiserver from source, for the kube set of the test servers
# (scripts/servers.d/kube.sh), unless the cache has it; prints its path.
#
#   scripts/kube-build.sh   →   $BATON_CACHE_DIR/kube-apiserver-v1.37.2
#
# The cache is ${BATON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton}.
# The build (about 6 minutes on 2 cores, and a large download the first
# time) runs in the tool module scripts/kubeapiserver, outside go.work
# (its doc comment says why), at the niceness nice gives, so that tests
# running beside it (scripts/test.sh starts it in the background) keep
# the CPU first. It writes a temporary name and renames it, so a killed
# build never leaves a binary that looks whole; a lock makes a second
# caller wait for a build in progress instead of starting another.
set -euo pipefail
cd "$(dirname "$0")/kubeapiserver"

version=v1.37.2 # k8s.io/kubernetes in scripts/kubeapiserver/go.mod
cache=${BATON_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/baton}
bin=$cache/kube-apiserver-$version
mkdir -p "$cache"
exec 9>"$bin.lock"
flock 9
if [ ! -x "$bin" ]; then
  if ! command -v go >/dev/null 2>&1; then
    [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin
  fi
  rm -f "$bin".tmp.* # what a killed build left
  tmp=$bin.tmp.$$
  trap 'rm -f "$tmp"' EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  echo "kube-build.sh: building kube-apiserver $version into $bin (minutes)" >&2
  start=$SECONDS
  # The version variables kubernetes' own build sets (hack/lib/version.sh):
  # the server reports v1.37.2, not v0.0.0-master.
  ldflags="-s -w"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags="$ldflags -X $pkg.gitVersion=$version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
  done
  GOWORK=off CGO_ENABLED=0 nice go build -trimpath -ldflags="$ldflags" -o "$tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$tmp" "$bin"
  echo "kube-build.sh: built in $((SECONDS - start)) s" >&2
fi
echo "$bin"
