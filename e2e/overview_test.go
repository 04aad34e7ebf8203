package e2e_test

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// demoQueues are the queues internal/traffic creates.
var demoQueues = []string{
	"tool-calls.fifo", "tool-calls-dlq.fifo",
	"web-search", "web-search-dlq",
	"notifications",
	"exports", "exports-dlq",
	"tool-call-audit", "tool-call-audit-dlq",
}

// prodDemoQueues are the same queues in the demo's second account, tools-prod, whose names
// start with prod-.
var prodDemoQueues = func() []string {
	out := make([]string, 0, len(demoQueues))
	for _, q := range demoQueues {
		out = append(out, "prod-"+q)
	}
	return out
}()

// overviewRowsJS reads the overview's rows as the user sees them: each row's id, queue name, its
// account and region label and the text of every column, keyed by the column's header.
const overviewRowsJS = `(() => {
	const heads = [...document.querySelectorAll('table.queues thead th')].map(th => th.textContent.trim());
	return [...document.querySelectorAll('tr[id^="queue-row-"]')].map(tr => {
		const row = {id: tr.id, name: (tr.querySelector('th a')?.textContent ?? '').trim(), region: (tr.querySelector('th .region')?.textContent ?? '').trim()};
		[...tr.children].forEach((cell, i) => { if (i > 0 && heads[i]) row[heads[i]] = cell.textContent.trim(); });
		return row;
	});
})()`

type overviewRow map[string]string

// overviewRows waits until the overview in p shows a row for each of the queues, and returns
// the rows by queue name.
func overviewRows(p *tab, timeout time.Duration, queues ...string) map[string]overviewRow {
	p.t.Helper()
	rows := waitJS(p, timeout, "overview rows of "+strings.Join(queues, ", "), overviewRowsJS, func(rows []overviewRow) bool {
		names := map[string]bool{}
		for _, r := range rows {
			names[r["name"]] = true
		}
		for _, q := range queues {
			if !names[q] {
				return false
			}
		}
		return true
	})
	byName := map[string]overviewRow{}
	for _, r := range rows {
		byName[r["name"]] = r
	}
	return byName
}

// count reads a number the way the templates print it ("1 234" with a narrow no-break space);
// -1 for "–" (unknown) or anything else that is not a number.
func count(s string) int {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		if r == ' ' || r == '\u202f' || r == '\u00a0' || r == ',' {
			return -1
		}
		return 'x'
	}, s)
	n, err := strconv.Atoi(digits)
	if err != nil {
		return -1
	}
	return n
}

// TestOverviewListsEveryQueue: the overview has one row, with a stable id, for each demo queue
// of both accounts, each saying its account.
func TestOverviewListsEveryQueue(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))

	all := append(slices.Clone(demoQueues), prodDemoQueues...)
	rows := overviewRows(p, 60*time.Second, all...)
	for _, q := range prodDemoQueues {
		if got := rows[q]["region"]; got != "tools-prod · us-east-1" {
			t.Errorf("row of %s says %q, want its account tools-prod", q, got)
		}
	}
	for _, q := range all {
		r := rows[q]
		if !strings.HasPrefix(r["id"], "queue-row-") || count(strings.TrimPrefix(r["id"], "queue-row-")) < 0 {
			t.Errorf("row of %s has id %q, want queue-row-<id>", q, r["id"])
		}
	}
	if extra := slices.DeleteFunc(slices.Sorted(maps.Keys(rows)), func(n string) bool { return slices.Contains(all, n) }); len(extra) > 0 {
		t.Errorf("rows of queues the demo does not have: %q", extra)
	}
	for _, q := range []string{"tool-calls.fifo", "tool-calls-dlq.fifo"} {
		if got := rows[q]["Type"]; got != "FIFO" {
			t.Errorf("%s: type %q, want FIFO", q, got)
		}
	}
	if got := rows["notifications"]["DLQ depth"]; got != "no DLQ" {
		t.Errorf("notifications: DLQ column %q, want %q", got, "no DLQ")
	}
	if got := mustEval[string](p, `document.getElementById('freshness')?.textContent.trim() ?? ''`); got == "" {
		t.Error("the overview does not say how fresh its data is (#freshness empty or missing)")
	}
}

