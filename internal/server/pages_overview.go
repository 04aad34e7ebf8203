package server

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"hash/maphash"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/parallel"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// overviewPage answers GET /?q=&misconfigured=1&account=&region=&sort=&dir=: every queue, filtered
// (by name, to those the advisor found something on, to one account and one region) and sorted on the server so that the links work without
// JavaScript; an HTMX request gets the table alone.
func (s *Server) overviewPage(c echo.Context) error {
	view, err := overviewView(c)
	if err != nil {
		return err
	}
	ov, err := s.opts.Views.Overview(c.Request().Context())
	if err != nil {
		return err
	}
	p := s.overviewProps(view, ov)
	p.Page = s.page(c, "Queues", "overview", live.Overview().String())
	p.TopicInside = true // the table opens the websocket with its filter and sort
	if p.RowSet, err = s.rows.Prepare(c.Request().Context(), p.Rows, p.Nav); err != nil {
		return err
	}
	if err := p.RowSet.Render(c.Request().Context()); err != nil {
		return err
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.OverviewTable(p))
	}
	return render(c, http.StatusOK, templates.OverviewPage(p))
}

// overviewView reads what an overview request shows (filters, sort, sparkline scale), for the
// page and its websocket alike; a filter that is too long or holds control characters is a 400.
func overviewView(c echo.Context) (templates.OverviewProps, error) {
	if _, err := textParam(c, "q", 200); err != nil {
		return templates.OverviewProps{}, err
	}
	if _, _, err := scopeParams(c); err != nil {
		return templates.OverviewProps{}, err
	}
	return overviewViewOf(c.QueryParams()), nil
}

// overviewViewOf is the overview's view in query values (a request's, or a subscription's as
// overviewView checked and OverviewProps.View wrote them).
func overviewViewOf(v url.Values) templates.OverviewProps {
	key, dir := sortParams(v)
	return templates.OverviewProps{Query: v.Get("q"), Misconfigured: v.Get("misconfigured") == "1",
		Account: v.Get("account"), Region: v.Get("region"), Sort: key, Dir: dir, SharedScale: v.Get("scale") == "shared"}
}

// overviewProps fills a view with the overview's queues, filtered, sorted and scaled as it says,
// their rows rendered through the server's row cache.
func (s *Server) overviewProps(view templates.OverviewProps, ov views.Overview) templates.OverviewProps {
	p := view
	p.Overview = ov
	s.rows.Fit(len(ov.Queues))
	p.RowCache = s.rows
	p.Rows = overviewRows(ov.Queues, p.Query, p.Misconfigured, p.Account, p.Region, p.Sort, p.Dir)
	shareScale(p.Rows, p.SharedScale)
	p.Freshness = ov.Freshness
	return p
}

// sortParams returns the overview's sort column and direction, defaulting to the views' order
// (unhealthy first) for anything it does not know.
func sortParams(v url.Values) (key, dir string) {
	key = "health"
	for _, col := range templates.OverviewColumns {
		if v.Get("sort") == col.Key {
			key = col.Key
		}
	}
	dir = "asc"
	if v.Get("dir") == "desc" {
		dir = "desc"
	}
	return key, dir
}

// overviewRows filters queues by a name fragment (and to the misconfigured ones, to one account
// and one region) and sorts them by a column; the "health" order is the views' own (unhealthy
// first, then by account, region and name), kept as it comes.
func overviewRows(queues []views.QueueSummary, q string, misconfigured bool, account, region, key, dir string) []templates.OverviewRow {
	needle := strings.ToLower(q)
	rows := make([]templates.OverviewRow, 0, len(queues))
	for _, qs := range queues {
		if needle != "" && !strings.Contains(strings.ToLower(qs.Name), needle) {
			continue
		}
		if !qs.InScope(account, region) {
			continue
		}
		if misconfigured && !qs.Misconfigured() {
			continue
		}
		rows = append(rows, templates.OverviewRow{QueueSummary: qs})
	}
	if key == "health" {
		if dir == "desc" {
			slices.Reverse(rows)
		}
		return rows
	}
	slices.SortStableFunc(rows, func(a, b templates.OverviewRow) int {
		c := compareBy(key, a.QueueSummary, b.QueueSummary)
		if c == 0 {
			c = cmp.Compare(a.Name, b.Name)
		}
		if dir == "desc" {
			return -c
		}
		return c
	})
	return rows
}

