package server

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"reflect"
	"sync"

	"github.com/a-h/templ"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// overviewRendering is one snapshot's overview, rendered once for every page and push that shows
// it: each queue's row, for each kind of link context (whether links leave an embedded view),
// rendered the first time a page shows it, and the parts besides the rows as pushes swap them.
type overviewRendering struct {
	snap  *views.Snapshot
	mu    sync.Mutex
	table map[bool]map[int64]*templates.RenderedRow // by Nav.LeavesEmbed, then queue id
	parts map[bool]overviewParts                    // by Nav.Embed
	// before are the rows the previous snapshot's rendering had rendered, by link context: a
	// queue whose summary is the same keeps its row, rendered once for both.
	before map[bool]map[int64]*templates.RenderedRow
}

// overviewParts are the renderings of the overview's parts in a push: the problem list, the
// sight, the totals and the cost (OverviewPartSet's order).
type overviewParts [4][]byte

// renderingOf returns the rendering of a snapshot: the server's current one when it is of snap,
// else a new one, kept as current unless a newer snapshot's already is.
func (s *Server) renderingOf(snap *views.Snapshot) *overviewRendering {
	for {
		cur := s.overview.Load()
		if cur != nil && cur.snap == snap {
			return cur
		}
		next := &overviewRendering{snap: snap, table: map[bool]map[int64]*templates.RenderedRow{}, parts: map[bool]overviewParts{}}
		if cur != nil && cur.snap.Seq > snap.Seq {
			return next
		}
		if cur != nil {
			cur.mu.Lock()
			next.before = make(map[bool]map[int64]*templates.RenderedRow, len(cur.table))
			for key, rows := range cur.table {
				next.before[key] = maps.Clone(rows)
			}
			cur.mu.Unlock()
		}
		if s.overview.CompareAndSwap(cur, next) {
			return next
		}
	}
}

// rows returns the rows of the snapshot's queues at the places order names (indexes into
// Overview.Queues), for links of nav: each rendered once for the snapshot, on the first call
// that needs it, or the previous snapshot's row of a queue whose summary is the same. A page
// renders its own page of rows, never the fleet's.
func (r *overviewRendering) rows(ctx context.Context, nav templates.Nav, order []int) ([]*templates.RenderedRow, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := nav.LeavesEmbed()
	table := r.table[key]
	if table == nil {
		table = make(map[int64]*templates.RenderedRow, len(order))
		r.table[key] = table
	}
	out := make([]*templates.RenderedRow, len(order))
	for i, k := range order {
		q := r.snap.Overview.Queues[k]
		row, ok := table[q.ID]
		if !ok {
			if old, kept := r.before[key][q.ID]; kept && sameRow(old.QueueSummary, q) {
				row = old
			} else {
				var err error
				if row, err = templates.RenderRow(ctx, templates.OverviewRow{QueueSummary: q}, nav); err != nil {
					return nil, fmt.Errorf("render: %w", err)
				}
			}
			table[q.ID] = row
		}
		out[i] = row
	}
	return out, nil
}

// partsOf returns the parts a push of p swaps, rendered on the first call.
func (r *overviewRendering) partsOf(ctx context.Context, p templates.OverviewProps) (overviewParts, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if parts, ok := r.parts[p.Nav.Embed]; ok {
		return parts, nil
	}
	var parts overviewParts
	ov := &r.snap.Overview
	for i, c := range []templ.Component{templates.Attention(ov.Problems, p.Nav, true), templates.Sight(ov.Sight, p.Nav, true),
		templates.Totals(ov.Totals, true), templates.Cost(ov.Cost, true)} {
		var err error
		if parts[i], err = renderBytes(ctx, c); err != nil {
			return overviewParts{}, err
		}
	}
	r.parts[p.Nav.Embed] = parts
	return parts, nil
}

// sameRow reports whether two summaries of a queue render the same row: they are equal but for
// when the queue was last sampled (every cycle), which the row does not show
// (TestRowShowsNoSampleTime).
func sameRow(a, b views.QueueSummary) bool {
	a.SampledAt, b.SampledAt = nil, nil
	return reflect.DeepEqual(a, b)
}

// overviewMemo is what the previous push of one overview view showed: its rows, in their order,
// and its parts.
type overviewMemo struct {
	rows     []*templates.RenderedRow
	parts    overviewParts
	pager    []byte
	problems []views.Problem
}

