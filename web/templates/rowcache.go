package templates

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"math"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/a-h/templ"

	"github.com/toolq/toolq/internal/parallel"
	"github.com/toolq/toolq/internal/views"
)

// RowCache keeps overview rows' renderings from one rendering to the next. A thousand rows take
// most of an overview page's or push's time to render, yet between two attribute cycles only the
// queues whose numbers moved render differently; a row is rendered again only when what it shows
// changed. Safe for concurrent use; the zero value is not ready, use NewRowCache. A nil
// *RowCache renders every row afresh.
//
// A row is kept in two pieces. Its sparkline's cell (QueueCells' SparkCell) is kept by a
// fingerprint of the sparkline alone, and shared by the rows that draw the same. The rest of the
// row, its frame, is kept by the queue's id and a fingerprint of everything else QueueRow reads
// (the row, the links' context, whether it swaps out of band). Once a minute every sparkline of
// a busy fleet moves on while the rest of its row stays, and then only the sparklines' cells are
// rendered again. A changed row can never be served from the cache (TestRowPrintCoversEveryField).
//
// Renderings are kept in two generations: the current one, and the one before, whose renderings
// move back to the current one when asked for. When the current one is full the previous one is
// dropped: memory stays within two generations while every row still shown stays kept.
type RowCache struct {
	mu     sync.Mutex
	frames generations[rowKey, rowFrame]
	sparks generations[uint64, []byte] // by RowPrint.Spark
	limit  int                         // renderings per generation, of frames and of sparklines each
	// parts are the newest rendering of each part of a page kept by Part, by its name.
	parts map[string]keptPart
}

// keptPart is a part's rendering and the fingerprint of what it was rendered from.
type keptPart struct {
	print uint64
	html  []byte
}

// minRowCacheLimit is the smallest generation: a page and a push of a few hundred queues, with
// room for the few link contexts (embeds) that view them at once.
const minRowCacheLimit = 4096

// rowKey is a frame's key: its queue and RowPrint.Frame.
type rowKey struct {
	id    int64
	print uint64
}

// rowFrame is a row's rendering but for its sparkline's cell: what comes before the cell, and
// what comes after it.
type rowFrame struct {
	head, tail []byte
}

// keptRow is a row's rendering in its pieces, as kept: nil where the cache does not hold one.
type keptRow struct {
	frame rowFrame
	spark []byte
}

// whole reports whether every piece of the row is there.
func (k keptRow) whole() bool { return k.frame.head != nil && k.spark != nil }

// write writes the row: its frame around its sparkline's cell.
func (k keptRow) write(w io.Writer) error {
	for _, b := range [][]byte{k.frame.head, k.spark, k.frame.tail} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// NewRowCache returns an empty cache.
func NewRowCache() *RowCache {
	return &RowCache{limit: minRowCacheLimit, parts: map[string]keptPart{}}
}

// Fit sizes the cache's generations for an overview of rows queues: room for four renderings of
// each (the page's and the push's, for a few link contexts).
func (c *RowCache) Fit(rows int) {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.limit = max(minRowCacheLimit, 4*rows)
	c.mu.Unlock()
}

// Row is QueueRow(r, nav, oob), rendered once for as long as the row shows the same.
func (c *RowCache) Row(r OverviewRow, nav Nav, oob bool) templ.Component {
	if c == nil {
		return QueueRow(r, nav, oob)
	}
	print := PrintRow(&r, &nav, oob)
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		row, err := c.render(ctx, r, nav, oob, print, c.kept(r.ID, print))
		if err != nil {
			return err
		}
		return row.write(w)
	})
}

