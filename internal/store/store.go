// Package store is toolq's SQLite database: queues, depth readings, CloudWatch datapoints,
// message samples, move tasks, collector runs and the collector's sight of AWS, the cost
// estimate, the audit log, API tokens and browser sessions.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/toolq/toolq/migrations"
)

// Store is toolq's SQLite database.
//
// It holds two pools over one file: every write goes through wdb, a single connection whose
// transactions begin IMMEDIATE, so the collector's loops and the API queue up in Go instead of
// failing with SQLITE_BUSY; reads go through db, several query-only connections that WAL lets
// read while the writer writes.
type Store struct {
	db  *sql.DB // readers
	wdb *sql.DB // the one writer

	metricMu  sync.Mutex
	metricIDs map[string]int64 // metric_names cache: names never change once stored

	depth      recentDepth   // the newest and the recent depth samples, kept as they are written
	attributes attributeMaps // each queue's attributes, decoded once per change
	gen        generations   // committed writes per cached table (readcache.go)
	cache      readCache
}

// readConns bounds the reader pool: the machine is small, and SQLite readers are cheap but not free.
const readConns = 4

// Open opens (creating if needed) the SQLite file at path, sets WAL, a busy timeout and foreign
// keys, and applies the embedded migrations. ":memory:" is not supported (use a file in t.TempDir()).
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("store: open %q: want a plain file path", path)
	}
	// The busy timeout still matters with one writer: another process (a second dashboard, the
	// sqlite3 shell) may hold the lock, and WAL checkpoints briefly block readers.
	base := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)"
	// journal_size_limit truncates the WAL back to 4 MiB after each checkpoint, so a burst of
	// writes (a backfill of many queues) does not leave a large -wal file behind for good.
	wdb, err := sql.Open("sqlite", base+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"+
		"&_pragma=journal_size_limit(4194304)&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	wdb.SetMaxOpenConns(1)
	if err := migrate(ctx, wdb); err != nil {
		wdb.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	// Readers open after the writer has switched the file to WAL, which is persistent.
	db, err := sql.Open("sqlite", base+"&_pragma=query_only(1)")
	if err != nil {
		wdb.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	db.SetMaxOpenConns(readConns)
	db.SetMaxIdleConns(readConns)
	s := &Store{db: db, wdb: wdb, metricIDs: make(map[string]int64)}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	return s, nil
}

// migrate applies every pending migration.
func migrate(ctx context.Context, db *sql.DB) error {
	p, err := newMigrationProvider(db)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

func newMigrationProvider(db *sql.DB) (*goose.Provider, error) {
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.FS)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Close closes the database. It first lets SQLite refresh the statistics its query planner uses
// (PRAGMA optimize, as SQLite recommends before closing), best effort.
func (s *Store) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.wdb.ExecContext(ctx, "PRAGMA optimize")
	return errors.Join(s.db.Close(), s.wdb.Close())
}

// Ping checks that the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// inTx runs fn in a write transaction, committing when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.wdb.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

// ms turns a time into unix milliseconds, the zero time into 0.
func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// msCeil is ms rounded up: the first millisecond that is not before t, for the lower bound of
// an inclusive range that t may start within a millisecond.
func msCeil(t time.Time) int64 {
	v := ms(t)
	if fromMS(v).Before(t) {
		v++
	}
	return v
}

// fromMS is the inverse of ms: 0 is the zero time; others come back in UTC.
func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}

// notFound maps sql.ErrNoRows to ErrNotFound, keeping other errors.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}

// rowScanner is what *sql.Row and *sql.Rows share, so that one scan function serves both.
type rowScanner interface {
	Scan(dest ...any) error
}

// notFoundOnFK maps a foreign key violation (a row naming a queue that does not exist) to
// ErrNotFound, keeping other errors.
func notFoundOnFK(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

// execOne runs a write that must touch a row: ErrNotFound when it touched none.
func (s *Store) execOne(ctx context.Context, query string, args ...any) error {
	res, err := s.wdb.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}