// TestOverviewUpdatesLive: with the overview open, messages sent to a queue show in its row
// within seconds, pushed over the websocket: the page is never reloaded.
//
// The messages are delayed (DelaySeconds 900), so that the demo's workers cannot receive them
// before the dashboard counts them: the row's Delayed column must grow by exactly what the
// test sent, where the Visible column moves with the traffic anyway.
func TestOverviewUpdatesLive(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))
	before := count(overviewRows(p, 60*time.Second, "notifications")["notifications"]["Delayed"])
	if before < 0 {
		t.Fatalf("notifications: Delayed column is not a number")
	}
	// A reload would drop this; Evaluate runs through the DevTools protocol, which the page's
	// CSP does not govern.
	mustEval[int](p, `window.__toolqMarker = 42`)

	const n = 25
	msgs := toolCalls("live", "send_email", n, false)
	for i := range msgs {
		msgs[i].DelaySeconds = 900
	}
	d.send(t, "notifications", msgs...)

	waitJS(p, 15*time.Second, "notifications' Delayed column to grow by "+strconv.Itoa(n), overviewRowsJS, func(rows []overviewRow) bool {
		for _, r := range rows {
			if r["name"] == "notifications" {
				return count(r["Delayed"]) >= before+n
			}
		}
		return false
	})
	if marker := mustEval[int](p, `window.__toolqMarker ?? 0`); marker != 42 {
		t.Fatalf("the page was reloaded (marker %d): the update must come without a reload", marker)
	}
	if nav := mustEval[int](p, `performance.getEntriesByType('navigation').length`); nav != 1 {
		t.Errorf("navigations in the tab: %d, want 1", nav)
	}
}

// TestCellPushSwapsOneCell: a push that carries one cell of a row (what the server sends when a
// row changed only there) replaces that cell alone, through the page's own websocket handling:
// the row stays the same element, its other cells as they were, and the new cell gets its
// column's label. The cell is rendered by the templates the server renders pushes with.
func TestCellPushSwapsOneCell(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))
	row := overviewRows(p, 60*time.Second, "notifications")["notifications"]
	id, err := strconv.ParseInt(strings.TrimPrefix(row["id"], "queue-row-"), 10, 64)
	if err != nil {
		t.Fatalf("row id %q: %v", row["id"], err)
	}
	const delayed = 987654
	cells := templates.QueueCells(templates.OverviewRow{QueueSummary: views.QueueSummary{ID: id, Delayed: delayed}}, templates.Nav{})
	var push strings.Builder
	if err := cells[4](templates.CellSwap(id, 4)).Render(t.Context(), &push); err != nil {
		t.Fatal(err)
	}
	// Delivered as the websocket delivers a message, to the handlers the page set on it.
	got := mustEval[struct {
		Same     bool
		Cells    int
		Delayed  string
		Label    string
		Name     string
		Leftover bool
	}](p, fmt.Sprintf(`(() => {
		const tr = document.getElementById(%[1]s);
		tr.__kept = true;
		const socket = document.querySelector('[ws-connect]')['htmx-internal-data'].webSocket.socket;
		socket.dispatchEvent(new MessageEvent('message', {data: %[2]s}));
		const now = document.getElementById(%[1]s);
		return {same: now.__kept === true, cells: now.children.length, delayed: now.children[4].textContent.trim(),
			label: now.children[4].getAttribute('data-label') ?? '', name: now.querySelector('th a').textContent.trim(),
			leftover: document.querySelector('[hx-swap-oob]') !== null};
	})()`, jsString(row["id"]), jsString(push.String())))
	if !got.Same || got.Cells != 9 || count(got.Delayed) != delayed || got.Name != "notifications" {
		t.Errorf("after the cell push: row kept %v, %d cells, Delayed %q, name %q; want the same row, 9 cells, %d, notifications",
			got.Same, got.Cells, got.Delayed, got.Name, delayed)
	}
	if got.Label != "Delayed" {
		t.Errorf("the pushed cell is labelled %q, want its column's header, Delayed", got.Label)
	}
	if got.Leftover {
		t.Error("an element of the page kept its hx-swap-oob attribute")
	}
}

// htmxWatchJS records, from now on, every htmx error event the page raises (a push swapping into
// a target the page lacks, a swap that throws) and every websocket message htmx handled.
const htmxWatchJS = `(() => {
	window.__toolqHtmx = {errors: [], messages: 0};
	for (const name of ['htmx:oobErrorNoTarget', 'htmx:swapError', 'htmx:targetError', 'htmx:onLoadError',
		'htmx:evalDisallowedError', 'htmx:syntax:error', 'htmx:wsError']) {
		document.addEventListener(name, e => window.__toolqHtmx.errors.push(name + ' ' +
			((e.detail && (e.detail.content?.outerHTML || e.detail.target?.id || e.detail.error)) || '').toString().slice(0, 200)));
	}
	document.addEventListener('htmx:wsAfterMessage', () => window.__toolqHtmx.messages++);
	return true;
})()`

// costFooterJS reads the overview's cost footer: its sections (per loop, per account) and the
// rows of each one's table.
const costFooterJS = `Array.from(document.querySelectorAll('#cost details')).map(d =>
	d.querySelector('summary').textContent.trim() + ': ' + d.querySelectorAll('table tbody tr').length)`

