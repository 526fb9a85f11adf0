package kubelock_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/batontest/testenv"
)

// kubeconfigWithServer writes a copy of the test kubeconfig whose clusters
// name server instead of the apiserver's address.
func kubeconfigWithServer(t *testing.T, server string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(testenv.K8s(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range cfg.Clusters {
		cl.Server = server
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestOpenDialHost: a k8s:// URL's host:port is dialled instead of the
// kubeconfig's server, whose name TLS still verifies the certificate by.
// The kubeconfig names localhost on a closed port; the URL names the
// apiserver's address: Open works, through the URL's address. A
// kubeconfig naming a host the certificate is not for fails, although
// the address dialled is the apiserver's.
func TestOpenDialHost(t *testing.T) {
	t.Parallel()
	addr := testenv.K8sAddr(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, closedPort, _ := net.SplitHostPort(ln.Addr().String())
	_ = ln.Close()

	good := kubeconfigWithServer(t, "https://localhost:"+closedPort)
	c, err := baton.Open(opCtx(t, 10*time.Second), "k8s://"+addr+"?kubeconfig="+good, baton.WithTTL(testTTL))
	if err != nil {
		t.Fatalf("Open through the URL's host = %v", err)
	}
	m, _ := c.Mutex(lockName(t))
	l, err := m.Lock(opCtx(t, 10*time.Second))
	if err != nil {
		t.Fatalf("Lock through the URL's host = %v", err)
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Error(err)
	}
	_ = c.Close()

	wrong := kubeconfigWithServer(t, "https://not-the-apiserver.invalid:"+closedPort)
	c, err = baton.Open(opCtx(t, 10*time.Second), "k8s://"+addr+"?kubeconfig="+wrong, baton.WithConnectTimeout(time.Second))
	if err == nil {
		_ = c.Close()
		t.Fatal("Open with a kubeconfig naming a host the certificate is not for = nil error")
	}
	if !strings.Contains(err.Error(), "not-the-apiserver.invalid") {
		t.Errorf("Open with a certificate for another name = %v, want the TLS refusal naming the kubeconfig's host", err)
	}
	if errors.Is(err, baton.ErrInvalidOption) {
		t.Errorf("Open with a certificate for another name = %v, a usage error", err)
	}
	// A refused certificate is a setting to fix (the CLI's exit 77), not
	// a server to wait for: Open fails at once with ErrAuth.
	if !errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		t.Errorf("Open with a certificate for another name = %v, want ErrAuth alone", err)
	}
	t.Logf("certificate for another name: %v", err)
}
