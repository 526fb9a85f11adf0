// Package sqlite registers the pure-Go SQLite driver (modernc.org/sqlite)
// that sqllock's sqlite:// URLs open. Import it for its side effect, next
// to sqllock:
//
//	import (
//		_ "github.com/baton-go/baton/sqllock"        // postgres://, mysql://, sqlite://
//		_ "github.com/baton-go/baton/sqllock/sqlite" // the driver sqlite:// needs
//	)
//
// sqllock itself does not import it, so that programs on PostgreSQL or
// MySQL do not carry an SQLite implementation they never use. A program
// that registers another driver under the name "sqlite" does not need it.
package sqlite

import _ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
