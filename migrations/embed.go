// Package migrations holds toolq's SQLite schema as numbered goose migrations, embedded in the
// binary and applied by store.Open.
package migrations

import "embed"

// FS holds every migration file (00001_init.sql, ...) for goose's Provider.
//
//go:embed *.sql
var FS embed.FS
