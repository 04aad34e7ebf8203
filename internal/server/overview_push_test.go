package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// applyPush swaps a push's messages into a page as htmx-ext-ws does: each message parsed on its
// own as a template's content, each of its top-level elements swapped out of band by its
// hx-swap-oob ("true": the element of its id; "style:selector": the elements the selector finds,
// with the element itself for outerHTML and its children for the other styles). A swap whose
// target is missing fails the test, as htmx reports htmx:oobErrorNoTarget.
func applyPush(t *testing.T, page *goquery.Document, msgs [][]byte) {
	t.Helper()
	for _, msg := range msgs {
		parseFragment(t, msg).Find("template").First().Children().Each(func(_ int, el *goquery.Selection) {
			value := el.AttrOr("hx-swap-oob", "true")
			style, selector := "outerHTML", "#"+el.AttrOr("id", "")
			switch before, after, found := strings.Cut(value, ":"); {
			case found:
				style, selector = before, after
			case value != "true":
				style = value
			}
			el.RemoveAttr("hx-swap-oob")
			targets := page.Find(selector)
			if targets.Length() == 0 {
				t.Errorf("htmx:oobErrorNoTarget: %s swaps %q, which the page does not have", goquery.NodeName(el), selector)
				return
			}
			targets.Each(func(_ int, target *goquery.Selection) {
				switch style {
				case "outerHTML":
					target.ReplaceWithSelection(el.Clone())
				case "innerHTML":
					target.Empty().AppendSelection(el.Children().Clone())
				case "afterbegin":
					target.PrependSelection(el.Children().Clone())
				case "beforeend":
					target.AppendSelection(el.Children().Clone())
				case "afterend":
					target.AfterSelection(el.Children().Clone())
				case "delete":
					target.Remove()
				default:
					t.Errorf("a push swaps with %q, which this test does not know", style)
				}
			})
		})
		shiftSparks(t, page)
	}
}

// shiftSparks does what app.js does after each message: it shifts the sparklines that
// #spark-points names by their new points and draws them again, as Spark draws them (app.js
// draws them as the server does: TestSparklinesDrawnByThePage, e2e).
func shiftSparks(t *testing.T, page *goquery.Document) {
	t.Helper()
	carrier := page.Find("#" + ids.SparkPoints())
	text, ok := carrier.Attr("data-points")
	if !ok {
		return
	}
	carrier.RemoveAttr("data-points")
	for _, entry := range strings.Split(text, ";") {
		f := strings.Fields(entry)
		cell := page.Find("#" + ids.QueueRow(atoi(t, f[0])) + " .spark-cell")
		if cell.Length() != 1 {
			t.Errorf("spark points for %s, whose row has no sparkline", f[0])
			continue
		}
		var values []float64
		for _, v := range strings.Fields(cell.AttrOr("data-v", "")) {
			values = append(values, atof(t, v))
		}
		drop, cut := int(atoi(t, f[1])), int(atoi(t, f[2]))
		values = slices.Clone(values[drop : len(values)-cut])
		for _, v := range f[3:] {
			values = append(values, atof(t, v))
		}
		html, err := renderBytes(context.Background(), templates.Spark(values, atof(t, cell.AttrOr("data-top", "0"))))
		if err != nil {
			t.Fatal(err)
		}
		drawn, err := goquery.NewDocumentFromReader(bytes.NewReader(html))
		if err != nil {
			t.Fatal(err)
		}
		cell.ReplaceWithSelection(drawn.Find(".spark-cell"))
	}
}

func atoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// overviewParts are the parts of the overview page a push keeps as they render.
var overviewPageParts = []string{"#" + ids.OverviewRows(), "#" + ids.Attention(), "#" + ids.Sight(), "#" + ids.Totals(), "#" + ids.Cost(), "#" + ids.OverviewPager(), "#" + ids.SparkPoints(), "#freshness"}

// samePage fails the test when a page that took pushes differs from the page rendered now.
func samePage(t *testing.T, step string, pushed, rendered *goquery.Document) {
	t.Helper()
	for _, sel := range overviewPageParts {
		got, want := pushed.Find(sel), rendered.Find(sel)
		if a, b := outer(got), outer(want); a != b {
			t.Errorf("%s: %s after the pushes\n%s\nrendered\n%s", step, sel, clip(a), clip(b))
		}
	}
}

// pushWorld is a page world whose queues' depths a test sets, one sample at a time.
type pushWorld struct {
	*pageWorld
	t *testing.T
}

