package pgtest

import (
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestDB: each test gets its own empty database on one server, and can use it.
func TestDB(t *testing.T) {
	a, b := DB(t), DB(t)
	if a == b {
		t.Fatalf("two tests share the database %s", a)
	}
	db, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SHOW server_version").Scan(&v); err != nil {
		t.Fatalf("query: %v", err)
	}
	t.Logf("PostgreSQL %s", v)
	if _, err := db.Exec("CREATE TABLE t (x int)"); err != nil {
		t.Fatalf("create table: %v", err)
	}
}
