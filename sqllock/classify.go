package sqllock

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/baton-go/baton"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
)

// Classify marks a database error with baton.ErrAuth when the server
// refused the credentials, the privileges or the TLS handshake, and with
// baton.ErrUnavailable otherwise, so that a caller tells a login to fix
// from a server to wait for (baton's CLI exits 77 or 69 on them). An
// error already marked with either, and nil, are returned as they are.
// Open's, Migrate's and Inspect's errors come marked.
func Classify(err error) error {
	if err == nil || errors.Is(err, baton.ErrAuth) || errors.Is(err, baton.ErrUnavailable) {
		return err
	}
	if refused(err) {
		return fmt.Errorf("%w: %w", baton.ErrAuth, err)
	}
	return fmt.Errorf("%w: %w", baton.ErrUnavailable, err)
}

// refused reports whether err is an authentication, authorization or TLS
// failure, as pgx, go-sql-driver/mysql and crypto/tls report them.
func refused(err error) bool {
	var (
		pe  *pgconn.PgError
		me  *mysql.MySQLError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		ce  x509.CertificateInvalidError
		rhe tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &pe):
		// 28000 invalid_authorization_specification (pg_hba.conf, no
		// SSL), 28P01 invalid_password, 42501 insufficient_privilege.
		return pe.Code == "28000" || pe.Code == "28P01" || pe.Code == "42501"
	case errors.As(err, &me):
		// 1044 no access to the database, 1045 access denied (user or
		// password), 1142 command denied (no CREATE), 1698 access denied
		// (socket/plugin auth), 3159 secure transport required.
		switch me.Number {
		case 1044, 1045, 1142, 1698, 3159:
			return true
		}
		return false
	case errors.Is(err, mysql.ErrNoTLS), errors.As(err, &ua), errors.As(err, &he), errors.As(err, &ce), errors.As(err, &rhe):
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "server refused TLS connection") || strings.Contains(msg, "x509:") ||
		strings.Contains(msg, "tls: ")
}
