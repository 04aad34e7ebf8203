package server

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// overviewPage answers GET /?q=&misconfigured=1&sort=&dir=: every queue, filtered (by name, and to
// those the advisor found something on) and sorted on the server so that the links work without
// JavaScript; an HTMX request gets the table alone.
func (s *Server) overviewPage(c echo.Context) error {
	q, err := textParam(c, "q", 200)
	if err != nil {
		return err
	}
	sortKey, dir := sortParams(c)
	ov, err := s.opts.Views.Overview(c.Request().Context())
	if err != nil {
		return err
	}
	misconfigured := c.QueryParam("misconfigured") == "1"
	p := templates.OverviewProps{
		Page:          s.page(c, "Queues", "overview", live.Overview().String()),
		Overview:      ov,
		Rows:          overviewRows(ov.Queues, q, misconfigured, sortKey, dir),
		Sort:          sortKey,
		Dir:           dir,
		Query:         q,
		Misconfigured: misconfigured,
	}
	p.Freshness = ov.Freshness
	p.TopicInside = true // the table opens the websocket with its filter and sort
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.OverviewTable(p))
	}
	return render(c, http.StatusOK, templates.OverviewPage(p))
}

// sortParams returns the overview's sort column and direction, defaulting to the views' order
// (unhealthy first) for anything it does not know.
func sortParams(c echo.Context) (key, dir string) {
	key = "health"
	for _, col := range templates.OverviewColumns {
		if c.QueryParam("sort") == col.Key {
			key = col.Key
		}
	}
	dir = "asc"
	if c.QueryParam("dir") == "desc" {
		dir = "desc"
	}
	return key, dir
}

// overviewRows filters queues by a name fragment (and to the misconfigured ones) and sorts them
// by a column; the "health" order is the views' own (unhealthy first, then by name), kept as it
// comes.
func overviewRows(queues []views.QueueSummary, q string, misconfigured bool, key, dir string) []templates.OverviewRow {
	needle := strings.ToLower(q)
	rows := make([]templates.OverviewRow, 0, len(queues))
	for _, qs := range queues {
		if needle != "" && !strings.Contains(strings.ToLower(qs.Name), needle) {
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

// overviewPush renders what the hub sends the overview subscribers of one view: the table's
// body filtered and sorted as their URL says (one rendering for all of them), the totals, the
// cost and the freshness.
func (s *Server) overviewPush(ctx context.Context, view pageView) ([]byte, error) {
	ov, err := s.opts.Views.Overview(ctx)
	if err != nil {
		return nil, err
	}
	query := view.query()
	sortKey, dir := query.Get("sort"), query.Get("dir")
	if sortKey == "" {
		sortKey, dir = "health", "asc"
	}
	q, misconfigured := query.Get("q"), query.Get("misconfigured") == "1"
	p := templates.OverviewProps{Overview: ov, Rows: overviewRows(ov.Queues, q, misconfigured, sortKey, dir), Sort: sortKey, Dir: dir, Query: q, Misconfigured: misconfigured}
	p.Nav = view.Nav
	p.Now = s.opts.Now().UTC()
	p.Freshness, p.StaleAfter = ov.Freshness, s.staleAfter()
	return renderBytes(ctx, templates.OverviewPush(p))
}