// kept returns the pieces of QueueRow(r, nav, oob) the cache holds, r being queue id's row and
// print its fingerprints; a nil *RowCache holds none.
func (c *RowCache) kept(id int64, print RowPrint) keptRow {
	if c == nil {
		return keptRow{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var k keptRow
	k.frame, _ = c.frames.get(rowKey{id: id, print: print.Frame}, c.limit)
	k.spark, _ = c.sparks.get(print.Spark, c.limit)
	return k
}

// render completes row, what the cache holds of QueueRow(r, nav, oob) whose fingerprints are
// print: it renders the pieces missing and keeps them (a nil *RowCache keeps nothing).
func (c *RowCache) render(ctx context.Context, r OverviewRow, nav Nav, oob bool, print RowPrint, row keptRow) (keptRow, error) {
	if row.frame.head == nil {
		frame, err := renderFrame(ctx, r, nav, oob)
		if err != nil {
			return keptRow{}, err
		}
		row.frame = frame
		if c != nil {
			c.mu.Lock()
			c.frames.put(rowKey{id: r.ID, print: print.Frame}, frame, c.limit)
			c.mu.Unlock()
		}
	}
	if row.spark == nil {
		buf := scratchBuffers.Get().(*bytes.Buffer)
		defer putScratch(buf)
		if err := QueueCells(r, nav)[SparkCell](nil).Render(ctx, buf); err != nil {
			return keptRow{}, err
		}
		row.spark = bytes.Clone(buf.Bytes())
		if c != nil {
			c.mu.Lock()
			c.sparks.put(print.Spark, row.spark, c.limit)
			c.mu.Unlock()
		}
	}
	return row, nil
}

// renderFrame renders QueueRow(r, nav, oob) but for its sparkline's cell, and splits it where
// that cell goes. A mark stands in the cell's place and notes where it is written.
func renderFrame(ctx context.Context, r OverviewRow, nav Nav, oob bool) (rowFrame, error) {
	buf := scratchBuffers.Get().(*bytes.Buffer)
	defer putScratch(buf)
	at := -1
	mark := templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		// What the row wrote so far may wait in templ's buffer: once flushed, it is all in buf.
		if f, ok := w.(interface{ Flush() error }); ok {
			if err := f.Flush(); err != nil {
				return err
			}
		}
		at = buf.Len()
		return nil
	})
	cells := QueueCells(r, nav)
	cells[SparkCell] = func(templ.Attributes) templ.Component { return mark }
	if err := queueRowOf(r, oob, cells).Render(ctx, buf); err != nil {
		return rowFrame{}, err
	}
	if at < 0 {
		return rowFrame{}, errors.New("templates: a row rendered without its sparkline's cell")
	}
	html := bytes.Clone(buf.Bytes())
	return rowFrame{head: html[:at:at], tail: html[at:]}, nil
}

// scratchBuffers are what rows are rendered into before their renderings are copied out, each
// to a slice of its own size: growing a buffer for each row allocated four times its size.
var scratchBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putScratch gives a scratch buffer back, unless a huge row (a long list of advice) grew it.
func putScratch(buf *bytes.Buffer) {
	if buf.Cap() > 64<<10 {
		return
	}
	buf.Reset()
	scratchBuffers.Put(buf)
}

// RowSet is a table body's rows made ready on every processor at once: each row's fingerprints
// and, once Render ran, its rendering from the cache (rendered there first where missing). A
// thousand rows' fingerprints and the renderings of those that changed are most of what an
// overview page or push spends rendering, and each row's are independent of the others'.
type RowSet struct {
	cache  *RowCache
	rows   []OverviewRow
	nav    Nav
	prints []RowPrint
	html   []keptRow // nil until Render
}

// Prepare fingerprints rows as the table's body renders them (QueueRow(r, nav, false)). A nil
// *RowCache prepares rows that Render renders afresh.
func (c *RowCache) Prepare(ctx context.Context, rows []OverviewRow, nav Nav) (*RowSet, error) {
	set := &RowSet{cache: c, rows: rows, nav: nav, prints: make([]RowPrint, len(rows))}
	err := parallel.Stretches(ctx, len(rows), func(_ context.Context, from, to int) error {
		for i := from; i < to; i++ {
			set.prints[i] = PrintRow(&rows[i], &nav, false)
		}
		return nil
	})
	return set, err
}