// overviewPush renders what the hub sends the overview subscribers of one view, filtered, sorted
// and scaled as their URL says (one rendering for all of them). A page that just subscribed
// gets the whole table and every part; one that had the previous push (memo) gets what changed
// since: the rows that came, went or moved, the rows and cells whose rendering changed, the
// parts that changed, and the freshness.
func (s *Server) overviewPush(ctx context.Context, view pageView, changes live.Changes, memo any) (live.Push, error) {
	p := overviewViewOf(view.query())
	p.Nav = view.Nav
	r, err := s.overviewOf(ctx, &p)
	if err != nil {
		return live.Push{}, err
	}
	parts, err := r.partsOf(ctx, p)
	if err != nil {
		return live.Push{}, err
	}
	pager, err := renderBytes(ctx, templates.OverviewPager(p, true))
	if err != nil {
		return live.Push{}, err
	}
	next := &overviewMemo{rows: p.Rows, parts: parts, pager: pager, problems: p.Overview.Problems}
	push := live.Push{Memo: next}
	prev, _ := memo.(*overviewMemo)
	if prev == nil || changes[live.Connect] {
		if push.Full, err = renderMessages(ctx, templates.OverviewRows(p, true), templates.OverviewParts(p, templates.AllOverviewParts)); err != nil {
			return live.Push{}, err
		}
	}
	if prev == nil {
		push.Update = push.Full
		return push, nil
	}
	changed := templates.OverviewPartSet{Attention: !bytes.Equal(prev.parts[0], parts[0]), Sight: !bytes.Equal(prev.parts[1], parts[1]),
		Totals: !bytes.Equal(prev.parts[2], parts[2]), Cost: !bytes.Equal(prev.parts[3], parts[3]), Pager: !bytes.Equal(prev.pager, pager)}
	messages := diffRows(prev.rows, p.Rows).messages(p)
	if changed.Attention && !p.Nav.Embed {
		if lines, ok := problemChanges(prev.problems, p.Overview.Problems); ok {
			changed.Attention = false
			messages = append(messages, templates.AttentionChanged(p.Overview.Problems, lines, p.Nav))
		}
	}
	push.Update, err = renderMessages(ctx, append(messages, templates.OverviewParts(p, changed))...)
	return push, err
}

// problemChanges returns the problems whose line changed between two problem lists that name
// the same problems in the same order (the list is then pushed as its heading, those lines and
// its count of the others); false when they do not, or when either is empty (the list says
// "nothing needs a person" instead).
func problemChanges(prev, next []views.Problem) ([]views.Problem, bool) {
	was, now := templates.ShownProblems(prev), templates.ShownProblems(next)
	if len(was) == 0 || len(was) != len(now) {
		return nil, false
	}
	var changed []views.Problem
	for i := range now {
		if templates.ProblemKey(was[i]) != templates.ProblemKey(now[i]) {
			return nil, false
		}
		if was[i].Severity != now[i].Severity || was[i].Text != now[i].Text || was[i].Queue != now[i].Queue {
			changed = append(changed, now[i])
		}
	}
	return changed, true
}