// setDepth stores a new depth sample of a queue, a second after the clock's.
func (pw pushWorld) setDepth(name string, visible int64) {
	pw.t.Helper()
	ctx := context.Background()
	q, err := pw.Views.ResolveQueue(ctx, name)
	if err != nil {
		pw.t.Fatal(err)
	}
	stored, err := pw.Store.GetQueue(ctx, q.ID)
	if err != nil {
		pw.t.Fatal(err)
	}
	pw.Advance(time.Second)
	if err := pw.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: q.ID, At: pw.Now(), Attributes: stored.Attributes,
		DeadLetterTargetARN: stored.DeadLetterTargetARN, MaxReceiveCount: stored.MaxReceiveCount,
		Depth: store.AttributeSample{Visible: visible}}); err != nil {
		pw.t.Fatal(err)
	}
}

// readEvery reads every queue read so far again, at the depth it has.
func (pw pushWorld) readEvery() {
	pw.t.Helper()
	ctx := context.Background()
	latest, err := pw.Store.LatestAttributeSamples(ctx)
	if err != nil {
		pw.t.Fatal(err)
	}
	all, err := pw.Store.ListQueues(ctx, store.QueueFilter{})
	if err != nil {
		pw.t.Fatal(err)
	}
	for _, q := range all {
		if a, read := latest[q.ID]; read {
			if err := pw.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: q.ID, At: pw.Now(), Attributes: q.Attributes,
				DeadLetterTargetARN: q.DeadLetterTargetARN, MaxReceiveCount: q.MaxReceiveCount,
				Depth: store.AttributeSample{Visible: a.Visible, InFlight: a.InFlight, Delayed: a.Delayed}}); err != nil {
				pw.t.Fatal(err)
			}
		}
	}
}

// pushKinds names what each message of a push swaps: "body" (the whole table's body), "moves"
// (rows taken out and put in), "rows", "cells" and "parts" (everything else).
func pushKinds(t *testing.T, msgs [][]byte) []string {
	t.Helper()
	var kinds []string
	for _, msg := range msgs {
		top := parseFragment(t, msg).Find("template").First().Children().First()
		switch swap := top.AttrOr("hx-swap-oob", ""); {
		case top.Is("tbody#" + ids.OverviewRows()):
			kinds = append(kinds, "body")
		case top.Is("tbody"):
			kinds = append(kinds, "moves")
		case top.Is("tr"):
			kinds = append(kinds, "rows")
		case top.Is("td, th"):
			kinds = append(kinds, "cells")
		case top.Is("#" + ids.SparkPoints()):
			kinds = append(kinds, "sparks")
		default:
			kinds = append(kinds, "parts")
			_ = swap
		}
	}
	return kinds
}

