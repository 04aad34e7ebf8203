package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/toolq/toolq/internal/pgtest"
)

func TestOpenAppliesMigrationsAndReopens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A path with characters that mean something in a URI must still name that file.
	path := filepath.Join(t.TempDir(), "my dir?#%", "toolq.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at %q: %v", path, err)
	}
	if _, err := s.UpsertQueue(ctx, Queue{Name: "a", ARN: "arn:a", LastSeen: t0}); err != nil {
		t.Fatalf("UpsertQueue: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// A second Open finds nothing to apply and keeps the data.
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatalf("re-Open: %v", err)
	}
	defer s.Close()
	qs, err := s.ListQueues(ctx, QueueFilter{})
	if err != nil || len(qs) != 1 {
		t.Fatalf("ListQueues after re-open = %v, %v; want one queue", qs, err)
	}
	var mode string
	if err := s.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.db.QueryRowContext(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
}

func TestMigrationsDownAndUpAgain(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		p, err := newMigrationProvider(s.wdb.db, s.d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.DownTo(ctx, 0); err != nil {
			t.Fatalf("DownTo(0): %v", err)
		}
		if tables := tablesOf(t, s); len(tables) != 0 {
			t.Fatalf("tables left after every Down = %v; want none", tables)
		}
		if _, err := p.Up(ctx); err != nil {
			t.Fatalf("Up after Down: %v", err)
		}
		if _, err := s.UpsertQueue(ctx, Queue{Name: "a", ARN: "arn:a", LastSeen: t0}); err != nil {
			t.Fatalf("UpsertQueue after Down/Up: %v", err)
		}
	})
}

// TestBothEnginesHaveOneSchema: after migrating, SQLite and PostgreSQL have the same tables
// with the same columns, so that a migration added to one directory and forgotten in the
// other fails here, not in production.
func TestBothEnginesHaveOneSchema(t *testing.T) {
	t.Parallel()
	lite, pg := openTest(t), openPostgresTest(t)
	liteCols, pgCols := columnsOf(t, lite), columnsOf(t, pg)
	if !reflect.DeepEqual(liteCols, pgCols) {
		for table, cols := range liteCols {
			if !slices.Equal(cols, pgCols[table]) {
				t.Errorf("table %s: SQLite has columns %v, PostgreSQL %v", table, cols, pgCols[table])
			}
		}
		for table := range pgCols {
			if _, ok := liteCols[table]; !ok {
				t.Errorf("table %s is only in PostgreSQL", table)
			}
		}
	}
	litev, _ := mustProvider(t, lite).GetDBVersion(context.Background())
	pgv, _ := mustProvider(t, pg).GetDBVersion(context.Background())
	if litev != pgv || litev == 0 {
		t.Errorf("schema versions: SQLite %d, PostgreSQL %d; want one version", litev, pgv)
	}
}

func mustProvider(t *testing.T, s *Store) *goose.Provider {
	t.Helper()
	p, err := newMigrationProvider(s.wdb.db, s.d)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// tablesOf lists the store's tables (goose's own left out), sorted.
func tablesOf(t *testing.T, s *Store) []string {
	t.Helper()
	q := "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite%' ORDER BY name"
	if s.d == postgresDialect {
		q = "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_name NOT LIKE 'goose%' ORDER BY table_name"
	}
	return queryStrings(t, s, q)
}

// columnsOf maps each table to its column names, sorted.
func columnsOf(t *testing.T, s *Store) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range tablesOf(t, s) {
		q := "SELECT name FROM pragma_table_info('" + table + "') ORDER BY name"
		if s.d == postgresDialect {
			q = "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = '" + table + "' ORDER BY column_name"
		}
		out[table] = queryStrings(t, s, q)
	}
	return out
}

func queryStrings(t *testing.T, s *Store, q string) []string {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenRefusesMemory(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory"} {
		if _, err := Open(context.Background(), path); err == nil {
			t.Errorf("Open(%q) succeeded; want an error", path)
		}
	}
}

func TestReadersCannotWrite(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	_, err := s.db.ExecContext(context.Background(), "DELETE FROM queues")
	if err == nil {
		t.Fatal("a write through the reader pool succeeded; want query_only to refuse it")
	}
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatal("unexpected ErrNoRows")
	}
}

// TestWriterPragmas: on SQLite, the writer connection runs in WAL with a bounded journal and foreign keys.
func TestWriterPragmas(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	var mode string
	var limit, fk int64
	if err := s.wdb.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := s.wdb.QueryRowContext(t.Context(), "PRAGMA journal_size_limit").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	if err := s.wdb.QueryRowContext(t.Context(), "PRAGMA foreign_keys").Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || limit != 4<<20 || fk != 1 {
		t.Errorf("journal_mode %q, journal_size_limit %d, foreign_keys %d; want wal, %d, 1", mode, limit, fk, 4<<20)
	}
}

func TestNumberPlaceholders(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"SELECT 1", "SELECT 1"},
		{"WHERE a = ? AND b = ?", "WHERE a = $1 AND b = $2"},
		{"WHERE a = ?1 AND b = ?2 OR c = ?1", "WHERE a = $1 AND b = $2 OR c = $1"},
		{"WHERE a = '?' AND b = ?", "WHERE a = '?' AND b = $1"},
		{`WHERE "we?rd" = ?`, `WHERE "we?rd" = $1`},
		{"-- what's this?\nWHERE a = ?", "-- what's this?\nWHERE a = $1"},
		{"LIMIT ?10", "LIMIT $10"},
	}
	for _, tt := range tests {
		if got := numberPlaceholders(tt.in); got != tt.want {
			t.Errorf("numberPlaceholders(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
	if got := sqliteDialect.rebind("SET x = greatest(t.x, excluded.x)"); got != "SET x = max(t.x, excluded.x)" {
		t.Errorf("SQLite rebind of greatest = %q", got)
	}
}

// TestSchemaChecksOnPostgres: on PostgreSQL as on SQLite, a dropped table makes Ping fail with
// ErrSchema, and Open refuses the database.
func TestSchemaChecksOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.DB(t)
	s := openURL(t, url)
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of a sound database: %v", err)
	}
	if _, err := s.wdb.ExecContext(ctx, "DROP TABLE replicas"); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); !errors.Is(err, ErrSchema) {
		t.Errorf("Ping after a table was dropped = %v; want ErrSchema", err)
	}
	if _, err := Open(ctx, url); !errors.Is(err, ErrSchema) {
		t.Errorf("Open of a database without a table = %v; want ErrSchema", err)
	}
}