// shareScale draws every row's sparkline to the largest value of them all, when shared.
func shareScale(rows []templates.OverviewRow, shared bool) {
	if !shared {
		return
	}
	top := templates.SparkTop(rows)
	for i := range rows {
		rows[i].SparkTop = top
	}
}

// compareBy compares two queues by one overview column. Unknown values (no datapoint yet, no
// DLQ) sort before every known one.
func compareBy(key string, a, b views.QueueSummary) int {
	switch key {
	case "type":
		return cmp.Compare(templates.QueueType(a.FIFO), templates.QueueType(b.FIFO))
	case "visible":
		return cmp.Compare(a.Visible, b.Visible)
	case "inflight":
		return cmp.Compare(a.InFlight, b.InFlight)
	case "delayed":
		return cmp.Compare(a.Delayed, b.Delayed)
	case "oldest":
		return compareOpt(a.OldestMessageAgeSeconds, b.OldestMessageAgeSeconds)
	case "dlq":
		return compareOpt(a.DeadLetterQueueDepth, b.DeadLetterQueueDepth)
	}
	return cmp.Compare(a.Name, b.Name)
}

func compareOpt[T cmp.Ordered](a, b *T) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return -1
	case b == nil:
		return 1
	}
	return cmp.Compare(*a, *b)
}

// overviewMemo is what the previous push of one overview view showed: the rows in their order,
// what each row showed, and a hash of each part's rendering.
type overviewMemo struct {
	order []int64
	rows  map[int64]rowMemo
	parts [4]uint64 // sight, totals, cost, attention
}

// rowMemo is what one row of the overview showed: its fingerprints (templates.PrintRow) and,
// once the row has changed in a push, its class and a hash of each cell's rendering, so that the
// next change sends the cells that changed instead of the row.
type rowMemo struct {
	print templates.RowPrint
	class string
	cells []uint64 // nil until the row's first change
}