// TestOverviewPushesKeepThePageAsRendered follows the overview of several views (the default
// order, sorted by a column, filtered, one sparkline scale, embedded) through changes, and swaps
// each push into the page as htmx does: after each, the page is the page rendered now, every
// swap found its target, and the push carried only the kind of change that happened (a row's
// number: its cells; a health that moves a row: that row's move; the sparklines' minute: their
// cells; a new queue: its row put in).
func TestOverviewPushesKeepThePageAsRendered(t *testing.T) {
	t.Parallel()
	for _, v := range []struct {
		name  string
		query url.Values
		nav   templates.Nav
		// moves: a depth can move a row (the view is sorted by it, or shows two rows, where
		// one move is most of them) or redraw every row's sparkline (one scale); the kinds of a
		// push are checked only in the other views.
		moves bool
	}{
		{"health order", nil, templates.Nav{}, false},
		{"by visible, descending", url.Values{"sort": {"visible"}, "dir": {"desc"}}, templates.Nav{}, true},
		{"filtered", url.Values{"q": {"web"}}, templates.Nav{}, true},
		{"one scale", url.Values{"scale": {"shared"}}, templates.Nav{}, true},
		{"embedded", nil, templates.Nav{Embed: true}, false},
	} {
		t.Run(v.name, func(t *testing.T) {
			pw := pushWorld{newPageWorld(t, pageWorldOptions{}), t}
			ctx := context.Background()
			sub := subscriptionOf(live.Overview(), v.nav, v.query)
			path := v.nav.URL("/", v.query)
			render := func() *goquery.Document {
				t.Helper()
				doc, _ := pw.page(t, request{path: path}, http.StatusOK)
				return doc
			}
			page := render()
			first, err := pw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if kinds := fmt.Sprint(pushKinds(t, first.Full)); kinds != "[body parts]" || fmt.Sprint(first.Update) != fmt.Sprint(first.Full) {
				t.Fatalf("first push %s, want the whole table and every part to everyone", kinds)
			}
			applyPush(t, page, first.Full)
			samePage(t, "the first push", page, render())
			memo := first.Memo
			step := func(name string, change func(), want ...string) {
				t.Helper()
				change()
				p, err := pw.srv.hubPush(ctx, sub, live.Changes{events.SnapshotBuilt: true}, memo)
				if err != nil {
					t.Fatal(err)
				}
				memo = p.Memo
				if p.Full != nil {
					t.Errorf("%s: a push without a new subscriber rendered the whole view", name)
				}
				applyPush(t, page, p.Update)
				samePage(t, name, page, render())
				if kinds := pushKinds(t, p.Update); want != nil && !v.moves && fmt.Sprint(kinds) != fmt.Sprint(want) {
					t.Errorf("%s: the push carries %v, want %v:\n%s", name, kinds, want, clip(pushText(p.Update)))
				}
			}
			step("nothing changed", func() {}, "parts")
			step("one queue's depth", func() { pw.setDepth("web-search", 7) }, "cells", "parts")
			step("its depth again", func() { pw.setDepth("web-search", 9) }, "cells", "parts")
			// It moves (and its source's DLQ depth cell changes); the table is not sent whole.
			// The problem list names the same problems: its changed line comes alone, before the
			// other parts (the embedded table has no problem list). Then it loses one: whole.
			critical := []string{"moves", "cells", "parts"}
			if !v.nav.Embed {
				critical = append(critical, "parts")
			}
			step("a dead-letter queue turns critical", func() { pw.setDepth("web-search-dlq", 500) }, critical...)
			step("and back", func() { pw.setDepth("web-search-dlq", 0) }, "moves", "cells", "parts")
			step("a new queue", func() {
				pw.Advance(time.Second)
				if _, err := pw.Store.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Name: "web-fetch", ARN: pw.ARN("web-fetch"),
					URL: "https://sqs/web-fetch", FirstSeen: pw.Now(), LastSeen: pw.Now()}); err != nil {
					t.Fatal(err)
				}
			}, "moves", "parts")
			step("a minute on, every queue read again", func() {
				pw.Advance(time.Minute)
				pw.readEvery()
			}, "cells", "parts")
			step("several depths at once", func() {
				for i, name := range []string{"notifications", "tool-calls.fifo", "web-search"} {
					pw.setDepth(name, int64(3*i+1))
				}
			}, "cells", "sparks", "parts")
		})
	}
}

// TestOverviewPushToAJoiningPage: a connect push carries the whole view for the page that
// joined, and for the pages in sync only what changed.
func TestOverviewPushToAJoiningPage(t *testing.T) {
	t.Parallel()
	pw := pushWorld{newPageWorld(t, pageWorldOptions{}), t}
	ctx := context.Background()
	sub := subscriptionOf(live.Overview(), templates.Nav{}, nil)
	first, err := pw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pw.setDepth("notifications", 4)
	joined, err := pw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true, events.SnapshotBuilt: true}, first.Memo)
	if err != nil {
		t.Fatal(err)
	}
	if kinds := fmt.Sprint(pushKinds(t, joined.Full)); kinds != "[body parts]" {
		t.Errorf("the joiner's push carries %s, want the whole view", kinds)
	}
	if kinds := fmt.Sprint(pushKinds(t, joined.Update)); kinds != "[cells parts]" {
		t.Errorf("the push to the pages in sync carries %s, want notifications' cells and the parts", kinds)
	}
}

