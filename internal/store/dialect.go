package store

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// The store speaks one SQL to both engines. Its queries are written for SQLite's placeholders
// (? and ?N) and use only what both engines share, with two spellings that differ:
//
//   - placeholders: PostgreSQL numbers them ($1, $2, …); rebind turns ? and ?N into those.
//   - the two-argument maximum: PostgreSQL's greatest(a, b) is SQLite's max(a, b); queries
//     write greatest( and rebind spells it max( for SQLite. (Both ignore NULLs differently;
//     every column the store compares this way is NOT NULL.)
//
// JSON and case-free matching differ too; the few queries that need them ask the dialect for
// the fragment (jsonKey, anyJSONValue, attributeValue, caseFreeLike). Anything else that
// differs lives in the migrations, one directory per engine.
//
// One rule is the pool's, on both engines alike: no text holds NUL. PostgreSQL's text cannot
// hold it and SQS's own character set excludes it, so a NUL can only come from a hostile or
// broken client; the pool turns it into U+FFFD in every string argument (see withoutNUL).
type dialect int

const (
	sqliteDialect dialect = iota
	postgresDialect
)

func (d dialect) String() string {
	if d == postgresDialect {
		return "postgres"
	}
	return "sqlite"
}

// jsonKey is the text of key param's value in the JSON object in col (” when absent becomes
// NULL); param's argument is jsonKeyArg(name). SQLite's json_extract reads one key far faster
// than a json_each per row.
func (d dialect) jsonKey(col, param string) string {
	if d == postgresDialect {
		return "(" + col + "::jsonb ->> " + param + ")"
	}
	return "json_extract(" + col + ", " + param + ")"
}

