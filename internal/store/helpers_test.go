package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

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
	return s
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
