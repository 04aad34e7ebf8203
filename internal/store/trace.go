package store

import (
	"errors"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Statement is one SQL statement the store ran, as a tracer (Store.Trace) is told of it.
type Statement struct {
	// Methods are the exported Store methods on the stack when it ran, outermost first: the
	// method a caller called, then those it called in turn.
	Methods []string
	// Engine is the store's engine, "sqlite" or "postgres".
	Engine string
	// Err is the error of running it (of executing it, not of reading its rows), nil when it ran.
	Err error
}

// Malformed reports whether the statement failed because the engine does not accept its text:
// a syntax error, or a function, operator, column or table it does not know
// (PostgreSQL's class 42, SQLite's SQLITE_ERROR). Such a statement fails on every call, whatever
// the data: a query written for one engine alone.
func (st Statement) Malformed() bool {
	var pe *pgconn.PgError
	if errors.As(st.Err, &pe) {
		return strings.HasPrefix(pe.Code, "42")
	}
	var se *sqlite.Error
	return errors.As(st.Err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR
}

// Trace makes the store call fn after each statement it runs, from the goroutine that ran it
// (nil: stop). It is for tests and benchmarks: the store's tests check with it that every method
// ran on both engines, the collector's benchmarks count the statements of a cycle. Naming the
// methods walks the stack, a cost a store without a tracer does not pay.
func (s *Store) Trace(fn func(Statement)) {
	if fn == nil {
		s.tracer.Store(nil)
		return
	}
	s.tracer.Store(&fn)
}

// tracer holds a store's Trace function; dbPool and dbTx share their store's.
type tracer = atomic.Pointer[func(Statement)]

// storeMethodPrefix is how the runtime names a method of *Store.
var storeMethodPrefix = reflect.TypeFor[Store]().PkgPath() + ".(*Store)."

// traced tells t's function, if any, of a statement of dialect d that returned err.
func traced(t *tracer, d dialect, err error) {
	if t == nil {
		return
	}
	fn := t.Load()
	if fn == nil {
		return
	}
	var pcs [64]uintptr
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs[:])])
	var methods []string
	for {
		f, more := frames.Next()
		if name, ok := strings.CutPrefix(f.Function, storeMethodPrefix); ok && exported(name) {
			methods = append(methods, name)
		}
		if !more {
			break
		}
	}
	for i, j := 0, len(methods)-1; i < j; i, j = i+1, j-1 {
		methods[i], methods[j] = methods[j], methods[i]
	}
	(*fn)(Statement{Methods: methods, Engine: d.String(), Err: err})
}

// exported reports whether a frame's name after "(*Store)." is an exported method itself, not a
// function literal inside one (SaveSample.func1) or an unexported method.
func exported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return unicode.IsUpper(r) && !strings.Contains(name, ".")
}
