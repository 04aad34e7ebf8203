package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenAppliesMigrationsAndReopens(t *testing.T) {
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
	ctx := context.Background()
	s := openTest(t)
	p, err := newMigrationProvider(s.wdb)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 0); err != nil {
		t.Fatalf("DownTo(0): %v", err)
	}
	var n int
	err = s.db.QueryRowContext(ctx,
		"SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'goose%' AND name NOT LIKE 'sqlite%'").Scan(&n)
	if err != nil || n != 0 {
		t.Fatalf("tables left after every Down = %d, %v; want 0", n, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("Up after Down: %v", err)
	}
	if _, err := s.UpsertQueue(ctx, Queue{Name: "a", ARN: "arn:a", LastSeen: t0}); err != nil {
		t.Fatalf("UpsertQueue after Down/Up: %v", err)
	}
}

func TestOpenRefusesMemory(t *testing.T) {
	for _, path := range []string{"", ":memory:", "file:x.db?mode=memory"} {
		if _, err := Open(context.Background(), path); err == nil {
			t.Errorf("Open(%q) succeeded; want an error", path)
		}
	}
}

func TestReadersCannotWrite(t *testing.T) {
	s := openTest(t)
	_, err := s.db.ExecContext(context.Background(), "DELETE FROM queues")
	if err == nil {
		t.Fatal("a write through the reader pool succeeded; want query_only to refuse it")
	}
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatal("unexpected ErrNoRows")
	}
}

// TestWriterPragmas: the writer connection runs in WAL with a bounded journal and foreign keys.
func TestWriterPragmas(t *testing.T) {
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
