// Package storetest gives tests a new, empty SQLite store quickly.
//
// Opening a new file runs every migration: about 200 ms with the race detector, most of it
// SQLite parsing the schema's statements, and many tests each open a store of their own. Path
// instead writes a copy of one database migrated once per test process, so that store.Open
// finds nothing to apply. The migrations themselves are tested in the store package, on both
// engines, from an empty database.
package storetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/toolq/toolq/internal/store"
)

// Path returns the path of a new SQLite database file, in a directory of tb's own, with every
// migration applied and no rows: open it with store.Open.
func Path(tb testing.TB) string {
	tb.Helper()
	image, err := migrated()
	if err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	path := filepath.Join(tb.TempDir(), "toolq.db")
	if err := os.WriteFile(path, image, 0o600); err != nil {
		tb.Fatalf("storetest: %v", err)
	}
	return path
}

// Open returns a new, empty store on a file of Path's, closed when the test ends.
func Open(tb testing.TB) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), Path(tb))
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// migrated is the bytes of a database file that store.Open made and closed: closing the last
// connection checkpoints the write-ahead log into the file and removes the log, so the file
// holds the whole database (in WAL mode, which the file's header keeps).
var migrated = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "toolq-storetest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "toolq.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := st.Close(); err != nil {
		return nil, err
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, fmt.Errorf("the migrated database %s kept its write-ahead log after closing", path)
	}
	return os.ReadFile(path)
})
