package backend

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestKubeDialHosts: a k8s:// URL that names no host dials its
// kubeconfig's server (443 when the server names no port); one that
// names a host dials that host; a kubeconfig that cannot be read is a
// usage error.
func TestKubeDialHosts(t *testing.T) {
	dir := t.TempDir()
	n := 0
	kubeconfig := func(server string) string {
		n++
		path := filepath.Join(dir, "kubeconfig-"+strconv.Itoa(n))
		cfg := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + server +
			"\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	for _, tt := range []struct{ raw, want string }{
		{"k8s://?kubeconfig=" + kubeconfig("https://kube.example:6443"), "kube.example:6443"},
		{"k8s://?kubeconfig=" + kubeconfig("https://kube.example"), "kube.example:443"},
		{"k8s://?kubeconfig=" + kubeconfig("https://[::1]:7443/prefix"), "[::1]:7443"},
		{"k8s://127.0.0.1:9443?kubeconfig=" + kubeconfig("https://kube.example:6443"), "127.0.0.1:9443"},
	} {
		u, err := SplitURL(tt.raw)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DialHosts(u); err != nil || !slices.Equal(got, []string{tt.want}) {
			t.Errorf("DialHosts(%s) = %q, %v; want [%s]", tt.raw, got, err, tt.want)
		}
	}
	u, err := SplitURL("k8s://?kubeconfig=" + filepath.Join(dir, "missing"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DialHosts(u); err == nil {
		t.Errorf("DialHosts of a missing kubeconfig = %q, nil; want an error", got)
	}
}