// Print is the fingerprints of the i-th row.
func (s *RowSet) Print(i int) RowPrint { return s.prints[i] }

// Render makes every row's rendering ready, rendering the pieces the cache does not hold.
func (s *RowSet) Render(ctx context.Context) error {
	if s.html != nil {
		return nil
	}
	html := make([]keptRow, len(s.rows))
	// The rows to render are split over the processors, not the rows: those that changed are
	// often neighbours (queues named alike, busy together), and one stretch would get them all.
	var missing []int
	for i, r := range s.rows {
		if html[i] = s.cache.kept(r.ID, s.prints[i]); !html[i].whole() {
			missing = append(missing, i)
		}
	}
	err := parallel.Stretches(ctx, len(missing), func(ctx context.Context, from, to int) error {
		for _, i := range missing[from:to] {
			var err error
			if html[i], err = s.cache.render(ctx, s.rows[i], s.nav, false, s.prints[i], html[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.html = html
	return nil
}

// of reports whether the set was prepared from these rows (the same slice) for this context.
func (s *RowSet) of(rows []OverviewRow, nav Nav) bool {
	return s != nil && s.html != nil && s.nav == nav && len(s.rows) == len(rows) &&
		(len(rows) == 0 || &s.rows[0] == &rows[0])
}

// bodyRow is the table body's i-th row, r: from the prepared set when it is of these rows.
func (p OverviewProps) bodyRow(i int, r OverviewRow) templ.Component {
	if p.RowSet.of(p.Rows, p.Nav) {
		return p.RowSet.row(i)
	}
	return p.RowCache.Row(r, p.Nav, false)
}

// row writes the i-th row's rendering.
func (s *RowSet) row(i int) templ.Component {
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error { return s.html[i].write(w) })
}

// Part is part, the part of a page called name (a name per rendering: "attention" and
// "attention-oob" are two), rendered once for as long as print, the fingerprint of what it
// renders from, stays the same. The cache keeps each name's newest rendering. A nil *RowCache
// renders part every time.
func (c *RowCache) Part(name string, print uint64, part templ.Component) templ.Component {
	if c == nil {
		return part
	}
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		c.mu.Lock()
		kept, ok := c.parts[name]
		c.mu.Unlock()
		if !ok || kept.print != print {
			var buf bytes.Buffer
			if err := part.Render(ctx, &buf); err != nil {
				return err
			}
			kept = keptPart{print: print, html: buf.Bytes()}
			c.mu.Lock()
			c.parts[name] = kept
			c.mu.Unlock()
		}
		_, err := w.Write(kept.html)
		return err
	})
}

// attention is the problem list, kept rendered in the row cache while the problems stay.
func (p OverviewProps) attention(oob bool) templ.Component {
	name := "attention"
	if oob {
		name += "-oob"
	}
	return p.RowCache.Part(name, AttentionPrint(p.Overview.Problems, p.Nav, oob), Attention(p.Overview.Problems, p.Nav, oob))
}

// generations keeps values in two generations: the current one, and the one before, whose
// values move back to the current one when asked for. When the current one holds limit values
// the previous one is dropped. The zero value is empty and ready. Not safe for concurrent use.
type generations[K comparable, V any] struct {
	cur, prev map[K]V
}

// get returns a kept value, moving it to the current generation.
func (g *generations[K, V]) get(key K, limit int) (V, bool) {
	if v, ok := g.cur[key]; ok {
		return v, true
	}
	v, ok := g.prev[key]
	if ok {
		g.put(key, v, limit)
	}
	return v, ok
}

// put adds a value to the current generation, starting a new one when it is full.
func (g *generations[K, V]) put(key K, v V, limit int) {
	if g.cur == nil || len(g.cur) >= limit {
		g.prev, g.cur = g.cur, make(map[K]V, min(limit, 1024))
	}
	g.cur[key] = v
}

// len is how many values are kept, in both generations.
func (g *generations[K, V]) len() int { return len(g.cur) + len(g.prev) }

// RowPrint is what a row of the overview renders from, fingerprinted in two: Spark, its
// sparkline's cell's (the row's Sparkline and SparkTop); Frame, the rest of QueueRow's (every
// other field of the row and of the links' context but those in unrendered, read by reflection
// so that a field added later is covered without anyone remembering to, and whether it swaps
// out of band). Two rows with the same prints render the same (with a 2⁻⁶⁴ chance of a clash
// between two renderings of one queue).
type RowPrint struct {
	Frame, Spark uint64
}

// PrintRow fingerprints what QueueRow(*r, *nav, oob) renders from. It takes pointers so that a
// thousand rows are read where they are, not each copied to the heap for reflection to read.
func PrintRow(r *OverviewRow, nav *Nav, oob bool) RowPrint {
	return RowPrint{
		Frame: fingerprint(func(b []byte) []byte {
			b = framePrinter(b, reflect.ValueOf(r).Elem())
			b = navPrinter(b, reflect.ValueOf(nav).Elem())
			return printBool(b, oob)
		}),
		Spark: fingerprint(func(b []byte) []byte {
			b = printInt(b, int64(math.Float64bits(r.SparkTop)))
			return printFloats(b, r.Sparkline)
		}),
	}
}

// AttentionPrint fingerprints what Attention(problems, nav, oob) renders from, as RowPrint
// does a row's.
func AttentionPrint(problems []views.Problem, nav Nav, oob bool) uint64 {
	return fingerprint(func(b []byte) []byte {
		b = problemsPrinter(b, reflect.ValueOf(&problems).Elem())
		b = navPrinter(b, reflect.ValueOf(&nav).Elem())
		return printBool(b, oob)
	})
}

// fingerprint hashes what appendTo appends.
func fingerprint(appendTo func(b []byte) []byte) uint64 {
	buf := printBuffers.Get().(*[]byte)
	b := appendTo((*buf)[:0])
	sum := maphash.Bytes(printSeed, b)
	*buf = b
	printBuffers.Put(buf)
	return sum
}

// printBuffers hold what a print hashes: hashing it in one go is several times faster than
// feeding the hash eight bytes at a time.
var printBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// printSeed is one seed for the process, so that equal rows print equal from one rendering to
// the next.
var printSeed = maphash.MakeSeed()

// unrendered are the fields of a row QueueRow does not show and that change without anything it
// shows changing: the newest sample's time moves on every attribute cycle, so printing it would
// render every row of a quiet fleet again each cycle. TestRowPrintCoversEveryField checks that
// changing them changes no rendering.
var unrendered = map[reflect.Type][]string{
	reflect.TypeFor[views.QueueSummary](): {"SampledAt"},
}

// sparkFields are the fields the sparkline's cell reads, which RowPrint.Spark prints and the
// frame's print leaves out.
var sparkFields = map[reflect.Type][]string{
	reflect.TypeFor[views.QueueSummary](): {"Sparkline"},
	reflect.TypeFor[OverviewRow]():        {"SparkTop"},
}

var (
	framePrinter    = printerOf(reflect.TypeFor[OverviewRow](), unrendered, sparkFields)
	navPrinter      = printerOf(reflect.TypeFor[Nav](), unrendered)
	problemsPrinter = printerOf(reflect.TypeFor[[]views.Problem](), unrendered)
)

// printer appends a value of one type to what is hashed: lengths before contents and a mark for
// nil, so that two different values never append the same bytes.
type printer func(b []byte, v reflect.Value) []byte

var timeType = reflect.TypeFor[time.Time]()

// printerOf builds the printer of a type once, so that printing a row is a walk of closures,
// not of type switches. It prints every field of a struct but those that one of skip names for
// the struct's type. It panics on a kind a row has no business holding (maps, funcs, channels,
// interfaces), which TestRowPrintCoversEveryField would show at once.
func printerOf(t reflect.Type, skip ...map[reflect.Type][]string) printer {
	skipped := map[reflect.Type][]string{}
	for _, m := range skip {
		for t, names := range m {
			skipped[t] = append(skipped[t], names...)
		}
	}
	return buildPrinter(t, skipped, map[reflect.Type]*printer{})
}

// buildPrinter is printerOf with the fields skipped and the printers of the types being built,
// so that a type that refers to itself (through a pointer or a slice) prints through its own
// printer.
func buildPrinter(t reflect.Type, skipped map[reflect.Type][]string, building map[reflect.Type]*printer) printer {
	if p, ok := building[t]; ok {
		return func(b []byte, v reflect.Value) []byte { return (*p)(b, v) }
	}
	if t == timeType {
		return func(b []byte, v reflect.Value) []byte {
			tv := addressOf[time.Time](v)
			return append(printInt(b, tv.UnixNano()), tv.Location().String()...)
		}
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(b []byte, v reflect.Value) []byte { return printBool(b, v.Bool()) }
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(b []byte, v reflect.Value) []byte { return printInt(b, v.Int()) }
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(b []byte, v reflect.Value) []byte { return printInt(b, int64(v.Uint())) }
	case reflect.Float32, reflect.Float64:
		return func(b []byte, v reflect.Value) []byte { return printInt(b, int64(math.Float64bits(v.Float()))) }
	case reflect.String:
		return func(b []byte, v reflect.Value) []byte {
			s := v.String()
			return append(printInt(b, int64(len(s))), s...)
		}
	}
	p := new(printer)
	building[t] = p
	defer delete(building, t)
	switch t.Kind() {
	case reflect.Pointer:
		elem := buildPrinter(t.Elem(), skipped, building)
		*p = func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return printBool(b, false)
			}
			return elem(printBool(b, true), v.Elem())
		}
	case reflect.Slice:
		if t == reflect.TypeFor[[]float64]() { // a sparkline: sixty numbers a row
			*p = func(b []byte, v reflect.Value) []byte { return printFloats(b, *addressOf[[]float64](v)) }
			break
		}
		elem := buildPrinter(t.Elem(), skipped, building)
		*p = func(b []byte, v reflect.Value) []byte {
			b = printInt(b, int64(v.Len()))
			for i := range v.Len() {
				b = elem(b, v.Index(i))
			}
			return b
		}
	case reflect.Array:
		elem := buildPrinter(t.Elem(), skipped, building)
		*p = func(b []byte, v reflect.Value) []byte {
			for i := range v.Len() {
				b = elem(b, v.Index(i))
			}
			return b
		}
	case reflect.Struct:
		type field struct {
			index int
			print printer
		}
		var fields []field
		for i := range t.NumField() {
			if !slices.Contains(skipped[t], t.Field(i).Name) {
				fields = append(fields, field{i, buildPrinter(t.Field(i).Type, skipped, building)})
			}
		}
		*p = func(b []byte, v reflect.Value) []byte {
			for _, f := range fields {
				b = f.print(b, v.Field(f.index))
			}
			return b
		}
	default:
		panic(fmt.Sprintf("templates: a row cannot be fingerprinted: %s holds a %s", t, t.Kind()))
	}
	return *p
}

// addressOf returns a pointer to v's value without boxing a copy of it, as v.Interface would.
func addressOf[T any](v reflect.Value) *T {
	if v.CanAddr() {
		return v.Addr().Interface().(*T)
	}
	t := v.Interface().(T)
	return &t
}

// printFloats prints a list of numbers, its length first.
func printFloats(b []byte, fs []float64) []byte {
	b = printInt(b, int64(len(fs)))
	for _, f := range fs {
		b = printInt(b, int64(math.Float64bits(f)))
	}
	return b
}

func printInt(b []byte, n int64) []byte { return binary.LittleEndian.AppendUint64(b, uint64(n)) }

func printBool(b []byte, on bool) []byte {
	if on {
		return append(b, 1)
	}
	return append(b, 0)
}
