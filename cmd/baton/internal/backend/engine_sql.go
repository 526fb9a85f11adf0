package backend

import (
	"fmt"
	"time"

	"github.com/baton-go/baton"
	"github.com/baton-go/baton/cmd/baton/internal/cli"
)

// sqlPower: a --ttl of at least minSQLTTL, no clean, the rules of a
// sqlite:// file (sqlite_file.go). The
// schema is created where the engine has one (migrate).
var sqlPower = power{
	checkHold: func(cmd string, cfg *Config, _ Mode) error {
		if cfg.TTL < minSQLTTL {
			return cli.Usagef("%s: --ttl %v: the SQL engine (%s) needs at least %v", cmd, cfg.TTL, sqlEngine(cfg.URL.Scheme), minSQLTTL)
		}
		return nil
	},
	noClean: func(u URL) error {
		return cli.Usagef("clean: not applicable to the SQL engine (%s): it leaves no residue to remove. "+
			"A released row keeps only its token; an expired one is free to the next acquire by the database clock; "+
			"run baton inspect to see the holders, the waiters and their deadlines", sqlEngine(u.Scheme))
	},
	before: sqlBefore,
}

// minSQLTTL is sqllock's smallest TTL: below it the renewal and drift
// margins stop making sense.
const minSQLTTL = 300 * time.Millisecond

// sqlEngine is the BATON_ENGINE of a SQL URL scheme.
func sqlEngine(scheme string) string {
	if scheme == "postgresql" {
		return "postgres"
	}
	return scheme
}

func sqlBefore(d *dial) ([]baton.Option, error) {
	if d.u.Scheme == "sqlite" && !d.cfg.Embedded {
		// The embedded default's rules that a shared file does not break.
		// SQLite creates the file but not its directory; a missing one
		// will not appear by retrying until --connect-timeout.
		if err := secureSQLiteFile(localPath(d.u)); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", baton.ErrUnavailable, d.u.Redacted, err)
		}
	}
	return nil, nil
}
