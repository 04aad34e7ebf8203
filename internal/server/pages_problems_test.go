package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/store"
)

// TestOverviewOpensWithProblems checks that the overview opens with what needs a person, each
// problem once: the DLQ's messages on the DLQ's line alone (not again on its source's), the
// blocked session on its queue's, and the heading counting the lines; the cost sits in the status
// line below the table.
func TestOverviewOpensWithProblems(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, rec := pw.page(t, request{path: "/"}, http.StatusOK)
	body := rec.Body.String()
	if a, table := strings.Index(body, `id="attention"`), strings.Index(body, `<table class="queues"`); a < 0 || a > table {
		t.Fatalf("the problem list (at %d) does not come before the table (at %d)", a, table)
	}
	items := doc.Find("#attention li.problem")
	type line struct{ kind, queue, text string }
	var lines []line
	items.Each(func(_ int, s *goquery.Selection) {
		kind, _ := s.Attr("data-kind")
		lines = append(lines, line{kind, s.Find("a").Text(), s.Find(".problem-text").Text()})
	})
	count := func(kind, queue string) int {
		n := 0
		for _, l := range lines {
			if l.kind == kind && l.queue == queue {
				n++
			}
		}
		return n
	}
	tests := []struct {
		kind, queue string
		want        int
	}{
		{"dead-letter", "web-search-dlq", 1},
		{"dead-letter", "web-search", 0}, // the source's row points to its DLQ; the problem is the DLQ's
		{"blocked-session", "tool-calls.fifo", 1},
		{"blocked-session", "tool-calls-dlq.fifo", 0},
	}
	for _, tt := range tests {
		if got := count(tt.kind, tt.queue); got != tt.want {
			t.Errorf("%s problems of %s = %d, want %d (list %+v)", tt.kind, tt.queue, got, tt.want, lines)
		}
	}
	for _, l := range lines {
		if l.kind == "dead-letter" && !strings.Contains(l.text, "3 messages") || l.kind == "dead-letter" && !strings.Contains(l.text, "from web-search") {
			t.Errorf("dead-letter problem %q: want its depth and its source", l.text)
		}
		if l.kind == "unknown" {
			t.Errorf("a rule that could not be checked is listed as a problem: %+v", l)
		}
	}
	// Each queue and kind once: no line repeats.
	seen := map[line]bool{}
	for _, l := range lines {
		k := line{l.kind, l.queue, ""}
		if seen[k] {
			t.Errorf("problem %s of %q listed twice", l.kind, l.queue)
		}
		seen[k] = true
	}
	heading := doc.Find("#attention-h").Text()
	if want := strconv.Itoa(len(lines)) + " problem"; !strings.Contains(heading, want) {
		t.Errorf("heading %q, want it to count the %d lines", heading, len(lines))
	}
	if doc.Find("footer.status-line #cost").Length() != 1 || doc.Find(".page-head #cost").Length() != 0 {
		t.Error("the cost is not in the status line below the table")
	}
	// The embedded table is the table alone.
	emb, _ := pw.page(t, request{path: "/?embed=1"}, http.StatusOK)
	if emb.Find("#attention").Length() != 0 {
		t.Error("the embedded overview carries the problem list")
	}
}

// TestOverviewSparklineScale: sparklines say their range; ?scale=shared draws them to one scale,
// kept by the websocket and the sort links.
func TestOverviewSparklineScale(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	// Ten minutes of depth, 1→3 on one queue and 7→28 on another.
	var samples []store.AttributeSample
	for i, name := range []string{"web-search", "tool-calls.fifo"} {
		q, err := pw.Views.ResolveQueue(t.Context(), name)
		if err != nil {
			t.Fatal(err)
		}
		for m := range 10 {
			samples = append(samples, store.AttributeSample{QueueID: q.ID, At: pw.Now().Add(time.Duration(m-10) * time.Minute),
				Visible: int64((1 + m/4) * (1 + 6*i))})
		}
	}
	if err := pw.Store.SaveAttributeSamples(t.Context(), samples); err != nil {
		t.Fatal(err)
	}
	doc, _ := pw.page(t, request{path: "/?scale=shared"}, http.StatusOK)
	if ws := doc.Find("#overview-table").AttrOr("ws-connect", ""); !strings.Contains(ws, "scale=shared") {
		t.Errorf("ws-connect = %q, want the shared scale in the view", ws)
	}
	if href := doc.Find(`thead a[href*="sort=name"]`).AttrOr("href", ""); !strings.Contains(href, "scale=shared") {
		t.Errorf("sort link %q drops the shared scale", href)
	}
	if got := doc.Find("a.scale-toggle").Text(); !strings.Contains(got, "own scale") {
		t.Errorf("scale toggle = %q", got)
	}
	// The websocket's pushes are drawn to the same shared scale as the page.
	srv := httptest.NewServer(pw.handler)
	defer srv.Close()
	ws := doc.Find("#overview-table").AttrOr("ws-connect", "")
	conn, _, err := dial(t, srv, strings.TrimPrefix(ws, "/ws?"), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	sparks := func(d *goquery.Document) []string {
		var out []string
		d.Find("#overview-rows svg.spark").Each(func(_ int, s *goquery.Selection) {
			h, _ := goquery.OuterHtml(s)
			out = append(out, h)
		})
		return out
	}
	pushed := nextWith(t, conn, "#overview-rows")
	if got, want := sparks(pushed), sparks(doc); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("pushed sparklines differ from the shared-scale page's (%d, %d):\n%q\n---\n%q", len(got), len(want), got, want)
	}
	own, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	if own.Find("svg.spark").Length() > 0 && own.Find(".spark-range").Length() != own.Find("svg.spark").Length() {
		t.Error("a sparkline without its range")
	}
}
