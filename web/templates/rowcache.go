package templates

import (
	"bytes"
	"context"
	"encoding/binary"
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
// changed. A row's key is the queue's id and a fingerprint of everything QueueRow reads (the row,
// the links' context, whether it swaps out of band), so a changed row can never be served from
// the cache. Safe for concurrent use; the zero value is not ready, use NewRowCache. A nil
// *RowCache renders every row afresh.
//
// Renderings are kept in two generations: the current one, and the one before, whose renderings
// move back to the current one when asked for. When the current one is full the previous one is
// dropped: memory stays within two generations while every row still shown stays kept.
type RowCache struct {
	mu        sync.Mutex
	cur, prev map[rowKey][]byte
	limit     int // renderings per generation
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

type rowKey struct {
	id    int64
	print uint64
}

// NewRowCache returns an empty cache.
func NewRowCache() *RowCache {
	return &RowCache{cur: map[rowKey][]byte{}, limit: minRowCacheLimit, parts: map[string]keptPart{}}
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
	print := RowPrint(r, nav, oob)
	return templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
		html, err := c.rendering(ctx, r, nav, oob, print)
		if err != nil {
			return err
		}
		_, err = w.Write(html)
		return err
	})
}

// rendering returns QueueRow(r, nav, oob), whose fingerprint is print, from the cache, rendering
// and keeping it first when missing. A nil *RowCache renders it every time.
func (c *RowCache) rendering(ctx context.Context, r OverviewRow, nav Nav, oob bool, print uint64) ([]byte, error) {
	if html, ok := c.get(rowKey{id: r.ID, print: print}); ok {
		return html, nil
	}
	return c.render(ctx, r, nav, oob, print)
}

// render renders QueueRow(r, nav, oob), whose fingerprint is print, and keeps it (a nil
// *RowCache keeps nothing).
func (c *RowCache) render(ctx context.Context, r OverviewRow, nav Nav, oob bool, print uint64) ([]byte, error) {
	var buf bytes.Buffer
	if err := QueueRow(r, nav, oob).Render(ctx, &buf); err != nil {
		return nil, err
	}
	if c != nil {
		c.put(rowKey{id: r.ID, print: print}, buf.Bytes())
	}
	return buf.Bytes(), nil
}

// RowSet is a table body's rows made ready on every processor at once: each row's fingerprint
// and, once Render ran, its rendering from the cache (rendered there first where missing). A
// thousand rows' fingerprints and the renderings of those that changed are most of what an
// overview page or push spends rendering, and each row's are independent of the others'.
type RowSet struct {
	cache  *RowCache
	rows   []OverviewRow
	nav    Nav
	prints []uint64
	html   [][]byte // nil until Render
}

// Prepare fingerprints rows as the table's body renders them (QueueRow(r, nav, false)). A nil
// *RowCache prepares rows that Render renders afresh.
func (c *RowCache) Prepare(ctx context.Context, rows []OverviewRow, nav Nav) (*RowSet, error) {
	set := &RowSet{cache: c, rows: rows, nav: nav, prints: make([]uint64, len(rows))}
	err := parallel.Stretches(ctx, len(rows), func(_ context.Context, from, to int) error {
		for i := from; i < to; i++ {
			set.prints[i] = RowPrint(rows[i], nav, false)
		}
		return nil
	})
	return set, err
}

// Print is the fingerprint of the i-th row.
func (s *RowSet) Print(i int) uint64 { return s.prints[i] }

