package store

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
)

// engines records, for every exported Store method, the engines on which the package's tests ran
// one of its statements without error, and every statement an engine refused as malformed (a
// query written for the other engine: PostgreSQL's sum(boolean) once ran on every status read,
// since its test ran on SQLite alone). Every store a test opens is traced (openTest,
// openPostgresTest, traceStore); once the whole package has run, check fails the binary for
// every method that did not run on both engines, and for every malformed statement. A method is
// covered only where its SQL ran: a call that returned before any statement, or whose statements
// all failed, does not count, so that a test that ignores an error proves nothing.
var engines = newEngineCoverage()

// noStatementOn lists the methods that run no statement on an engine, by design.
var noStatementOn = map[string][]string{
	"Dialect": {"sqlite", "postgres"}, // says the engine
	"Trace":   {"sqlite", "postgres"}, // sets the tracer
	// PostgreSQL's advisory locks and notices between replicas: with one process on SQLite
	// there is no one to lock out or notify.
	"TryLead":   {"sqlite"},
	"LockQueue": {"sqlite"},
	"Notify":    {"sqlite"},
	"Listen":    {"sqlite"},
	// SQLite's PRAGMA optimize before closing; PostgreSQL keeps its own statistics.
	"Close": {"postgres"},
}

type engineCoverage struct {
	mu        sync.Mutex
	ran       map[string]map[string]bool // method → engine → a statement succeeded
	malformed map[string]bool            // "method on engine: error"
}

func newEngineCoverage() *engineCoverage {
	return &engineCoverage{ran: make(map[string]map[string]bool), malformed: make(map[string]bool)}
}

// record is the tracer of every store the tests open.
func (c *engineCoverage) record(st Statement) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.Malformed() {
		c.malformed[fmt.Sprintf("%s on %s: %v", strings.Join(st.Methods, " → "), st.Engine, st.Err)] = true
	}
	if st.Err != nil {
		return
	}
	for _, m := range st.Methods {
		if c.ran[m] == nil {
			c.ran[m] = make(map[string]bool)
		}
		c.ran[m][st.Engine] = true
	}
}

// gaps returns what check fails for: each exported method of *Store that ran on an engine too
// few, and each malformed statement.
func (c *engineCoverage) gaps() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	t := reflect.TypeFor[*Store]()
	for i := range t.NumMethod() {
		name := t.Method(i).Name
		var missing []string
		for _, engine := range []string{"sqlite", "postgres"} {
			if !c.ran[name][engine] && !slices.Contains(noStatementOn[name], engine) {
				missing = append(missing, engine)
			}
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("Store.%s ran no statement on %s", name, strings.Join(missing, " nor ")))
		}
	}
	for m := range c.malformed {
		out = append(out, "malformed statement: "+m)
	}
	slices.Sort(out)
	return out
}

// wholeRun reports whether the binary ran every test of the package on both engines, the only
// run whose coverage means anything: no -run or -skip, not -short, and a PostgreSQL server (a
// machine without one skips the PostgreSQL halves; CI=true fails them instead, in pgtest).
func (c *engineCoverage) wholeRun() (bool, string) {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return false, "-" + strings.TrimPrefix(name, "test.") + " is set"
		}
	}
	if f := flag.Lookup("test.short"); f != nil && f.Value.String() == "true" {
		return false, "-short is set"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, engines := range c.ran {
		if engines["postgres"] {
			return true, ""
		}
	}
	return false, "no statement ran on PostgreSQL"
}

// check reports the gaps of a whole run on stderr and returns the exit code they make.
func (c *engineCoverage) check() int {
	if ok, why := c.wholeRun(); !ok {
		if testingVerbose() {
			fmt.Fprintf(os.Stderr, "store: coverage of both engines not checked: %s\n", why)
		}
		return 0
	}
	gaps := c.gaps()
	if len(gaps) == 0 {
		return 0
	}
	fmt.Fprintf(os.Stderr, "--- FAIL: every store method on both engines (%d gaps; see coverage_test.go)\n", len(gaps))
	for _, g := range gaps {
		fmt.Fprintln(os.Stderr, "    "+g)
	}
	return 1
}

func testingVerbose() bool {
	f := flag.Lookup("test.v")
	return f != nil && f.Value.String() != "false"
}

// traceStore makes the coverage record s's statements, for a test that opens a store itself.
func traceStore(s *Store) *Store {
	s.Trace(engines.record)
	return s
}
