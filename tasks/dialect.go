package tasks

import (
	"database/sql"

	"github.com/baton-go/baton/fence"
	"github.com/baton-go/baton/internal/sqlflavor"
)

// flavor is the SQL dialect as this package's statements see it; shared
// with the other SQL-backed package in internal/sqlflavor.
type flavor = sqlflavor.Flavor

func flavorOf(db *sql.DB, d fence.Dialect) (*flavor, error) { return sqlflavor.Of(db, d, "tasks") }

func invalid(format string, args ...any) error { return sqlflavor.Invalid("tasks", format, args...) }