// renderMessages renders a push's messages, each component one message, nil for a nil one.
func renderMessages(ctx context.Context, messages ...templ.Component) ([][]byte, error) {
	out := make([][]byte, 0, len(messages))
	for _, m := range messages {
		if m == nil {
			continue
		}
		b, err := renderBytes(ctx, m)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// rowChanges is what a page showing one list of rows must do to show another. Each kind goes
// in a message of its own: htmx parses a message as a template's content, where a cell after a
// row lands in a row of its own and a row after anything but rows loses its tags.
type rowChanges struct {
	whole   bool                     // most rows came, went or moved: swap the whole body
	deleted []int64                  // rows to take out: gone from the view, or moving
	inserts []rowInsert              // rows to put in, in their new order: new, or moving
	rows    []*templates.RenderedRow // rows in place whose class or most of whose cells changed
	cells   []cellChange             // the changed cells of the other rows in place
	// sparks are the sparklines of the other rows in place that moved on by a few points: the
	// page shifts them (a minute's turn moves every sparkline that has a point in the hour's
	// first minute, and a push of a thousand sparkline cells was half a megabyte).
	sparks []templates.SparkShift
}

// rowInsert puts row after the row of the queue after (0: first).
type rowInsert struct {
	row   *templates.RenderedRow
	after int64
}

// cellChange is a row's cell to swap.
type cellChange struct {
	row  *templates.RenderedRow
	cell int
}

// diffRows compares two lists of rows. The rows that keep their place are the longest run of
// the new list in the old one's order; the others are taken out and put back where they go.
func diffRows(prev, next []*templates.RenderedRow) rowChanges {
	if len(prev) == 0 || len(next) == 0 {
		return rowChanges{whole: true} // the empty table's one row comes or goes
	}
	was := make(map[int64]int, len(prev))
	for i, r := range prev {
		was[r.ID] = i
	}
	var common []int // the places in next of the rows prev shows too
	var wasAt []int  // and theirs in prev
	for i, r := range next {
		if j, ok := was[r.ID]; ok {
			common, wasAt = append(common, i), append(wasAt, j)
		}
	}
	stays := make([]bool, len(next))
	for k, in := range longestIncreasing(wasAt) {
		stays[common[k]] = in
	}
	var c rowChanges
	shown := make(map[int64]bool, len(next))
	for i, r := range next {
		shown[r.ID] = true
		if !stays[i] {
			after := int64(0)
			if i > 0 {
				after = next[i-1].ID
			}
			c.inserts = append(c.inserts, rowInsert{row: r, after: after})
			if _, ok := was[r.ID]; ok {
				c.deleted = append(c.deleted, r.ID)
			}
			continue
		}
		c.compare(prev[was[r.ID]], r)
	}
	for _, r := range prev {
		if !shown[r.ID] {
			c.deleted = append(c.deleted, r.ID)
		}
	}
	if 2*(len(c.inserts)+len(c.deleted)) > len(next) {
		return rowChanges{whole: true}
	}
	return c
}

// compare notes what changed between two renderings of a row in place: the row, when its class
// changed (only the whole row carries it) or most of its cells did, else the cells that did,
// and its sparkline's new points when it moved on by a few on the same scale.
func (c *rowChanges) compare(old, now *templates.RenderedRow) {
	if now.Same(old) {
		return
	}
	var cells []cellChange
	var spark *templates.SparkShift
	for i := range now.Cells() {
		if bytes.Equal(now.Cell(i), old.Cell(i)) {
			continue
		}
		if i == templates.SparkCell && now.SparkTop == old.SparkTop {
			if drop, cut, points, ok := templates.ShiftOf(old.Sparkline, now.Sparkline); ok {
				spark = &templates.SparkShift{ID: now.ID, Drop: drop, Cut: cut, Points: points}
				continue
			}
		}
		cells = append(cells, cellChange{row: now, cell: i})
	}
	if now.Class != old.Class || 2*len(cells) > now.Cells() {
		c.rows = append(c.rows, now)
		return
	}
	c.cells = append(c.cells, cells...)
	if spark != nil {
		c.sparks = append(c.sparks, *spark)
	}
}

// messages are the push's messages for the rows of p: the whole body, or the rows taken out and
// put in, the rows swapped, the cells swapped and the sparklines' new points, each kind a
// message; nil for a kind without any.
func (c rowChanges) messages(p templates.OverviewProps) []templ.Component {
	if c.whole {
		return []templ.Component{templates.OverviewRows(p, true)}
	}
	var moves, cells []templ.Component
	for _, id := range c.deleted {
		moves = append(moves, templates.RowDelete(id))
	}
	for _, in := range c.inserts {
		moves = append(moves, templates.RowInsert(in.row, in.after))
	}
	for _, ch := range c.cells {
		cells = append(cells, ch.row.CellSwapped(ch.cell, p.Nav))
	}
	out := []templ.Component{join(moves), nil, join(cells), nil}
	if len(c.rows) > 0 {
		out[1] = templates.OverviewRowsChanged(c.rows)
	}
	if len(c.sparks) > 0 {
		out[3] = templates.SparkPoints(c.sparks, true)
	}
	return out
}

// join renders components one after another; nil for none.
func join(cs []templ.Component) templ.Component {
	if len(cs) == 0 {
		return nil
	}
	return templ.Join(cs...)
}

// longestIncreasing marks the values of one longest strictly increasing subsequence of vals
// (patience sorting, O(n log n)).
func longestIncreasing(vals []int) []bool {
	tails := []int{}               // tails[k]: the index in vals of the smallest end of a run of k+1
	prev := make([]int, len(vals)) // the index before each in its run, -1 for none
	for i, v := range vals {
		lo, hi := 0, len(tails)
		for lo < hi {
			mid := (lo + hi) / 2
			if vals[tails[mid]] < v {
				lo = mid + 1
			} else {
				hi = mid
			}
		}
		prev[i] = -1
		if lo > 0 {
			prev[i] = tails[lo-1]
		}
		if lo == len(tails) {
			tails = append(tails, i)
		} else {
			tails[lo] = i
		}
	}
	in := make([]bool, len(vals))
	if len(tails) > 0 {
		for i := tails[len(tails)-1]; i >= 0; i = prev[i] {
			in[i] = true
		}
	}
	return in
}
