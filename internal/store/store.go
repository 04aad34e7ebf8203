// Package store is toolq's database: queues, depth readings, CloudWatch datapoints, message
// samples, move tasks, collector runs and the collector's sight of AWS, the cost estimate, the
// audit log, API tokens and browser sessions. It is a SQLite file by default, or a PostgreSQL
// database (for replicas, see Open), with the same schema and the same queries on both.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
	_ "modernc.org/sqlite" // the "sqlite" database/sql driver

	"github.com/toolq/toolq/migrations"
)

// Store is toolq's database.
//
// On SQLite it holds two pools over one file: every write goes through wdb, a single connection
// whose transactions begin IMMEDIATE, so the collector's loops and the API queue up in Go instead
// of failing with SQLITE_BUSY; reads go through db, several query-only connections that WAL lets
// read while the writer writes. On PostgreSQL, which has no single-writer rule, db and wdb are
// one pool.
type Store struct {
	db  dbPool // readers
	wdb dbPool // the writer(s)
	d   dialect
	url string // what Open was given, for Postgres; "" on SQLite
	// path and file are the SQLite file as opened, to notice it vanish or be replaced
	// (checkFile); "" and nil on PostgreSQL.
	path string
	file os.FileInfo

	metricMu  sync.Mutex
	metricIDs map[string]int64 // metric_names cache: names never change once stored

	// attributes are each queue's attributes, decoded once per change: a queue's stored
	// attributes are read at every snapshot and change only when SQS says something new.
	attributes attributeMaps

	// tracer is told of every statement (Trace); db and wdb point to it.
	tracer tracer
}

// readConns bounds the SQLite reader pool: the machine is small, and SQLite readers are cheap
// but not free.
const readConns = 4

// postgresConns bounds the PostgreSQL pool of one replica: a managed database's connection
// limit is shared by every replica, and toolq's writes are small.
const postgresConns = 8

// IsPostgresURL reports whether a database setting names a PostgreSQL database
// (postgres://… or postgresql://…) rather than a SQLite file.
func IsPostgresURL(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// Open opens the database named by db and applies the embedded migrations: a PostgreSQL URL
// (postgres://user:password@host:5432/toolq?sslmode=require), or else the path of a SQLite file,
// created if needed, with WAL, a busy timeout and foreign keys (":memory:" is not supported:
// use a file in t.TempDir()). It refuses (ErrSchema) a database whose schema is newer than the
// migrations, or that lacks a table or column they made.
func Open(ctx context.Context, db string) (*Store, error) {
	if IsPostgresURL(db) {
		return openPostgres(ctx, db)
	}
	return openSQLite(ctx, db)
}

func openSQLite(ctx context.Context, path string) (*Store, error) {
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("store: open %q: want a plain file path or a postgres:// URL", path)
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
	if err := migrate(ctx, wdb, sqliteDialect); err != nil {
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
	fi, err := os.Stat(path)
	if err != nil {
		db.Close()
		wdb.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	s := &Store{d: sqliteDialect, path: path, file: fi, metricIDs: make(map[string]int64)}
	s.db = dbPool{db: db, d: sqliteDialect, trace: &s.tracer, stmts: newStmtCache(db)}
	s.wdb = dbPool{db: wdb, d: sqliteDialect, trace: &s.tracer, stmts: newStmtCache(wdb)}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("store: open %q: %w", path, err)
	}
	return s, nil
}

func openPostgres(ctx context.Context, dbURL string) (*Store, error) {
	shown := RedactURL(dbURL)
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	db.SetMaxOpenConns(postgresConns)
	db.SetMaxIdleConns(postgresConns)
	db.SetConnMaxIdleTime(5 * time.Minute)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	// Replicas that start together each try to migrate: goose's Postgres provider takes a
	// session advisory lock around its work (goose.WithSessionLocker), so one migrates and the
	// others then find nothing to do.
	if err := migrate(ctx, db, postgresDialect); err != nil {
		db.Close()
		return nil, fmt.Errorf("store: open %s: %w", shown, err)
	}
	s := &Store{d: postgresDialect, url: dbURL, metricIDs: make(map[string]int64)}
	s.db = dbPool{db: db, d: postgresDialect, trace: &s.tracer}
	s.wdb = s.db
	return s, nil
}

// RedactURL returns a database setting fit for logs and pages: a URL's password replaced by
// "xxxxx"; a file path unchanged.
func RedactURL(db string) string {
	u, err := url.Parse(db)
	if err != nil || u.Scheme == "" {
		if IsPostgresURL(db) {
			return "postgres://(unparseable URL)"
		}
		return db
	}
	return u.Redacted()
}

// Dialect names the engine: "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.d.String() }

// migrate applies every pending migration of the dialect, after checking that the database is
// not newer than them, and then that it has every table and column they made.
func migrate(ctx context.Context, db *sql.DB, d dialect) error {
	if err := checkVersion(ctx, db, d); err != nil {
		return err
	}
	p, err := newMigrationProvider(db, d)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return checkTables(ctx, db, d)
}

// newMigrationProvider returns goose's provider over the dialect's migrations: migrations/*.sql
// for SQLite, migrations/postgres/*.sql for PostgreSQL, the same versions in both.
func newMigrationProvider(db *sql.DB, d dialect) (*goose.Provider, error) {
	// Out of order: versions were numbered as they were written, and one landed before another
	// written earlier (00010 before 00005 on some development databases). The migrations touch
	// separate tables and columns, so applying a missing older one later is safe.
	var (
		files fs.FS = migrations.SQLite
		gd          = goose.DialectSQLite3
		opts        = []goose.ProviderOption{goose.WithAllowOutofOrder(true)}
	)
	if d == postgresDialect {
		sub, err := fs.Sub(migrations.Postgres, "postgres")
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		files, gd = sub, goose.DialectPostgres
		locker, err := lock.NewPostgresSessionLocker()
		if err != nil {
			return nil, fmt.Errorf("migrations: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(gd, db, files, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	return p, nil
}

// Close closes the database. On SQLite it first lets SQLite refresh the statistics its query
// planner uses (PRAGMA optimize, as SQLite recommends before closing), best effort.
func (s *Store) Close() error {
	if s.d == postgresDialect {
		return s.db.db.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.wdb.ExecContext(ctx, "PRAGMA optimize")
	return errors.Join(s.db.stmts.close(), s.wdb.stmts.close(), s.db.db.Close(), s.wdb.db.Close())
}

// Ping checks that the database answers, that its file is still the one opened (ErrGone) and
// that no table or column went missing since (ErrSchema): for /readyz and the status page.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	if err := s.checkFile(); err != nil {
		return err
	}
	return checkTables(ctx, s.db.db, s.d)
}

// inTx runs fn in a write transaction, committing when fn returns nil.
func (s *Store) inTx(ctx context.Context, fn func(tx *dbTx) error) error {
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
	if isForeignKeyViolation(err) {
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
