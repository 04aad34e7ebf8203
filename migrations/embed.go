// Package migrations holds toolq's schema as numbered goose migrations, embedded in the binary
// and applied by store.Open: *.sql for SQLite, postgres/*.sql for PostgreSQL. Both directories
// hold the same versions, each the same change spelled for its engine (store's tests compare the
// two schemas after migrating).
package migrations

import "embed"

// SQLite holds the SQLite migrations (00001_init.sql, ...).
//
//go:embed *.sql
var SQLite embed.FS

// Postgres holds the PostgreSQL migrations, under postgres/.
//
//go:embed postgres/*.sql
var Postgres embed.FS
