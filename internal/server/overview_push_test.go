package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// TestOverviewPushCarriesWhatChanged: the overview's first push is the whole table; the next,
// given its memo, carries the rows whose rendering changed, each swapped by its id (the cells
// that changed, once a row has changed before), the parts that changed and the freshness; the
// whole body again when the order of the rows changed; and a connect push carries the whole
// table for the page that joined.
func TestOverviewPushCarriesWhatChanged(t *testing.T) {
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	sub := subscriptionOf(live.Overview(), templates.Nav{}, nil)
	queues := live.Changes{events.QueuesChanged: true}
	push := func(changes live.Changes, memo any) live.Push {
		t.Helper()
		p, err := pw.srv.hubPush(ctx, sub, changes, memo)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	setDepth := func(name string, visible int64) {
		t.Helper()
		q, err := pw.Views.ResolveQueue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := pw.Store.GetQueue(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		pw.Advance(time.Second) // a new sample time
		if err := pw.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: q.ID, At: pw.Now(), Attributes: stored.Attributes,
			DeadLetterTargetARN: stored.DeadLetterTargetARN, MaxReceiveCount: stored.MaxReceiveCount,
			Depth: store.AttributeSample{Visible: visible}}); err != nil {
			t.Fatal(err)
		}
	}
	idOf := func(name string) int64 {
		q, err := pw.Views.ResolveQueue(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return q.ID
	}

	first := push(queues, nil)
	if !strings.Contains(string(first.Update), `id="`+ids.OverviewRows()+`"`) || string(first.Update) != string(first.Full) {
		t.Fatalf("first push is not the whole table:\n%s", clip(string(first.Update)))
	}

	same := push(queues, first.Memo)
	doc := parseFragment(t, same.Update)
	if n := doc.Find("tr[hx-swap-oob]").Length(); n != 0 || doc.Find("tbody").Length() != 0 {
		t.Errorf("nothing changed, yet the push carries %d rows:\n%s", n, clip(string(same.Update)))
	}
	if doc.Find("#freshness").Length() != 1 || doc.Find("#totals").Length() != 0 {
		t.Errorf("an unchanged push carries the freshness and nothing else:\n%s", clip(string(same.Update)))
	}
	if same.Full != nil {
		t.Error("a push without a new subscriber rendered the whole table")
	}

	setDepth("notifications", 7) // healthy before and after: its row changes, not its place
	one := push(queues, same.Memo)
	doc = parseFragment(t, one.Update)
	rows := doc.Find(`template > tr[hx-swap-oob="true"]`)
	if rows.Length() != 1 || rows.AttrOr("id", "") != ids.QueueRow(idOf("notifications")) {
		t.Fatalf("pushed rows %d (first %q), want notifications' alone:\n%s", rows.Length(), rows.AttrOr("id", ""), clip(string(one.Update)))
	}
	if doc.Find("#totals").Length() != 1 {
		t.Error("the totals changed and were not pushed")
	}

	// Its second change sends the cells that changed, not the row: the visible count (third
	// column) and its sparkline, swapped by the row's id and their column.
	setDepth("notifications", 9)
	cells := push(queues, one.Memo)
	doc = parseFragment(t, cells.Update)
	row := ids.QueueRow(idOf("notifications"))
	visible := doc.Find(`template > td[hx-swap-oob="outerHTML:#` + row + `>:nth-child(3)"]`)
	if doc.Find("tr").Length() != 0 || visible.Length() != 1 || strings.TrimSpace(visible.Text()) != "9" {
		t.Fatalf("a second change of one row: want its visible cell alone (9), no row:\n%s", clip(string(cells.Update)))
	}
	page, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	doc.Find("template > td, template > th").Each(func(_ int, cell *goquery.Selection) {
		swap := cell.AttrOr("hx-swap-oob", "")
		if !strings.HasPrefix(swap, "outerHTML:#"+row+">:nth-child(") {
			t.Errorf("a pushed cell swaps %q, not a cell of notifications' row", swap)
		}
		// htmx swaps what the selector finds: in the page, one cell of the same kind.
		target := page.Find(strings.TrimPrefix(swap, "outerHTML:"))
		if target.Length() != 1 || goquery.NodeName(target) != goquery.NodeName(cell) || target.AttrOr("class", "") != cell.AttrOr("class", "") {
			t.Errorf("%q finds %d elements in the page (%s), want the one cell it replaces (%s)", swap, target.Length(), outer(target), outer(cell))
		}
		if swap == "outerHTML:#"+row+">:nth-child(1)" || swap == "outerHTML:#"+row+">:nth-child(2)" {
			t.Errorf("the name or the type of notifications did not change, yet %q was pushed", swap)
		}
	})

	// A minute on, every queue read so far is read twice, with a spike of 3 messages and at the
	// depth it had: each sparkline has one more minute, higher, and the rest of each row shows
	// as it did.
	readAgain := func() live.Push {
		t.Helper()
		pw.Advance(time.Minute)
		latest, err := pw.Store.LatestAttributeSamples(ctx)
		if err != nil {
			t.Fatal(err)
		}
		all, err := pw.Store.ListQueues(ctx, store.QueueFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, spike := range []int64{3, 0} { // a spike, the depth back a second later
			for _, q := range all {
				a, read := latest[q.ID]
				if !read {
					continue // a queue never read stays so
				}
				if err := pw.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: q.ID, At: pw.Now(), Attributes: q.Attributes,
					DeadLetterTargetARN: q.DeadLetterTargetARN, MaxReceiveCount: q.MaxReceiveCount,
					Depth: store.AttributeSample{Visible: a.Visible + spike, InFlight: a.InFlight, Delayed: a.Delayed}}); err != nil {
					t.Fatal(err)
				}
			}
			pw.Advance(time.Second)
		}
		return push(queues, cells.Memo)
	}
	swapsOf := func(doc *goquery.Document) map[string][]string { // by row id
		swaps := map[string][]string{}
		doc.Find("template > td, template > th, template > tr").Each(func(_ int, el *goquery.Selection) {
			swap := el.AttrOr("hx-swap-oob", "")
			id, _, _ := strings.Cut(strings.TrimPrefix(swap, "outerHTML:#"), ">")
			if goquery.NodeName(el) == "tr" {
				id = el.AttrOr("id", "")
			}
			swaps[id] = append(swaps[id], swap)
		})
		return swaps
	}
	// The other rows change for the first time since the page subscribed, and go whole: so does
	// notifications', though only its sparkline moved, as a push carries rows or cells, not both
	// (parseFragment fails a push that mixes them).
	mixed := readAgain()
	if got := swapsOf(parseFragment(t, mixed.Update))[row]; !slices.Equal(got, []string{"true"}) {
		t.Fatalf("notifications' swaps in a push of whole rows are %q, want its row alone:\n%s", got, clip(string(mixed.Update)))
	}
	// A minute on again: of every row, the sparkline alone moved, and the push carries each
	// row's sparkline cell and nothing else, rendered afresh.
	cells = mixed
	spark := readAgain()
	doc = parseFragment(t, spark.Update)
	swaps := swapsOf(doc)
	if len(swaps) < 2 {
		t.Errorf("the sparklines moved on, yet the push swaps %d rows' cells, want several:\n%s", len(swaps), clip(string(spark.Update)))
	}
	for id, got := range swaps {
		if want := fmt.Sprintf("outerHTML:#%s>:nth-child(%d)", id, templates.SparkCell+1); !slices.Equal(got, []string{want}) {
			t.Errorf("the sparklines alone moved on; %s's swaps are %q, want [%s]:\n%s", id, got, want, clip(string(spark.Update)))
		}
	}
	sparkSwap := fmt.Sprintf("outerHTML:#%s>:nth-child(%d)", row, templates.SparkCell+1)
	page, _ = pw.page(t, request{path: "/"}, http.StatusOK)
	pushed, err := doc.Find(`template > td[hx-swap-oob="` + sparkSwap + `"]`).Html()
	if err != nil {
		t.Fatal(err)
	}
	if shown, _ := page.Find(strings.TrimPrefix(sparkSwap, "outerHTML:")).Html(); pushed != shown || !strings.Contains(shown, "<polyline") {
		t.Errorf("the pushed sparkline is\n%s\nthe page's is\n%s", pushed, shown)
	}

	setDepth("web-search-dlq", 500) // critical: it moves up
	moved := push(queues, spark.Memo)
	if !strings.Contains(string(moved.Update), `id="`+ids.OverviewRows()+`"`) {
		t.Errorf("the order changed and the push does not swap the whole body:\n%s", clip(string(moved.Update)))
	}

	joined := push(live.Changes{live.Connect: true}, moved.Memo)
	if !strings.Contains(string(joined.Full), `id="`+ids.OverviewRows()+`"`) {
		t.Error("a connect push has no whole table for the page that joined")
	}
	if doc := parseFragment(t, joined.Update); doc.Find("tr").Length() != 0 {
		t.Error("a connect push gives the pages in sync rows that did not change")
	}
}
