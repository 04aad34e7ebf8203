package store

import (
	"context"
	"fmt"
	"testing"
)

// TestStatementsStayPrepared: on SQLite a query with rows or an Exec with arguments is prepared
// once and kept, on the pool and inside transactions (which use what the pool has and leave
// what they missed to be prepared after them); scripts (an Exec without arguments) are never
// prepared, the cache stays bounded, and PostgreSQL's pool has none (pgx keeps its own).
func TestStatementsStayPrepared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	var got int
	for i := range 3 {
		if err := s.db.QueryRowContext(ctx, "SELECT ? + 1", i).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("SELECT ? + 1 with %d = %d, %v", i, got, err)
		}
	}
	first := s.db.stmts.cached("SELECT ? + 1")
	if first == nil {
		t.Fatal("a query run three times is not kept prepared")
	}
	if err := s.db.QueryRowContext(ctx, "SELECT ? + 1", 5).Scan(&got); err != nil || s.db.stmts.cached("SELECT ? + 1") != first {
		t.Errorf("the query was prepared again (or failed: %v)", err)
	}

	const insert = "INSERT INTO kv (key, value) VALUES (?, ?)"
	for i := range 2 {
		tx, err := s.wdb.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, cached := tx.via(ctx, insert, true, []any{1}).(stmtRunner); cached != (i == 1) {
			t.Errorf("transaction %d: cached statement %v; want none the first time, the cached one the second", i, cached)
		}
		if _, err := tx.ExecContext(ctx, insert, fmt.Sprintf("k%d", i), "v"); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if s.wdb.stmts.cached(insert) == nil {
			t.Fatalf("transaction %d: the insert it missed was not prepared after it", i)
		}
	}
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA optimize"); err != nil || s.wdb.stmts.cached("PRAGMA optimize") != nil {
		t.Errorf("a script without arguments was cached (or failed: %v)", err)
	}

	for i := range maxCachedStatements + 10 {
		q := fmt.Sprintf("SELECT ? + %d", i)
		if err := s.db.QueryRowContext(ctx, q, 1).Scan(&got); err != nil || got != i+1 {
			t.Fatalf("%s = %d, %v", q, got, err)
		}
	}
	s.db.stmts.mu.Lock()
	n := len(s.db.stmts.stmts)
	s.db.stmts.mu.Unlock()
	if n > maxCachedStatements {
		t.Errorf("%d statements cached; the bound is %d", n, maxCachedStatements)
	}

	if pg := openPostgresTest(t); pg.db.stmts != nil {
		t.Error("PostgreSQL's pool caches statements; pgx keeps them prepared itself")
	}
}