// TestLivePushesRaiseNoHtmxErrors: a minute of live pushes on the overview of the demo, whose
// queues change every second, raises no htmx error event (each pushed element finds its target
// and swaps), and the cost footer keeps its tables: the pushes are parsed one kind of element a
// message, so a table's rows can no longer swallow what comes after them.
func TestLivePushesRaiseNoHtmxErrors(t *testing.T) {
	t.Parallel() // a minute of watching, beside the other tests
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))
	p.waitSelector(60*time.Second, "#cost details")
	mustEval[bool](p, htmxWatchJS)
	before := waitJS(p, 30*time.Second, "the cost footer's tables", costFooterJS, func(parts []string) bool { return len(parts) > 0 })
	time.Sleep(time.Minute) // the minute of pushes watched, not a wait for something to happen
	watch := mustEval[struct {
		Errors   []string
		Messages int
	}](p, `window.__toolqHtmx`)
	if len(watch.Errors) > 0 {
		t.Errorf("%d htmx errors in a minute of %d pushed messages, first: %q", len(watch.Errors), watch.Messages, watch.Errors[:min(5, len(watch.Errors))])
	}
	if watch.Messages < 30 {
		t.Errorf("%d pushed messages in a minute of a demo that changes every second: the test watched nothing", watch.Messages)
	}
	after := mustEval[[]string](p, costFooterJS)
	if strings.Join(after, "; ") != strings.Join(before, "; ") {
		t.Errorf("the cost footer was %q before the pushes, %q after", before, after)
	}
	for _, part := range after {
		if strings.HasSuffix(part, ": 0") {
			t.Errorf("the cost footer's %q table is empty", part)
		}
	}
}

// sparkCell is what a sparkline cell of the overview shows, as the page has it now.
type sparkCell struct {
	Row    string
	Values string
	Top    string
	Points string
	Label  string
	Range  string
}

// sparkCellsJS reads every sparkline cell of the overview.
const sparkCellsJS = `Array.from(document.querySelectorAll('#overview-rows .spark-cell')).map(c => ({
	row: c.closest('tr').id, values: c.getAttribute('data-v'), top: c.getAttribute('data-top'),
	points: c.querySelector('polyline').getAttribute('points'), label: c.querySelector('svg').getAttribute('aria-label'),
	range: c.querySelector('.spark-range').textContent}))`

// TestSparklinesDrawnByThePage: a push sends a sparkline's new points and app.js draws the line
// again; what it draws is what the server draws from the same values (web/templates: Spark).
// The test hands the page a push of points as the server writes it (SparkShiftsText's form),
// read, shifted and read again in one turn of the page's event loop so that no real push comes
// between, and compares each shifted cell with the server's drawing of the shifted values.
func TestSparklinesDrawnByThePage(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))
	waitJS(p, 150*time.Second, "sparklines of two points or more", sparkCellsJS, func(cs []sparkCell) bool { return len(cs) > 0 })
	// Each row drops its first value when its place is odd, and takes 1000×place and 7.5.
	got := mustEval[struct{ Before, After []sparkCell }](p, `(() => {
		const before = `+sparkCellsJS+`;
		const points = before.map((c, i) => c.row.replace('queue-row-', '') + ' ' + (i % 2) + ' 0 ' + (1000 * i) + ' 7.5').join(';');
		document.getElementById('spark-points').setAttribute('data-points', points);
		document.body.dispatchEvent(new CustomEvent('htmx:wsAfterMessage', {bubbles: true}));
		return {before: before, after: `+sparkCellsJS+`};
	})()`)
	if len(got.After) != len(got.Before) {
		t.Fatalf("%d sparklines before the shift, %d after", len(got.Before), len(got.After))
	}
	for i, c := range got.Before {
		values := floats(t, c.Values)
		shift := templates.SparkShift{ID: int64(count(strings.TrimPrefix(c.Row, "queue-row-"))), Drop: i % 2, Points: []float64{float64(1000 * i), 7.5}}
		next := append(slices.Clone(values[shift.Drop:]), shift.Points...)
		want := sparkCell{Row: c.Row, Values: templates.SparkValues(next), Top: c.Top, Points: templates.SparklineTo(next, floats(t, c.Top)[0]),
			Label: templates.SparklineLabel(next), Range: templates.SparkRange(next)}
		if got.After[i] != want {
			t.Errorf("%s: the page drew\n%+v\nthe server draws\n%+v", c.Row, got.After[i], want)
		}
	}
}

// floats reads space-separated numbers.
func floats(t *testing.T, s string) []float64 {
	t.Helper()
	var out []float64
	for _, f := range strings.Fields(s) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		out = append(out, v)
	}
	return out
}