// overviewPush renders what the hub sends the overview subscribers of one view, filtered and
// sorted as their URL says (one rendering for all of them). Pages that have the previous push
// (memo) get what changed: of a row whose class changed (or that changed for the first time
// since they subscribed) the row, swapped by its id; of the others the cells that changed, each
// swapped by its row's id and its column; the parts among sight, totals and cost that changed,
// and the freshness. They get the whole table body when the set or the order of the rows
// changed. Pages that just subscribed get everything.
func (s *Server) overviewPush(ctx context.Context, view pageView, changes live.Changes, memo any) (live.Push, error) {
	ov, err := s.opts.Views.Overview(ctx)
	if err != nil {
		return live.Push{}, err
	}
	p := s.overviewProps(overviewViewOf(view.query()), ov)
	p.Nav = view.Nav
	p.Now = s.opts.Now().UTC()
	p.StaleAfter = s.staleAfter()
	if p.RowSet, err = s.rows.Prepare(ctx, p.Rows, p.Nav); err != nil {
		return live.Push{}, err
	}

	// A row changed when what it renders from did: its fingerprint tells, without rendering it.
	prev, _ := memo.(*overviewMemo)
	memos := make([]rowMemo, len(p.Rows))
	var changedAt []int // the rows the previous push did not show as they are now (changed, or new)
	for i, r := range p.Rows {
		memos[i] = rowMemo{print: p.RowSet.Print(i)}
		if prev != nil {
			if was, known := prev.rows[r.ID]; known && was.print == memos[i].print {
				memos[i] = was
			} else {
				changedAt = append(changedAt, i)
			}
		}
	}
	// Of each changed row, its class and each cell rendered as it would be swapped, hashed: on
	// every processor, as a thousand rows change when the sparklines move on. The changed rows
	// are split, not the rows: they are often neighbours, and one stretch would get them all.
	// A row of which only the sparkline moved on shows the rest as it did: its sparkline's cell
	// alone is rendered.
	cellsOf := make([][]string, len(p.Rows))
	err = parallel.Stretches(ctx, len(changedAt), func(ctx context.Context, from, to int) error {
		var buf bytes.Buffer
		for _, i := range changedAt[from:to] {
			r, m := p.Rows[i], &memos[i]
			cells := templates.QueueCells(r, p.Nav)
			was := prev.rows[r.ID]
			sparkOnly := was.cells != nil && was.print.Frame == m.print.Frame
			if sparkOnly {
				m.class, m.cells = was.class, slices.Clone(was.cells)
			} else {
				m.class, m.cells = templates.RowClass(r), make([]uint64, len(cells))
			}
			cellsOf[i] = make([]string, len(cells))
			for j, cell := range cells {
				if sparkOnly && j != templates.SparkCell {
					continue
				}
				buf.Reset()
				if err := cell(templates.CellSwap(r.ID, j)).Render(ctx, &buf); err != nil {
					return fmt.Errorf("render: %w", err)
				}
				m.cells[j], cellsOf[i][j] = maphash.Bytes(pushSeed, buf.Bytes()), buf.String()
			}
		}
		return nil
	})
	if err != nil {
		return live.Push{}, err
	}
	next := &overviewMemo{order: make([]int64, len(p.Rows)), rows: make(map[int64]rowMemo, len(p.Rows))}
	var changedRows, cellRows []templates.OverviewRow // cellRows: the rows of changedCells
	var changedCells []templ.Component
	for i, r := range p.Rows {
		next.order[i], next.rows[r.ID] = r.ID, memos[i]
	}
	for _, i := range changedAt {
		r := p.Rows[i]
		was, m := prev.rows[r.ID], memos[i]
		if was.cells == nil || was.class != m.class || len(was.cells) != len(m.cells) {
			changedRows = append(changedRows, r)
			continue
		}
		n := len(changedCells)
		for j := range m.cells {
			if m.cells[j] != was.cells[j] {
				changedCells = append(changedCells, templ.Raw(cellsOf[i][j]))
			}
		}
		if len(changedCells) > n {
			cellRows = append(cellRows, r)
		}
	}
	// A push carries rows or cells, not both. htmx parses a push as a template's content, where
	// a cell after a row is put in a row of its own and a row after a cell loses its tags, and
	// the websocket extension swaps only what is at the top: when some rows go whole, so do the
	// rows whose cells changed.
	if len(changedRows) > 0 && len(changedCells) > 0 {
		changedRows, changedCells = append(changedRows, cellRows...), nil
	}
	var buf bytes.Buffer
	hash := func(c templ.Component) (uint64, error) {
		buf.Reset()
		if err := c.Render(ctx, &buf); err != nil {
			return 0, fmt.Errorf("render: %w", err)
		}
		return maphash.Bytes(pushSeed, buf.Bytes()), nil
	}
	for i, c := range []templ.Component{templates.Sight(ov.Sight, p.Nav, true), templates.Totals(ov.Totals, true), templates.Cost(ov.Cost, true)} {
		if next.parts[i], err = hash(c); err != nil {
			return live.Push{}, err
		}
	}
	// The problem list is long in a troubled fleet: its fingerprint tells whether it changed.
	next.parts[3] = templates.AttentionPrint(ov.Problems, p.Nav, true)
	reordered := prev == nil || !slices.Equal(prev.order, next.order)
	push := live.Push{Memo: next}
	if reordered || changes[live.Connect] {
		if err := p.RowSet.Render(ctx); err != nil {
			return live.Push{}, err
		}
		if push.Full, err = renderBytes(ctx, templates.OverviewPush(p)); err != nil {
			return live.Push{}, err
		}
	}
	if reordered {
		push.Update = push.Full
		return push, nil
	}
	parts := templates.OverviewParts{
		Sight: prev.parts[0] != next.parts[0], Totals: prev.parts[1] != next.parts[1], Cost: prev.parts[2] != next.parts[2],
		Attention: prev.parts[3] != next.parts[3],
	}
	if push.Update, err = renderBytes(ctx, templates.OverviewChanges(p, changedRows, changedCells, parts)); err != nil {
		return live.Push{}, err
	}
	return push, nil
}

// pushSeed hashes renderings to compare them with the previous push's; one seed for the
// process, so that equal renderings hash equal from push to push.
var pushSeed = maphash.MakeSeed()
