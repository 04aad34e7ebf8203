package server

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// overviewPage answers GET /?q=&misconfigured=1&account=&region=&sort=&dir=&scale=&page=: what
// needs a person, then one page of the queues, filtered (by name, to those the advisor found
// something on, to one account and one region), sorted and scaled on the server so that the
// links work without JavaScript; an HTMX request gets the table alone. The rows are the current snapshot's, rendered once for every page.
func (s *Server) overviewPage(c echo.Context) error {
	p, err := overviewView(c)
	if err != nil {
		return err
	}
	p.Page = s.page(c, "Queues", "overview", live.Overview().String())
	p.TopicInside = true // the table opens the websocket with its filter and sort
	if _, err := s.overviewOf(c.Request().Context(), &p); err != nil {
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
	if _, err := intParam(c, "page", 1, 1, math.MaxInt32); err != nil {
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
	page, err := strconv.Atoi(v.Get("page"))
	if err != nil || page < 1 {
		page = 1
	}
	return templates.OverviewProps{Query: v.Get("q"), Misconfigured: v.Get("misconfigured") == "1",
		Account: v.Get("account"), Region: v.Get("region"), Sort: key, Dir: dir, SharedScale: v.Get("scale") == "shared",
		PageNo: page}
}

// overviewOf fills a view of the overview with the current snapshot: its queues, filtered and
// sorted as the view says, the rows of the view's page as rendered once for the snapshot and
// scaled, and its freshness now. It returns the snapshot's rendering.
func (s *Server) overviewOf(ctx context.Context, p *templates.OverviewProps) (*overviewRendering, error) {
	snap, err := s.opts.Views.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	r := s.renderingOf(snap)
	p.Overview = snap.Overview
	p.Freshness = snap.FreshnessAt(s.opts.Now().UTC())
	p.Overview.Freshness = p.Freshness
	p.StaleAfter = s.staleAfter()
	order := overviewOrder(snap.Overview.Queues, p.Query, p.Misconfigured, p.Account, p.Region, p.Sort, p.Dir)
	p.Matching = len(order)
	p.PageNo = min(max(p.PageNo, 1), p.Pages())
	order = order[(p.PageNo-1)*templates.OverviewPageSize : min(p.PageNo*templates.OverviewPageSize, len(order))]
	if p.Rows, err = r.rows(ctx, p.Nav, order); err != nil {
		return nil, err
	}
	if p.SharedScale {
		top := templates.SparkTop(p.Rows)
		for i, row := range p.Rows {
			if p.Rows[i], err = row.WithSparkTop(ctx, top, p.Nav); err != nil {
				return nil, fmt.Errorf("render: %w", err)
			}
		}
	}
	return r, nil
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

// overviewOrder filters queues by a name fragment (and to the misconfigured ones, to one
// account and one region) and sorts them by a column, as indexes into queues; the "health" order
// is the views' own (unhealthy first, then by account, region and name), kept as it comes.
func overviewOrder(queues []views.QueueSummary, q string, misconfigured bool, account, region, key, dir string) []int {
	needle := strings.ToLower(q)
	order := make([]int, 0, len(queues))
	for i, qs := range queues {
		if needle != "" && !strings.Contains(strings.ToLower(qs.Name), needle) {
			continue
		}
		if !qs.InScope(account, region) {
			continue
		}
		if misconfigured && !qs.Misconfigured() {
			continue
		}
		order = append(order, i)
	}
	if key == "health" {
		if dir == "desc" {
			slices.Reverse(order)
		}
		return order
	}
	slices.SortStableFunc(order, func(i, j int) int {
		a, b := &queues[i], &queues[j]
		c := compareBy(key, a, b)
		if c == 0 {
			c = cmp.Compare(a.Name, b.Name)
		}
		if dir == "desc" {
			return -c
		}
		return c
	})
	return order
}

// compareBy compares two queues by one overview column. Unknown values (no datapoint yet, no
// DLQ) sort before every known one.
func compareBy(key string, a, b *views.QueueSummary) int {
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