// Render makes every row's rendering ready, rendering those the cache does not hold.
func (s *RowSet) Render(ctx context.Context) error {
	if s.html != nil {
		return nil
	}
	html := make([][]byte, len(s.rows))
	// The rows to render are split over the processors, not the rows: those that changed are
	// often neighbours (queues named alike, busy together), and one stretch would get them all.
	var missing []int
	for i, r := range s.rows {
		if kept, ok := s.cache.get(rowKey{id: r.ID, print: s.prints[i]}); ok {
			html[i] = kept
		} else {
			missing = append(missing, i)
		}
	}
	err := parallel.Stretches(ctx, len(missing), func(ctx context.Context, from, to int) error {
		for _, i := range missing[from:to] {
			var err error
			if html[i], err = s.cache.render(ctx, s.rows[i], s.nav, false, s.prints[i]); err != nil {
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
	return templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
		_, err := w.Write(s.html[i])
		return err
	})
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

// get returns a kept rendering, moving it to the current generation; a nil *RowCache keeps none.
func (c *RowCache) get(key rowKey) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if html, ok := c.cur[key]; ok {
		return html, true
	}
	html, ok := c.prev[key]
	if ok {
		c.store(key, html)
	}
	return html, ok
}

func (c *RowCache) put(key rowKey, html []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.store(key, html)
}

// store adds a rendering to the current generation, starting a new one when it is full.
func (c *RowCache) store(key rowKey, html []byte) {
	if len(c.cur) >= c.limit {
		c.prev, c.cur = c.cur, make(map[rowKey][]byte, c.limit)
	}
	c.cur[key] = html
}

// RowPrint fingerprints what QueueRow(r, nav, oob) renders from: every field of the row and of
// the links' context but those in unrendered, read by reflection so that a field added later is
// covered without anyone remembering to. Two rows with the same print render the same (with a
// 2⁻⁶⁴ chance of a clash between two renderings of one queue).
func RowPrint(r OverviewRow, nav Nav, oob bool) uint64 {
	return fingerprint(func(b []byte) []byte {
		b = rowPrinter(b, reflect.ValueOf(&r).Elem())
		b = navPrinter(b, reflect.ValueOf(&nav).Elem())
		return printBool(b, oob)
	})
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

var (
	rowPrinter      = printerOf(reflect.TypeFor[OverviewRow]())
	navPrinter      = printerOf(reflect.TypeFor[Nav]())
	problemsPrinter = printerOf(reflect.TypeFor[[]views.Problem]())
)

// printer appends a value of one type to what is hashed: lengths before contents and a mark for
// nil, so that two different values never append the same bytes.
type printer func(b []byte, v reflect.Value) []byte

var timeType = reflect.TypeFor[time.Time]()

// printerOf builds the printer of a type once, so that printing a row is a walk of closures,
// not of type switches. It panics on a kind a row has no business holding (maps, funcs,
// channels, interfaces), which TestRowPrintCoversEveryField would show at once.
func printerOf(t reflect.Type) printer { return buildPrinter(t, map[reflect.Type]*printer{}) }

// buildPrinter is printerOf with the printers of the types being built, so that a type that
// refers to itself (through a pointer or a slice) prints through its own printer.
func buildPrinter(t reflect.Type, building map[reflect.Type]*printer) printer {
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
		elem := buildPrinter(t.Elem(), building)
		*p = func(b []byte, v reflect.Value) []byte {
			if v.IsNil() {
				return printBool(b, false)
			}
			return elem(printBool(b, true), v.Elem())
		}
	case reflect.Slice:
		if t == reflect.TypeFor[[]float64]() { // a sparkline: sixty numbers a row
			*p = func(b []byte, v reflect.Value) []byte {
				fs := *addressOf[[]float64](v)
				b = printInt(b, int64(len(fs)))
				for _, f := range fs {
					b = printInt(b, int64(math.Float64bits(f)))
				}
				return b
			}
			break
		}
		elem := buildPrinter(t.Elem(), building)
		*p = func(b []byte, v reflect.Value) []byte {
			b = printInt(b, int64(v.Len()))
			for i := range v.Len() {
				b = elem(b, v.Index(i))
			}
			return b
		}
	case reflect.Array:
		elem := buildPrinter(t.Elem(), building)
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
			if !slices.Contains(unrendered[t], t.Field(i).Name) {
				fields = append(fields, field{i, buildPrinter(t.Field(i).Type, building)})
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

func printInt(b []byte, n int64) []byte { return binary.LittleEndian.AppendUint64(b, uint64(n)) }

func printBool(b []byte, on bool) []byte {
	if on {
		return append(b, 1)
	}
	return append(b, 0)
}
