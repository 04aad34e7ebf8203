package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// ErrSchema is returned by Open for a database this binary must not use: its schema is newer
// than the binary's migrations, or it lacks a table or a column its version should have. Ping
// returns it too when a table went missing under a running dashboard.
var ErrSchema = errors.New("store: the database's schema does not match this toolq")

// ErrGone is returned by Ping when the database file was deleted or replaced under the running
// dashboard: SQLite goes on writing to the file it opened, which nobody will ever read again.
var ErrGone = errors.New("store: the database file is gone")

// schema is what the migrations make: each table's columns, by table name.
type schema map[string][]string

// expected is the schema this binary's migrations make, found once by applying them to a
// database in memory: the migrations are its only description. The SQLite migrations serve for
// both engines: the PostgreSQL ones make the same tables and columns (TestBothEnginesHaveOneSchema).
var expected = sync.OnceValues(func() (schema, error) {
	db, err := sql.Open("sqlite", "file:expected-schema?mode=memory")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection, one in-memory database
	ctx := context.Background()
	p, err := newMigrationProvider(db, sqliteDialect)
	if err != nil {
		return nil, err
	}
	if _, err := p.Up(ctx); err != nil {
		return nil, fmt.Errorf("migrations in memory: %w", err)
	}
	return readSchema(ctx, db, sqliteDialect)
})

// readSchema reads the tables and columns of a database, goose's and the engine's own left out.
func readSchema(ctx context.Context, db *sql.DB, d dialect) (schema, error) {
	query := `SELECT m.name, c.name FROM sqlite_schema AS m, pragma_table_info(m.name) AS c
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite%' AND m.name NOT LIKE 'goose%' ORDER BY m.name, c.cid`
	if d == postgresDialect {
		query = `SELECT table_name, column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name NOT LIKE 'goose%' ORDER BY table_name, ordinal_position`
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	s := schema{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			return nil, fmt.Errorf("read schema: %w", err)
		}
		s[table] = append(s[table], column)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	return s, nil
}

// missing returns what want has that s lacks, as "table" or "table.column", sorted.
func (s schema) missing(want schema) []string {
	var out []string
	for table, columns := range want {
		have, ok := s[table]
		if !ok {
			out = append(out, table)
			continue
		}
		for _, c := range columns {
			if !slices.Contains(have, c) {
				out = append(out, table+"."+c)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkVersion refuses a database migrated by a newer toolq: goose would leave its unknown
// versions alone and this binary would then write rows of a schema it does not know.
func checkVersion(ctx context.Context, db *sql.DB, d dialect) error {
	p, err := newMigrationProvider(db, d)
	if err != nil {
		return err
	}
	current, target, err := p.GetVersions(ctx)
	if err != nil {
		return fmt.Errorf("schema version: %w", err)
	}
	if current > target {
		return fmt.Errorf("%w: its schema is version %d, newer than this toolq's %d: a newer toolq used it; run that version, or give this one another --db",
			ErrSchema, current, target)
	}
	return nil
}

// checkTables refuses a database that lacks a table or a column its migrations made (dropped
// or altered by hand, or damaged).
func checkTables(ctx context.Context, db *sql.DB, d dialect) error {
	want, err := expected()
	if err != nil {
		return err
	}
	have, err := readSchema(ctx, db, d)
	if err != nil {
		return err
	}
	if gone := have.missing(want); len(gone) > 0 {
		return fmt.Errorf("%w: it lacks %s, which its schema version should have: it was changed by hand or damaged; restore it from a backup, or give toolq another --db",
			ErrSchema, strings.Join(gone, ", "))
	}
	return nil
}

// checkFile reports ErrGone when the file at s.path is no longer the one the store opened; on
// PostgreSQL, which has no file, nil.
func (s *Store) checkFile() error {
	if s.path == "" {
		return nil
	}
	fi, err := os.Stat(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s was deleted while toolq ran; what it writes now is lost when it stops", ErrGone, s.path)
	case err != nil:
		return fmt.Errorf("%w: %s cannot be read: %w", ErrGone, s.path, err)
	case !os.SameFile(fi, s.file):
		return fmt.Errorf("%w: %s was replaced by another file while toolq ran; what it writes goes to the old one", ErrGone, s.path)
	}
	return nil
}
