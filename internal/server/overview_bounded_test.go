package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// newLargeFleet is the real server over a store of pairs source queues, each with a dead-letter
// queue; the first read pairs were read by an attribute cycle, and their dead-letter queues hold
// messages: read problems that need a person. (The others are listed, not read yet: a
// fleet's first minutes; reading 10,000 queues in the test would take it most of a minute.)
func newLargeFleet(t *testing.T, pairs, read int) *pageWorld {
	t.Helper()
	w := actionstest.New(t)
	pw := &pageWorld{World: w, bus: events.NewBus()}
	// One snapshot serves every read of the test: it changes nothing once the fleet is stored.
	w.Views = views.New(views.Options{Store: w.Store, Now: w.Clock.Now, Changes: pw.bus, Lag: -1})
	ctx := context.Background()
	now := w.Now()
	arn := func(name string) string { return "arn:aws:sqs:us-east-1:000000000000:" + name }
	for i := range pairs {
		src, dlq := fmt.Sprintf("calls-%05d", i), fmt.Sprintf("calls-%05d-dlq", i)
		for _, q := range []struct {
			name, dlq string
			visible   int64
		}{{src, dlq, int64(i % 7)}, {dlq, "", 3}} {
			id, err := w.Store.UpsertQueue(ctx, store.Queue{Region: actionstest.Region, Name: q.name, ARN: arn(q.name),
				URL: "https://sqs.us-east-1.amazonaws.com/000000000000/" + q.name, FirstSeen: now, LastSeen: now})
			if err != nil {
				t.Fatal(err)
			}
			if i >= read {
				continue
			}
			target, mrc := "", 0
			if q.dlq != "" {
				target, mrc = arn(q.dlq), 5
			}
			if err := w.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: id, At: now,
				Attributes: sqsAttributes(q.name, false, q.dlq, q.visible), DeadLetterTargetARN: target, MaxReceiveCount: mrc,
				Depth: store.AttributeSample{Visible: q.visible}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	run, err := w.Store.StartRun(ctx, store.RunAttributes, now.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Store.FinishRun(ctx, store.CollectorRun{ID: run, Kind: store.RunAttributes, StartedAt: now.Add(-time.Second),
		FinishedAt: now, Queues: 2 * read, Calls: 2 * read}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Views: w.Views, Actions: w.Actions(actions.Options{}), Bus: pw.bus, Now: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	pw.srv, pw.handler = srv, srv.Handler()
	return pw
}

// TestOverviewIsBoundedAt10000Queues: at 10,000 queues, 120 of them dead-letter queues holding
// messages and most of the others not read yet (thousands of problems), the overview carries one page of rows and a bounded list of problems, with the count
// of the others and the links to the other pages; a page past the last shows the last; a
// websocket's first push carries the same page, not the fleet.
func TestOverviewIsBoundedAt10000Queues(t *testing.T) {
	t.Parallel()
	pw := newLargeFleet(t, 5_000, 120)
	doc, rec := pw.page(t, request{path: "/"}, http.StatusOK)
	if n := doc.Find("#" + ids.OverviewRows() + " tr").Length(); n != templates.OverviewPageSize {
		t.Errorf("the overview holds %d rows, want one page of %d", n, templates.OverviewPageSize)
	}
	if n := doc.Find("#" + ids.Attention() + " li").Length(); n != templates.AttentionShown {
		t.Errorf("the problem list names %d problems, want %d", n, templates.AttentionShown)
	}
	snap, err := pw.Views.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	problems := len(snap.Overview.Problems)
	if h := doc.Find("#" + ids.Attention() + " h2").Text(); problems < 120 || !strings.Contains(h, fmt.Sprintf("%d problems", problems)) {
		t.Errorf("the problem list's heading %q does not count all %d problems", h, problems)
	}
	if more := doc.Find(".problems-more").Text(); !strings.Contains(more, fmt.Sprintf("%d more problems", problems-templates.AttentionShown)) {
		t.Errorf("the problem list says %q, want the %d it does not name", more, problems-templates.AttentionShown)
	}
	pager := doc.Find("#" + ids.OverviewPager())
	if text := pager.Text(); !strings.Contains(text, "1–100 of 10\u202f000") || !strings.Contains(text, "page 1 of 100") {
		t.Errorf("the pager says %q", text)
	}
	next, _ := pager.Find(`a[rel="next"]`).Attr("href")
	if next != "/?page=2" {
		t.Errorf("the next page's link is %q, want /?page=2", next)
	}
	if size := gzipSize(t, rec.Body.Bytes()); size > 100_000 {
		t.Errorf("the page is %d bytes gzipped, want at most 100 KB", size)
	}

	for _, tt := range []struct{ path, first, last string }{
		{"/?page=2", "calls-", "101–200 of"},
		{"/?page=100", "calls-", "9\u202f901–10\u202f000 of"},
		{"/?page=500", "calls-", "9\u202f901–10\u202f000 of"}, // past the last: the last
		{"/?q=calls-0000&sort=name&dir=asc", "calls-00000", "1–20 of 20"},
	} {
		doc, _ := pw.page(t, request{path: tt.path}, http.StatusOK)
		rows := doc.Find("#" + ids.OverviewRows() + " tr")
		if rows.Length() > templates.OverviewPageSize || !strings.Contains(rows.First().Find("th").Text(), tt.first) {
			t.Errorf("%s: %d rows, the first %q", tt.path, rows.Length(), rows.First().Find("th .clip-name").Text())
		}
		if text := doc.Find("#" + ids.OverviewPager()).Text(); !strings.Contains(text, tt.last) {
			t.Errorf("%s: the pager says %q, want %q", tt.path, text, tt.last)
		}
	}
	pw.page(t, request{path: "/?page=0"}, http.StatusBadRequest)

	push, err := pw.srv.hubPush(context.Background(), subscriptionOf(live.Overview(), templates.Nav{}, nil), live.Changes{live.Connect: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := parsePush(t, push.Full).Find("tr").Length(); n != templates.OverviewPageSize {
		t.Errorf("the first push carries %d rows, want one page of %d", n, templates.OverviewPageSize)
	}
}

// gzipSize is how many bytes b takes gzipped as the server sends pages (level 1).
func gzipSize(t *testing.T, b []byte) int {
	t.Helper()
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Len()
}
