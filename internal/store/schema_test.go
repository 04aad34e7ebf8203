package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rawExec runs statements on the database file through a connection of its own, as an operator
// with the sqlite3 shell (or another program) would.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// TestOpenRefusesAForeignSchema: a database a newer toolq migrated, or one that lost a table or
// a column, is refused at start-up with a message that says what is wrong, and left as it was.
func TestOpenRefusesAForeignSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		breakIt []string
		want    []string // in the error
	}{
		{"newer schema", []string{"INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)"},
			[]string{"version 99", "newer than this toolq's"}},
		{"missing table", []string{"DROP TABLE audit_log"}, []string{"lacks audit_log,", "restore it from a backup"}},
		{"missing column", []string{"ALTER TABLE queues DROP COLUMN peek_paused"}, []string{"lacks queues.peek_paused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolq.db")
			s, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			rawExec(t, path, tt.breakIt...)
			_, err = Open(context.Background(), path)
			if !errors.Is(err, ErrSchema) {
				t.Fatalf("Open = %v, want ErrSchema", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	t.Run("the migrations make what the check expects", func(t *testing.T) {
		want, err := expected()
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"queues", "audit_log", "move_tasks", "api_tokens", "browser_sessions", "sample_messages"} {
			if len(want[table]) == 0 {
				t.Errorf("expected schema has no table %s: %v", table, want)
			}
		}
	})
}

// TestPingNoticesTheFileGoing: a database file deleted or replaced under a running store, or a
// table dropped under it, makes Ping fail with what happened, though SQLite itself goes on.
func TestPingNoticesTheFileGoing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		do   func(t *testing.T, path string)
		want error
		text string
	}{
		{"deleted", func(t *testing.T, path string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		}, ErrGone, "was deleted"},
		{"replaced", func(t *testing.T, path string) {
			if err := os.Rename(path, path+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}, ErrGone, "was replaced"},
		{"a table dropped", func(t *testing.T, path string) { rawExec(t, path, "DROP TABLE audit_log") }, ErrSchema, "lacks audit_log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "toolq.db")
			s, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			traceStore(s)
			if err := s.Ping(context.Background()); err != nil {
				t.Fatalf("Ping before: %v", err)
			}
			tt.do(t, path)
			err = s.Ping(context.Background())
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
				t.Errorf("Ping = %v, want %v saying %q", err, tt.want, tt.text)
			}
		})
	}
}