// jsonKeyArg is jsonKey's argument for a key: SQLite takes a JSON path, with the key quoted so
// that any name is one key (a quote or backslash, which the collector never lets a name hold,
// is dropped rather than ending it); PostgreSQL takes the key itself.
func (d dialect) jsonKeyArg(name string) string {
	if d == postgresDialect {
		return name
	}
	return `$."` + strings.NewReplacer(`"`, "", `\`, "").Replace(name) + `"`
}

// anyJSONValue is the condition that some value of the JSON object in col matches cond
// ("LIKE ?3", say).
func (d dialect) anyJSONValue(col, cond string) string {
	if d == postgresDialect {
		return "EXISTS (SELECT 1 FROM jsonb_each_text(" + col + "::jsonb) j WHERE j.value " + cond + ")"
	}
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") WHERE value " + cond + ")"
}

// attributeValue is the value of the message attribute named by param in col, a JSON array
// of {"name", "dataType", "value"} objects.
func (d dialect) attributeValue(col, param string) string {
	if d == postgresDialect {
		return "(SELECT j ->> 'value' FROM jsonb_array_elements(" + col + "::jsonb) j WHERE j ->> 'name' = " + param + " LIMIT 1)"
	}
	return "(SELECT json_extract(j.value, '$.value') FROM json_each(" + col + ") j WHERE json_extract(j.value, '$.name') = " + param + ")"
}

// idTable is a table of one integer column, value, holding the ids of a JSON array in param
// (sampleIDList's encoding): one query seeks each of them, however many there are.
func (d dialect) idTable(param string) string {
	if d == postgresDialect {
		return "(SELECT e.value::bigint AS value FROM jsonb_array_elements_text(" + param + "::jsonb) AS e(value))"
	}
	return "json_each(" + param + ")"
}

// textTable is a table of one column, value, holding the strings of a JSON array given as param.
func (d dialect) textTable(param string) string {
	if d == postgresDialect {
		return "(SELECT e.value AS value FROM jsonb_array_elements_text(" + param + "::jsonb) AS e(value))"
	}
	return "json_each(" + param + ")"
}

// caseFreeLike is LIKE ignoring case: SQLite's LIKE ignores ASCII case, PostgreSQL's ILIKE any.
func (d dialect) caseFreeLike() string {
	if d == postgresDialect {
		return "ILIKE"
	}
	return "LIKE"
}

// rebound caches each query's text per dialect: the store's queries are a few dozen constants.
var rebound sync.Map // map[reboundKey]string

type reboundKey struct {
	d     dialect
	query string
}

// rebind returns query spelled for d (see dialect).
func (d dialect) rebind(query string) string {
	if v, ok := rebound.Load(reboundKey{d, query}); ok {
		return v.(string)
	}
	var out string
	if d == postgresDialect {
		out = numberPlaceholders(query)
	} else {
		out = strings.ReplaceAll(query, "greatest(", "max(")
	}
	rebound.Store(reboundKey{d, query}, out)
	return out
}

// numberPlaceholders turns ? into $1, $2, … in order and ?N into $N, leaving string literals
// ('…'), quoted identifiers ("…") and -- comments alone.
func numberPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query) + 16)
	next := 1
	var quote byte
	for i := 0; i < len(query); i++ {
		c := query[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
			b.WriteByte(c)
		case c == '-' && i+1 < len(query) && query[i+1] == '-':
			end := strings.IndexByte(query[i:], '\n')
			if end < 0 {
				end = len(query) - i
			}
			b.WriteString(query[i : i+end])
			i += end - 1
		case c == '\'' || c == '"':
			quote = c
			b.WriteByte(c)
		case c == '?':
			j := i + 1
			for j < len(query) && query[j] >= '0' && query[j] <= '9' {
				j++
			}
			b.WriteByte('$')
			if j > i+1 {
				b.WriteString(query[i+1 : j])
				i = j - 1
			} else {
				b.WriteString(strconv.Itoa(next))
				next++
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// dbPool is a database/sql pool whose queries are rebound for its dialect. It offers only the
// context-taking calls, so that no query can skip rebind. Each statement is told to its store's
// tracer (Store.Trace), if it has one. On SQLite its statements are kept prepared (stmts; nil on
// PostgreSQL).
type dbPool struct {
	db    *sql.DB
	d     dialect
	trace *tracer
	stmts *stmtCache
}

func (p dbPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q := p.d.rebind(query)
	res, err := p.via(ctx, q, true, args).ExecContext(ctx, q, withoutNUL(args)...)
	traced(p.trace, p.d, err)
	return res, err
}

func (p dbPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q := p.d.rebind(query)
	rows, err := p.via(ctx, q, false, args).QueryContext(ctx, q, withoutNUL(args)...)
	traced(p.trace, p.d, err)
	return rows, err
}

func (p dbPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	q := p.d.rebind(query)
	row := p.via(ctx, q, false, args).QueryRowContext(ctx, q, withoutNUL(args)...)
	traced(p.trace, p.d, row.Err())
	return row
}

// via is where the rebound query q runs: its cached statement, or the pool with the text.
func (p dbPool) via(ctx context.Context, q string, exec bool, args []any) runner {
	if !cacheable(p.stmts, exec, args) {
		return p.db
	}
	if st := p.stmts.get(ctx, q); st != nil {
		return stmtRunner{st}
	}
	return p.db
}

// cacheable says whether a query may run as a cached statement. An Exec without arguments may
// be a script of several statements (a PRAGMA and more), which a prepared statement would cut to
// its first: Execs are cached only with arguments (rows come from a single statement).
func cacheable(c *stmtCache, exec bool, args []any) bool {
	return c != nil && !(exec && len(args) == 0)
}

// runner runs a rebound query: a pool or transaction with the text, or a prepared statement
// (stmtRunner), which has the text already.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// stmtRunner is a prepared statement as a runner: the query text it is given is its own.
type stmtRunner struct{ st *sql.Stmt }

func (s stmtRunner) ExecContext(ctx context.Context, _ string, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, args...)
}

func (s stmtRunner) QueryContext(ctx context.Context, _ string, args ...any) (*sql.Rows, error) {
	return s.st.QueryContext(ctx, args...)
}

func (s stmtRunner) QueryRowContext(ctx context.Context, _ string, args ...any) *sql.Row {
	return s.st.QueryRowContext(ctx, args...)
}

func (p dbPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*dbTx, error) {
	t, err := p.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &dbTx{tx: t, d: p.d, trace: p.trace, stmts: p.stmts}, nil
}

// dbTx is a transaction of a dbPool, rebinding and traced like it. It runs the pool's cached
// statements on its connection and notes the queries it found no statement for (missed), which
// the pool prepares once the transaction has ended: only then is a connection free to prepare
// them on (the writer pool has one).
type dbTx struct {
	tx     *sql.Tx
	d      dialect
	trace  *tracer
	stmts  *stmtCache
	missed []string
}

// via is where the rebound query q runs: the pool's cached statement on the transaction's
// connection, or the transaction with the text (noting q as missed).
func (t *dbTx) via(ctx context.Context, q string, exec bool, args []any) runner {
	if !cacheable(t.stmts, exec, args) {
		return t.tx
	}
	if st := t.stmts.cached(q); st != nil {
		return stmtRunner{t.tx.StmtContext(ctx, st)}
	}
	if len(t.missed) < maxCachedStatements && !slices.Contains(t.missed, q) {
		t.missed = append(t.missed, q)
	}
	return t.tx
}

func (t *dbTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	q := t.d.rebind(query)
	res, err := t.via(ctx, q, true, args).ExecContext(ctx, q, withoutNUL(args)...)
	traced(t.trace, t.d, err)
	return res, err
}

func (t *dbTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	q := t.d.rebind(query)
	rows, err := t.via(ctx, q, false, args).QueryContext(ctx, q, withoutNUL(args)...)
	traced(t.trace, t.d, err)
	return rows, err
}

func (t *dbTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	q := t.d.rebind(query)
	row := t.via(ctx, q, false, args).QueryRowContext(ctx, q, withoutNUL(args)...)
	traced(t.trace, t.d, row.Err())
	return row
}

func (t *dbTx) PrepareContext(ctx context.Context, query string) (*dbStmt, error) {
	st, err := t.tx.PrepareContext(ctx, t.d.rebind(query))
	traced(t.trace, t.d, err)
	if err != nil {
		return nil, err
	}
	return &dbStmt{st: st, d: t.d, trace: t.trace}, nil
}

// dbStmt is a prepared statement of a dbTx.
type dbStmt struct {
	st    *sql.Stmt
	d     dialect
	trace *tracer
}

func (s *dbStmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	res, err := s.st.ExecContext(ctx, withoutNUL(args)...)
	traced(s.trace, s.d, err)
	return res, err
}

func (s *dbStmt) QueryRowContext(ctx context.Context, args ...any) *sql.Row {
	row := s.st.QueryRowContext(ctx, withoutNUL(args)...)
	traced(s.trace, s.d, row.Err())
	return row
}

func (s *dbStmt) Close() error { return s.st.Close() }

// withoutNUL returns args with NUL in each string replaced by U+FFFD, copying only when one
// has any.
func withoutNUL(args []any) []any {
	var out []any
	for i, a := range args {
		if v, ok := a.(string); ok && strings.IndexByte(v, 0) >= 0 {
			if out == nil {
				out = slices.Clone(args)
			}
			out[i] = strings.ReplaceAll(v, "\x00", "\uFFFD")
		}
	}
	if out == nil {
		return args
	}
	return out
}

func (t *dbTx) Commit() error {
	err := t.tx.Commit()
	t.prepareMissed()
	return err
}

func (t *dbTx) Rollback() error {
	err := t.tx.Rollback()
	t.prepareMissed()
	return err
}

// prepareMissed has the pool prepare the queries the transaction ran as text, once.
func (t *dbTx) prepareMissed() {
	missed := t.missed
	t.missed = nil
	t.stmts.prepareMissed(missed)
}

// isUniqueViolation reports whether err is a UNIQUE or PRIMARY KEY violation.
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505" // unique_violation
}

// isForeignKeyViolation reports whether err is a foreign key violation.
func isForeignKeyViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23503" // foreign_key_violation
}
