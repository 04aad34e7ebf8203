package store

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxCachedStatements bounds a pool's statement cache. The store's queries are a few hundred
// texts; one built with literals (none should be) cannot grow the cache past this.
const maxCachedStatements = 512

// stmtCache keeps a SQLite pool's prepared statements by query text. modernc's driver parses a
// query at every call that is not a prepared statement's: in a profile of the notifier's checks
// on the simulator, SQLite's parser (yy_reduce) took a quarter of the CPU. database/sql keeps
// each statement prepared on every connection it ran on, so a cached statement is parsed once a
// connection. PostgreSQL's driver (pgx) already keeps its statements prepared per connection: its
// pool has no cache.
//
// A statement is prepared on the pool, which needs a connection of its own: the writer pool
// has one, and a transaction holds it. A transaction therefore uses only statements cached
// already, and notes those it missed, which are prepared once it has ended (prepareMissed).
type stmtCache struct {
	db *sql.DB

	mu     sync.Mutex
	stmts  map[string]*sql.Stmt
	closed bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, stmts: map[string]*sql.Stmt{}}
}

// cached returns the statement of query if the cache has it; nil for a nil cache.
func (c *stmtCache) cached(query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stmts[query]
}

// get returns the statement of query, preparing it on the pool the first time; nil when it is
// not to be cached (no cache, a full or closed one, or a query that does not prepare, whose
// error the caller's own run of it then reports).
func (c *stmtCache) get(ctx context.Context, query string) *sql.Stmt {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	st, ok := c.stmts[query]
	full := c.closed || len(c.stmts) >= maxCachedStatements
	c.mu.Unlock()
	if ok || full { // a full cache prepares nothing more: the query would be parsed twice
		return st
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prior, ok := c.stmts[query]; ok || c.closed || len(c.stmts) >= maxCachedStatements {
		_ = st.Close() // another caller prepared it meanwhile, or there is no room
		return prior
	}
	c.stmts[query] = st
	return st
}

// prepareMissed prepares the queries a transaction ran without a cached statement, now that its
// connection is back in the pool.
func (c *stmtCache) prepareMissed(missed []string) {
	if c == nil || len(missed) == 0 {
		return
	}
	ctx := context.Background()
	for _, q := range missed {
		c.get(ctx, q)
	}
}

// close closes every cached statement; later gets cache nothing.
func (c *stmtCache) close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for q, st := range c.stmts {
		errs = append(errs, st.Close())
		delete(c.stmts, q)
	}
	return errors.Join(errs...)
}
