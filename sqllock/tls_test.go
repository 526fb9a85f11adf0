package sqllock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/baton-go/baton/batontest/testenv"
	"github.com/baton-go/baton/sqllock"
	"github.com/go-sql-driver/mysql"
)

// tlsPool returns the test CA of the TLS servers (BATON_TEST_TLS_DIR).
func tlsPool(t *testing.T) *x509.CertPool {
	t.Helper()
	pem, err := os.ReadFile(filepath.Join(testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates"), "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("ca.pem holds no certificate")
	}
	return pool
}

// lockOverTLS takes and releases a mutex on db, then checks on the server
// that the connection is encrypted (query returns true or a cipher).
func lockOverTLS(t *testing.T, db *sql.DB, query string) {
	t.Helper()
	c := newClient(t, db, sqllock.Options{})
	l := lock(t, c, uniqueName(t.Name()))
	if l.Token() == 0 {
		t.Error("token 0, want a positive token")
	}
	if err := l.Release(opCtx(t, 5*time.Second)); err != nil {
		t.Errorf("Release() = %v", err)
	}
	var enc string
	if err := db.QueryRowContext(opCtx(t, 5*time.Second), query).Scan(&enc); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if enc == "" || enc == "false" || enc == "f" {
		t.Errorf("%s = %q: the connection is not encrypted", query, enc)
	}
}

// TestPostgresTLS: on a PostgreSQL that takes only hostssl connections
// with scram-sha-256, a client verifying the server (sslmode=verify-full,
// sslrootcert) locks and unlocks over TLS; a client trusting another CA
// is refused before it sends the password.
func TestPostgresTLS(t *testing.T) {
	raw := testenv.Require(t, "BATON_TEST_PG_TLS", "PostgreSQL with TLS and scram-sha-256")
	db, err := sql.Open("pgx", raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	lockOverTLS(t, db, "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()")

	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("sslrootcert", filepath.Join(testenv.Require(t, "BATON_TEST_TLS_DIR", "TLS test certificates"), "rogue-ca.pem"))
	u.RawQuery = q.Encode()
	bad, err := sql.Open("pgx", u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bad.Close() })
	err = bad.PingContext(opCtx(t, 5*time.Second))
	if err == nil || !strings.Contains(err.Error(), "x509") {
		t.Errorf("Ping trusting another CA = %v, want an x509 verification error", err)
	}
}

// TestMySQLTLS: on a MariaDB whose user is REQUIRE SSL, a client with a
// registered TLS config holding the test CA locks and unlocks over TLS;
// the same user without TLS is refused (1045).
func TestMySQLTLS(t *testing.T) {
	raw := testenv.Require(t, "BATON_TEST_MYSQL_TLS", "MariaDB with TLS")
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := mysql.RegisterTLSConfig("baton-test", &tls.Config{RootCAs: tlsPool(t), MinVersion: tls.VersionTLS12}); err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName = "tcp", u.Host, strings.TrimPrefix(u.Path, "/")
	cfg.User = u.User.Username()
	cfg.Passwd, _ = u.User.Password()
	cfg.InterpolateParams, cfg.ParseTime, cfg.TLSConfig = true, true, "baton-test"
	db := openDB(t, "mysql", cfg.FormatDSN())
	lockOverTLS(t, db, "SELECT VARIABLE_VALUE FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'Ssl_cipher'")

	cfg.TLSConfig = "false"
	plain, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = plain.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var me *mysql.MySQLError
	if err := plain.PingContext(ctx); !errors.As(err, &me) || me.Number != 1045 {
		t.Errorf("Ping without TLS = %v, want error 1045 (the user requires SSL)", err)
	}
}
