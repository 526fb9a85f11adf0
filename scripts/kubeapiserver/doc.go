// Package kubeapiserver is the tool module behind the test servers' `kube`
// set (scripts/servers.d/kube.sh): a real Kubernetes API server for the
// tests of baton's Kubernetes Lease engine, built from source because no
// Debian package ships one.
//
// The module does three things:
//
//   - go.mod names k8s.io/kubernetes/cmd/kube-apiserver as a tool, at
//     k8s.io/kubernetes v1.37.2, so that scripts/kube-build.sh can run
//     `go build k8s.io/kubernetes/cmd/kube-apiserver` here. k8s.io/kubernetes
//     requires its staging modules (k8s.io/api, apimachinery, apiserver,
//     client-go, …) at v0.0.0 and replaces them with its staging/
//     directory, which its module zip leaves out; the replace directives
//     here point each at the release published with v1.37.2, v0.37.2.
//   - setup/ is the program kube.sh runs as the administrator once the
//     server is ready: the test namespace and the restricted users' RBAC.
//   - kube_test.go checks a started set end to end through client-go.
//
// The module is NOT in go.work, and everything here runs with GOWORK=off
// (kube-build.sh, kube.sh, and scripts/test.sh, which vets and tests this
// module explicitly). In the workspace, k8s.io/kubernetes's dependency
// graph (hundreds of modules) would join every baton module's build list
// and go.work.sum, and go vet ./... and go test in scripts/test.sh's
// module loop would load it for every module, none of which needs it.
// The replace directive to the checkout's root module serves the test's
// use of batontest/testenv only; with it, a few golang.org/x modules build
// into kube-apiserver at the root module's (newer) versions, not
// k8s.io/kubernetes's pins.
package kubeapiserver
