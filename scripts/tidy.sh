#!/usr/bin/env bash
# Tidies every module of the checkout. `go mod tidy` works on one module
# and ignores go.work, and the nested modules require baton's other modules
# at versions that exist only once tagged, without replace directives (go
# install refuses them). So each nested module is tidied with temporary
# replace directives to this checkout, dropped again afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."

root=github.com/baton-go/baton
nested=(etcdlock kubelock cmd/baton drill interop bench examples prom otel testkit)

GOWORK=off go mod tidy
for mod in "${nested[@]}"; do
  up=$(echo "$mod" | sed 's#[^/]*#..#g')
  reps=(-replace "$root=$up")
  for other in "${nested[@]}"; do
    [ "$other" = "$mod" ] || reps+=(-replace "$root/$other=$up/$other")
  done
  drops=()
  for r in "${reps[@]}"; do
    [ "$r" = -replace ] || drops+=(-dropreplace "${r%%=*}")
  done
  (cd "$mod" && go mod edit "${reps[@]}" && GOWORK=off go mod tidy; status=$?; go mod edit "${drops[@]}"; exit $status)
done
# The tool module outside go.work keeps its replace directives (it is
# never installed): its go.mod says how it builds.
(cd scripts/kubeapiserver && GOWORK=off go mod tidy)