// TestDiffRowsMovesFewRows: of rows reordered, those that keep their relative order stay, and
// the others are taken out and put back after the row they follow.
func TestDiffRowsMovesFewRows(t *testing.T) {
	t.Parallel()
	rows := func(ids ...int64) []*templates.RenderedRow {
		out := make([]*templates.RenderedRow, len(ids))
		for i, id := range ids {
			r, err := templates.RenderRow(context.Background(), templates.OverviewRow{QueueSummary: viewsQueue(id)}, templates.Nav{})
			if err != nil {
				t.Fatal(err)
			}
			out[i] = r
		}
		return out
	}
	tests := []struct {
		name       string
		prev, next []*templates.RenderedRow
		want       string // deleted, then inserts as id@after
	}{
		{"the same", rows(1, 2, 3, 4, 5, 6), rows(1, 2, 3, 4, 5, 6), "[] []"},
		{"one to the top", rows(1, 2, 3, 4, 5, 6), rows(5, 1, 2, 3, 4, 6), "[5] [5@0]"},
		{"one down", rows(1, 2, 3, 4, 5, 6), rows(2, 3, 1, 4, 5, 6), "[1] [1@3]"},
		{"one new, one gone", rows(1, 2, 3, 4, 5, 6), rows(1, 2, 7, 3, 4, 5), "[6] [7@2]"},
		{"most moved", rows(1, 2, 3, 4, 5, 6), rows(6, 5, 4, 3, 2, 1), "whole"},
		{"none before", rows(), rows(1, 2), "whole"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := diffRows(tt.prev, tt.next)
			got := "whole"
			if !c.whole {
				var ins []string
				for _, in := range c.inserts {
					ins = append(ins, fmt.Sprintf("%d@%d", in.row.ID, in.after))
				}
				got = fmt.Sprintf("%v %v", c.deleted, ins)
				if ins == nil {
					got = fmt.Sprintf("%v []", c.deleted)
				}
			}
			if got != tt.want {
				t.Errorf("diffRows = %s, want %s", got, tt.want)
			}
		})
	}
}

// viewsQueue is a healthy queue's summary of that id, for rows compared by their place.
func viewsQueue(id int64) views.QueueSummary {
	name := fmt.Sprintf("q-%d", id)
	return views.QueueSummary{ID: id, Name: name, Ref: name, Health: views.Health{Status: views.HealthOK}}
}

// TestOverviewPageFromTheSnapshotIsThePageRenderedDirectly: a server whose views keep one
// snapshot (and its rendered rows) until a change or its Until serves the overview a server that
// computes and renders everything for each request serves, in several views, at random instants
// between cycles that store new depths.
func TestOverviewPageFromTheSnapshotIsThePageRenderedDirectly(t *testing.T) {
	t.Parallel()
	pw := pushWorld{newPageWorld(t, pageWorldOptions{Snapshots: true}), t}
	direct, err := New(Options{Views: views.New(views.Options{Store: pw.Store, Now: pw.Clock.Now, Dimensions: harnessDimensions, ErrorDimension: "error"}),
		Actions: pw.Actions(actions.Options{}), Bus: events.NewBus(), Now: pw.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = direct.Close(context.Background()) })
	paths := []string{"/", "/?sort=visible&dir=desc", "/?scale=shared", "/?q=web", "/?embed=1", "/?misconfigured=1"}
	r := rand.New(rand.NewPCG(7, 7))
	names := []string{"web-search", "web-search-dlq", "notifications", "tool-calls.fifo", "tool-calls-dlq.fifo"}
	// 24 instants over about ten minutes (every step renders each view twice, the test's cost),
	// with a cycle every third: minute turns fall between cycles and within them.
	for step := range 24 {
		if step%3 == 2 { // a cycle: new depths, and its event
			for _, name := range names {
				pw.setDepth(name, int64(r.IntN(150)))
			}
			pw.bus.Publish(events.Event{Kind: events.QueuesChanged, At: pw.Now()})
		}
		pw.Advance(time.Duration(r.IntN(50_000)) * time.Millisecond)
		for _, path := range paths {
			kept, _ := pw.page(t, request{path: path}, http.StatusOK)
			rec := httptest.NewRecorder()
			direct.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			fresh, err := goquery.NewDocumentFromReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := outer(kept.Find("#"+ids.OverviewTable())), outer(fresh.Find("#"+ids.OverviewTable())); got != want {
				t.Fatalf("step %d, %s at %s: the page from the snapshot\n%s\nrendered directly\n%s", step, path, pw.Now().Format(time.TimeOnly), clip(got), clip(want))
			}
		}
	}
}

