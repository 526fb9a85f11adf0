package sqllock

import (
	"context"
	"database/sql"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/baton-go/baton/fence"
)

// On MariaDB the token source is a sequence, <prefix>token_seq, as on
// PostgreSQL: a mutex attempt takes its token inside its one statement
// (NEXTVAL in the row's upsert), and no acquire of one name waits for
// another's on a shared row. MySQL has no sequences and keeps the counter
// table, <prefix>tokens: there an attempt bumps the counter in a
// statement of its own before the row's, and every acquire of every name
// updates that one row. On the bench database a lock+unlock through the
// sequence cost 440 µs against 560–620 µs through the counter.
//
// A table that clients of an earlier version used moves to the sequence
// at Migrate: the sequence starts above the counter's value, with room
// for bumps in flight, and the counter is then retired, set to the
// largest BIGINT UNSIGNED, so that an earlier version's next bump fails
// with an out-of-range error instead of handing out a token below the
// sequence's. Such clients fail their acquires until they are upgraded;
// they never grant a token that goes back. A client of this version looks
// the token source up at its first use, and again when a bump of the
// counter fails: one that started with Options.NoMigrate before the
// sequence existed finds the counter retired and the sequence there, and
// moves to it (see store.moveToSequence).

// retiredCounter is the value of a retired counter (BIGINT UNSIGNED's
// largest: any bump overflows).
const retiredCounter uint64 = math.MaxUint64

// counterRoom is how far above the counter's value the sequence starts:
// room for bumps by clients of an earlier version between the read of
// the counter and its retirement, which are then still below every token
// of the sequence.
const counterRoom = 1 << 20

// migrateSequence creates the sequence on MariaDB and retires the counter
// (see above). Every step is safe to race: SETVAL never moves a sequence
// back, and the counter is retired by whoever gets there first.
func migrateSequence(ctx context.Context, db *sql.DB, q *statements) error {
	if q.noSeq {
		return nil
	}
	var version string
	if err := db.QueryRowContext(ctx, `SELECT VERSION()`).Scan(&version); err != nil {
		return err
	}
	if !strings.Contains(version, "MariaDB") {
		return nil
	}
	if _, err := db.ExecContext(ctx, `CREATE SEQUENCE IF NOT EXISTS `+q.seq); err != nil {
		return err
	}
	v, err := readCounter(ctx, db, q)
	if err != nil {
		return err
	}
	if v == retiredCounter {
		return nil
	}
	if err := startSequenceAbove(ctx, db, q, v+counterRoom); err != nil {
		return err
	}
	retired := strconv.FormatUint(retiredCounter, 10)
	res, err := db.ExecContext(ctx, `UPDATE `+q.tokens+` SET v = `+retired+` + 0 * LAST_INSERT_ID(v)
WHERE id = 1 AND v < `+retired)
	if err != nil {
		return err
	}
	last, err := res.LastInsertId() // the counter's value when it was retired
	if err != nil {
		return err
	}
	if uint64(last) > v+counterRoom { // more bumps than the room: start above them too
		return startSequenceAbove(ctx, db, q, uint64(last))
	}
	return nil
}

// startSequenceAbove makes the sequence's next value larger than n, unless
// it is already (SETVAL takes a literal only).
func startSequenceAbove(ctx context.Context, db *sql.DB, q *statements, n uint64) error {
	_, err := db.ExecContext(ctx, fmt.Sprintf(`SELECT SETVAL(%s, %d)`, q.seq, n))
	return err
}

// usesSequence reports whether q's table takes its tokens from the
// sequence: on MariaDB once Migrate (or whoever runs the schema by hand)
// created it.
func usesSequence(ctx context.Context, db *sql.DB, q *statements) (bool, error) {
	if q.d != fence.MySQL || q.noSeq {
		return false, nil
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM information_schema.tables
WHERE table_schema = DATABASE() AND table_name = ? AND table_type = 'SEQUENCE'`, q.seq).Scan(&n)
	return n > 0, err
}

// moveToSequence handles a failed bump of the counter: when a migration
// has retired the counter since this client looked its token source up
// (a NoMigrate client that started before Migrate ran), the client moves
// to the sequence, and moveToSequence reports true so that the caller
// takes its token there. The sequence starts above every token the
// counter gave, so tokens still go up. It reads on the pool, never in a
// transaction, whose snapshot may predate the retirement, and not at all
// once ctx has ended (a bump cut by the attempt's timeout).
func (s *store) moveToSequence(ctx context.Context) bool {
	if s.q.d != fence.MySQL || s.q.noSeq || s.seq.Load() || ctx.Err() != nil {
		return false
	}
	if v, err := readCounter(ctx, s.db, s.q); err != nil || v != retiredCounter {
		return false
	}
	seq, err := usesSequence(ctx, s.db, s.q)
	if err != nil || !seq {
		return false
	}
	s.seq.Store(true)
	return true
}

// readCounter reads the MySQL dialect's token counter.
func readCounter(ctx context.Context, db *sql.DB, q *statements) (uint64, error) {
	var v uint64
	err := db.QueryRowContext(ctx, `SELECT v FROM `+q.tokens+` WHERE id = 1`).Scan(&v)
	return v, err
}
