package store

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestMain stops the PostgreSQL server the tests started, if any, then fails the binary when a
// store method ran on one engine only (see engines).
func TestMain(m *testing.M) {
	code := pgtest.Main(m)
	if code == 0 {
		code = engines.check()
	}
	os.Exit(code)
}

// t0 is the tests' fixed "now": tests never read the wall clock.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// openTest opens a fresh store in t.TempDir() and closes it when the test ends.
func openTest(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "toolq.db"))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return traceStore(s)
}

// openPostgresTest opens a store on a fresh PostgreSQL database (pgtest.DB: skipped where no
// server can be started, failed under CI=true) and closes it when the test ends.
func openPostgresTest(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), pgtest.DB(tb))
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return traceStore(s)
}

// forEachEngine runs a test once on SQLite and once on PostgreSQL, as subtests named after
// the engine; open opens a fresh store of that engine.
func forEachEngine(t *testing.T, test func(t *testing.T, open func(testing.TB) *Store)) {
	t.Run("sqlite", func(t *testing.T) { test(t, openTest) })
	t.Run("postgres", func(t *testing.T) { test(t, openPostgresTest) })
}

// addQueue upserts a queue named name (FIFO when it ends in .fifo) in us-east-1 and returns it.
func addQueue(tb testing.TB, s *Store, name string) Queue {
	tb.Helper()
	q := Queue{
		Region:    "us-east-1",
		Name:      name,
		URL:       "https://sqs.us-east-1.amazonaws.com/123456789012/" + name,
		ARN:       "arn:aws:sqs:us-east-1:123456789012:" + name,
		FIFO:      filepath.Ext(name) == ".fifo",
		FirstSeen: t0,
		LastSeen:  t0,
	}
	id, err := s.UpsertQueue(context.Background(), q)
	if err != nil {
		tb.Fatalf("UpsertQueue(%s): %v", name, err)
	}
	got, err := s.GetQueue(context.Background(), id)
	if err != nil {
		tb.Fatalf("GetQueue(%d): %v", id, err)
	}
	return got
}