// TestRowShowsNoSampleTime: a queue's row renders the same whatever its newest sample's time, so
// that sameRow may leave it out and keep the previous snapshot's row; and any other difference
// makes the rows different.
func TestRowShowsNoSampleTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	q := views.QueueSummary{ID: 7, Name: "web-search", Ref: "web-search", Visible: 3, SampledAt: &at, Sparkline: []float64{1, 2, 3},
		Health: views.Health{Status: views.HealthWarning, Reasons: []string{"data is 50 s old"}}}
	later := q
	next := at.Add(15 * time.Second)
	later.SampledAt = &next
	for _, nav := range []templates.Nav{{}, {Embed: true}} {
		a, err := templates.RenderRow(ctx, templates.OverviewRow{QueueSummary: q}, nav)
		if err != nil {
			t.Fatal(err)
		}
		b, err := templates.RenderRow(ctx, templates.OverviewRow{QueueSummary: later}, nav)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Same(b) {
			t.Errorf("the row shows when its queue was sampled (nav %+v): sameRow must not leave SampledAt out", nav)
		}
	}
	if !sameRow(q, later) {
		t.Error("sameRow tells apart two summaries that differ only in SampledAt")
	}
	deeper := later
	deeper.Visible = 4
	if sameRow(q, deeper) {
		t.Error("sameRow takes a summary with another depth for the same row")
	}
}

// TestMinutePushCarriesOnlyNewPoints: over a minute of cycles in which no depth changed, in a
// fleet whose sparklines moved over the hour, the overview's pushes carry no cell and no row:
// each sparkline that moved on comes as its new points, a few bytes a row, and the page that
// shifts them reads as the page rendered now.
func TestMinutePushCarriesOnlyNewPoints(t *testing.T) {
	t.Parallel()
	fw := newFleetWorld(t, 40, 40)
	ctx := context.Background()
	sub := subscriptionOf(live.Overview(), templates.Nav{}, nil)
	render := func() *goquery.Document {
		t.Helper()
		rec := httptest.NewRecorder()
		fw.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	page := render()
	first, err := fw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	applyPush(t, page, first.Full)
	memo, shifted := first.Memo, 0
	for cycle := range 5 { // 75 s: the minute turns
		fw.cycle(t, 0)
		p, err := fw.srv.hubPush(ctx, sub, live.Changes{events.SnapshotBuilt: true}, memo)
		if err != nil {
			t.Fatal(err)
		}
		memo = p.Memo
		for _, kind := range pushKinds(t, p.Update) {
			if kind != "sparks" && kind != "parts" {
				t.Errorf("cycle %d: the push carries %s, want only the sparklines' points and the parts:\n%s", cycle, kind, clip(pushText(p.Update)))
			}
		}
		points := parsePush(t, p.Update).Find("#"+ids.SparkPoints()).AttrOr("data-points", "")
		if points != "" {
			rows := strings.Count(points, ";") + 1
			shifted = max(shifted, rows)
			if perRow := len(points) / rows; perRow > 20 {
				t.Errorf("cycle %d: %d bytes a row's new points, want a few", cycle, perRow)
			}
		}
		applyPush(t, page, p.Update)
		samePage(t, fmt.Sprintf("cycle %d", cycle), page, render())
	}
	if shifted < 40 {
		t.Errorf("at the minute's turn %d sparklines moved on by their points, want the 40 busy sources' at least", shifted)
	}
}

// TestProblemListPushedAsItsChanges: when the problems the list names stay the same ones, a push
// carries the list's heading and the lines that changed, not the list; when one goes, the list.
func TestProblemListPushedAsItsChanges(t *testing.T) {
	t.Parallel()
	pw := pushWorld{newPageWorld(t, pageWorldOptions{}), t}
	ctx := context.Background()
	sub := subscriptionOf(live.Overview(), templates.Nav{}, nil)
	first, err := pw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	memo := first.Memo
	for _, step := range []struct {
		name         string
		dlqDepth     int64
		whole, lines int
	}{
		{"the dead-letter queue deepens", 500, 0, 1},
		{"and is emptied", 0, 1, 0},
	} {
		pw.setDepth("web-search-dlq", step.dlqDepth)
		p, err := pw.srv.hubPush(ctx, sub, live.Changes{events.SnapshotBuilt: true}, memo)
		if err != nil {
			t.Fatal(err)
		}
		memo = p.Memo
		doc := parsePush(t, p.Update)
		whole, lines := doc.Find("#"+ids.Attention()).Length(), doc.Find("li.problem[hx-swap-oob]").Length()
		if whole != step.whole || lines != step.lines {
			t.Errorf("%s: the push carries the list %d times and %d lines alone, want %d and %d:\n%s",
				step.name, whole, lines, step.whole, step.lines, clip(pushText(p.Update)))
		}
	}
}
