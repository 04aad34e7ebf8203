package server

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/web/templates"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// rowNames returns the queue names of the overview's rows, in order: of a page, or of a push.
func rowNames(doc *goquery.Document) []string {
	var names []string
	doc.Find(`tbody#overview-rows tr[id^="queue-row-"] th[scope=row] a`).Each(func(_ int, s *goquery.Selection) {
		names = append(names, s.Text())
	})
	return names
}

// assertUnhealthyFirst checks the overview's default order: critical rows, then warnings, then the rest.
func assertUnhealthyFirst(t *testing.T, doc *goquery.Document) {
	t.Helper()
	rank := map[string]int{"health-critical": 0, "health-warning": 1}
	last := 0
	doc.Find("tbody#overview-rows tr").Each(func(i int, s *goquery.Selection) {
		r := 2
		for class, v := range rank {
			if s.HasClass(class) {
				r = v
			}
		}
		if r < last {
			t.Errorf("row %d (%s) is less healthy than a row above it", i, s.Find("th a").Text())
		}
		last = r
	})
}

func assertUnhealthyFirstIf(t *testing.T, doc *goquery.Document, cond bool) {
	t.Helper()
	if cond {
		assertUnhealthyFirst(t, doc)
	}
}

func TestOverviewPage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, rec := pw.page(t, request{path: "/"}, http.StatusOK)
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q", ct)
	}
	assertSafe(t, doc)
	names := rowNames(doc)
	if len(names) != 6 {
		t.Fatalf("rows = %q, want 6 queues", names)
	}
	assertUnhealthyFirst(t, doc)
	if !strings.Contains(doc.Find("table.queues").Text(), xssQueue) {
		t.Error("the hostile queue name is not shown as text")
	}
	if n := doc.Find(`thead th[scope="col"]`).Length(); n != 9 {
		t.Errorf("column headers with scope = %d, want 9", n)
	}
	// The table opens the websocket, so that a sort or filter swapping it moves the subscription.
	if got, _ := doc.Find("#overview-table").Attr("ws-connect"); got != "/ws?topic=overview" {
		t.Errorf("ws-connect = %q", got)
	}
	if doc.Find("[ws-connect]").Length() != 1 {
		t.Error("the page opens more than one websocket")
	}
	if doc.Find("#freshness").Length() != 1 || doc.Find("#totals").Length() != 1 || doc.Find("#cost").Length() != 1 {
		t.Error("freshness, totals or cost missing")
	}
	if doc.Find(`label[for="q"]`).Length() != 1 {
		t.Error("the filter box has no label")
	}
	if doc.Find("svg.spark").Length() == 0 && doc.Find("td .muted").Length() == 0 {
		t.Error("no sparkline cell")
	}

	tests := []struct {
		name  string
		path  string
		want  []string // the first rows, in order
		count int
	}{
		{"by name", "/?sort=name&dir=asc", []string{xssQueue, "notifications", "tool-calls-dlq.fifo"}, 6},
		{"by name, descending", "/?sort=name&dir=desc", []string{"web-search-dlq", "web-search", "tool-calls.fifo"}, 6},
		{"by visible, descending", "/?sort=visible&dir=desc", []string{"web-search-dlq"}, 6},
		{"filtered", "/?q=SEARCH", nil, 2},
		{"filtered to nothing", "/?q=nothing-matches", nil, 0},
		{"unknown sort falls back", "/?sort=junk&dir=sideways", nil, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := pw.page(t, request{path: tt.path}, http.StatusOK)
			got := rowNames(doc)
			if len(got) != tt.count {
				t.Fatalf("rows = %q, want %d", got, tt.count)
			}
			assertUnhealthyFirstIf(t, doc, !strings.Contains(tt.path, "sort=") || strings.Contains(tt.path, "junk"))
			for i, w := range tt.want {
				if got[i] != w {
					t.Errorf("row %d = %q, want %q (rows %q)", i, got[i], w, got)
				}
			}
		})
	}

	// The sort a header click chose travels with the next filter request: its inputs belong to
	// the filter form (form attribute) and sit inside the swapped section, which the filter box
	// includes, so they follow every sort click.
	t.Run("filtering keeps the sort", func(t *testing.T) {
		doc, rec := pw.page(t, request{path: "/?sort=name&dir=desc", htmx: true}, http.StatusOK)
		sort := doc.Find(`#overview-table #overview-sort input[form="overview-filter"]`)
		got := map[string]string{}
		sort.Each(func(_ int, s *goquery.Selection) {
			name, _ := s.Attr("name")
			got[name], _ = s.Attr("value")
		})
		if got["sort"] != "name" || got["dir"] != "desc" {
			t.Errorf("sort inputs in the swapped table = %v, want sort=name dir=desc:\n%s", got, clip(rec.Body.String()))
		}
		page, _ := pw.page(t, request{path: "/?sort=name&dir=desc"}, http.StatusOK)
		if inc, _ := page.Find("form#overview-filter input#q").Attr("hx-include"); !strings.Contains(inc, "#overview-sort") {
			t.Errorf("the filter box's hx-include = %q, want it to name #overview-sort", inc)
		}
	})

	t.Run("htmx gets the table alone", func(t *testing.T) {
		doc, rec := pw.page(t, request{path: "/?q=web", htmx: true}, http.StatusOK)
		if doc.Find("html head title").Length() != 0 || doc.Find("header.top").Length() != 0 {
			t.Error("an HTMX answer carries the layout")
		}
		if doc.Find("#overview-table").Length() != 1 || len(rowNames(doc)) != 2 {
			t.Errorf("fragment:\n%s", clip(rec.Body.String()))
		}
		if !slices.Contains(rec.Header().Values("Vary"), "HX-Request") {
			t.Error("no Vary: HX-Request")
		}
	})
}

func TestEmbeddedViews(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/?embed=1&embed_token=tok"}, http.StatusOK)
	if doc.Find("nav[aria-label=Main]").Length() != 0 || doc.Find("form.filter").Length() != 0 {
		t.Error("the embedded overview has chrome")
	}
	// An overview link opens the overview alone: its rows lead out of the iframe to the whole
	// queue page, without the link's token, in a new tab.
	doc.Find("table.queues tbody th a").Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		if strings.Contains(href, "embed") || a.AttrOr("target", "") != "_blank" || a.AttrOr("rel", "") != "noopener" {
			t.Errorf("row link %s stays in the embedded view", outer(a))
		}
	})
	if sort, _ := doc.Find("table.queues thead th a").First().Attr("href"); !strings.Contains(sort, "embed_token=tok") {
		t.Errorf("sort link %q loses the embed token", sort)
	}
	if ws, _ := doc.Find("[ws-connect]").Attr("ws-connect"); !strings.Contains(ws, "embed_token=tok") {
		t.Errorf("ws-connect %q loses the embed token", ws)
	}
	doc, _ = pw.page(t, request{path: "/queues/web-search?embed=1&embed_token=tok"}, http.StatusOK)
	if doc.Find("#queue-stats").Length() != 1 || doc.Find("#charts").Length() != 0 {
		t.Error("the embedded queue card is not the card alone")
	}
	if title := doc.Find("h1.card-title a"); strings.Contains(title.AttrOr("href", ""), "embed") || title.AttrOr("target", "") != "_blank" {
		t.Errorf("the card's title %s stays in the embedded view", outer(title))
	}
}

func TestQueuePageSections(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/queues/web-search"}, http.StatusOK)
	assertSafe(t, doc)
	if got := doc.Find("h1").Text(); got != "web-search" {
		t.Errorf("h1 = %q", got)
	}
	for _, sel := range []string{"#queue-stats", "#charts", "#peek-h", "#attrs-h"} {
		if doc.Find(sel).Length() != 1 {
			t.Errorf("no %s", sel)
		}
	}
	if n := doc.Find("#charts figure.chart").Length(); n != 7 {
		t.Errorf("charts = %d, want 7", n)
	}
	sent := doc.Find(`figure[data-metric="NumberOfMessagesSent"]`)
	if n := sent.Find("rect.bar").Length(); n != 30 {
		t.Errorf("Sent bars = %d, want 30 one-minute points", n)
	}
	if title := sent.Find("rect.hit title").First().Text(); !strings.Contains(title, "UTC: ") {
		t.Errorf("hover title = %q", title)
	}
	vt := doc.Find("table.attributes tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
		return s.Find("th code").Text() == "VisibilityTimeout"
	})
	if !strings.Contains(vt.Text(), "how long a received message stays hidden") || !strings.Contains(vt.Text(), "30 s") {
		t.Errorf("VisibilityTimeout row = %q", vt.Text())
	}
	if href, _ := doc.Find("nav.related a").First().Attr("href"); href != "/queues/web-search-dlq" {
		t.Errorf("DLQ link = %q", href)
	}
	if !strings.Contains(doc.Find("section.card").Text(), "raises the message's receive count") {
		t.Error("no warning that peeking raises receive counts")
	}
	if doc.Find("#redrive-panel").Length() != 0 {
		t.Error("a source queue shows a redrive panel")
	}

	t.Run("range", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search?range=7d", htmx: true}, http.StatusOK)
		if doc.Find("#charts").Length() != 1 || doc.Find("#queue-stats").Length() != 0 {
			t.Error("the HTMX range answer is not the charts alone")
		}
		if cur, _ := doc.Find(`.ranges a[aria-current="true"]`).Attr("href"); !strings.Contains(cur, "range=7d") {
			t.Errorf("current range link = %q", cur)
		}
	})

	t.Run("dlq links its sources", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
		if !strings.Contains(doc.Find("nav.related").Text(), "web-search") {
			t.Error("the DLQ does not link its source")
		}
	})

	t.Run("unknown queue", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/no-such-queue"}, http.StatusNotFound)
		if doc.Find("html").Length() != 1 || !strings.Contains(doc.Find(".error").Text(), "no watched queue") {
			t.Error("no full error page")
		}
	})

	t.Run("unknown queue over htmx", func(t *testing.T) {
		doc, rec := pw.page(t, request{path: "/queues/no-such-queue", htmx: true}, http.StatusNotFound)
		if rec.Header().Get("HX-Retarget") != "#flash" || doc.Find("header.top").Length() != 0 {
			t.Errorf("error fragment: retarget %q\n%s", rec.Header().Get("HX-Retarget"), clip(rec.Body.String()))
		}
	})

	t.Run("ARN reference", func(t *testing.T) {
		pw.page(t, request{path: "/queues/" + strings.ReplaceAll(pw.ARN("web-search"), ":", "%3A")}, http.StatusOK)
	})
}

func TestFIFOGroups(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/queues/tool-calls.fifo"}, http.StatusOK)
	assertSafe(t, doc)
	rows := doc.Find("#groups tbody tr")
	if rows.Length() != 2 {
		t.Fatalf("group rows = %d, want 2", rows.Length())
	}
	first := rows.First()
	if got := first.Find("th code").Text(); got != xssGroup {
		t.Errorf("group id = %q, want the hostile id as text", got)
	}
	if !first.HasClass("blocked") || !strings.Contains(first.Text(), "blocked") {
		t.Error("the blocked group is not flagged")
	}
	if !strings.Contains(doc.Find("#groups .coverage").Text(), "5 of about 10") {
		t.Errorf("coverage = %q", doc.Find("#groups .coverage").Text())
	}
}

func TestDeadLetterMessagesAreText(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	tests := []struct {
		name string
		path string
		want []string
	}{
		{"queue page", "/queues/web-search-dlq", []string{"<script>alert('tool')</script>", "<img src=x onerror=alert(1)>"}},
		{"messages page", "/queues/web-search-dlq/messages", []string{"<script>alert('tool')</script>", "web_search"}},
		{"filtered by tool", "/queues/web-search-dlq/messages?tool=web_search", []string{"m-plain"}},
		{"message detail", "/queues/web-search-dlq/messages/m-xss", []string{xssAttr, "<img src=x onerror=alert(1)>", "tc_x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := pw.page(t, request{path: tt.path}, http.StatusOK)
			assertSafe(t, doc)
			text := doc.Find("main").Text()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("text %q not shown", w)
				}
			}
		})
	}
	t.Run("pretty body", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages/m-xss"}, http.StatusOK)
		if body := doc.Find("pre.body").Text(); !strings.Contains(body, "\n  \"toolArgs\"") {
			t.Errorf("body not pretty-printed:\n%s", body)
		}
	})
	t.Run("filter", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages?tool=web_search", htmx: true}, http.StatusOK)
		if n := doc.Find("table.messages tbody tr").Length(); n != 2 {
			t.Errorf("rows = %d, want the 2 web_search messages", n)
		}
	})
	t.Run("unknown message", func(t *testing.T) {
		pw.page(t, request{path: "/queues/web-search-dlq/messages/nope"}, http.StatusNotFound)
	})
}

func TestExports(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	rec := pw.do(t, request{path: "/queues/web-search-dlq/messages.json"})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Content-Disposition"), `filename="web-search-dlq-messages.json"`) {
		t.Fatalf("JSON export: %d %q", rec.Code, rec.Header().Get("Content-Disposition"))
	}
	body := rec.Body.String()
	if !strings.Contains(body, `"messageId": "m-xss"`) || strings.Contains(body, "<script>") {
		t.Errorf("JSON export:\n%s", clip(body))
	}

	rec = pw.do(t, request{path: "/queues/web-search-dlq/messages.csv"})
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/csv") {
		t.Fatalf("CSV export: %d %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	csvText := rec.Body.String()
	if !strings.HasPrefix(csvText, "messageId,groupId,") {
		t.Errorf("CSV header: %q", clip(csvText))
	}
	if !strings.Contains(csvText, `'=HYPERLINK(`) {
		t.Errorf("the formula cell is not defused:\n%s", clip(csvText))
	}
	// A column per dimension, then the failure reason (here the error dimension's value).
	records, err := csv.NewReader(strings.NewReader(csvText)).ReadAll()
	if err != nil || len(records) != 4 {
		t.Fatalf("CSV export: %d records, %v", len(records), err)
	}
	header := records[0]
	if got := strings.Join(header[len(header)-3:], ","); got != "dimension.mcpServer,dimension.error,reason" {
		t.Errorf("CSV header ends %q; want the dimensions and the reason", got)
	}
	for _, r := range records[1:] {
		if r[0] == "m-formula" && strings.Join(r[len(r)-3:], ",") != "docs-legacy,connection_refused,connection_refused" {
			t.Errorf("m-formula's dimensions and reason: %q", r[len(r)-3:])
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"=1+1", "'=1+1"}, {"+1", "'+1"}, {"-1", "'-1"}, {"@SUM(A1)", "'@SUM(A1)"}, {"\tx", "'\tx"}, {"plain", "plain"}, {"", ""},
	} {
		if got := csvSafe(tt.in); got != tt.want {
			t.Errorf("csvSafe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestControlCharactersAreShownEscaped: a body holding C0 and C1 control characters (SQS accepts
// C1; endpoints that do not enforce SQS's rules let NUL, BEL, ESC and DEL through too) reaches
// the CSV export, the JSON export and the message page as visible escapes, never raw. NUL is the
// one the store cannot keep (PostgreSQL's text cannot hold it): it is stored, and shown, as
// U+FFFD on both engines.
func TestControlCharactersAreShownEscaped(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := t.Context()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	const body = "{\"toolName\":\"web_search\",\"q\":\"nul\x00 bel\x07 esc\x1b[2J del\x7f nel\u0085 csi\u009b\"}"
	msgs := []store.SampledMessage{{MessageID: "m-ctl", ReceiveCount: 1, SentAt: pw.Now().Add(-time.Minute), Body: body,
		BodySize: len(body), ToolName: "web_search", Attributes: []store.MessageAttribute{}}}
	if _, err := pw.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: pw.Now().Add(time.Second),
		Seen: 1, ApproxVisible: 1, Receives: 1, MessagesTaken: 1}, msgs, nil); err != nil {
		t.Fatal(err)
	}
	raw := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r <= 0x9f })
	}
	const escaped = "nul\uFFFD" + ` bel\x07 esc\x1b[2J del\x7f nel\u0085 csi\u009b`
	stored := strings.ReplaceAll(body, "\x00", "\uFFFD")

	csvText := pw.do(t, request{path: "/queues/web-search-dlq/messages.csv"}).Body.String()
	if raw(csvText) || !strings.Contains(csvText, escaped) {
		t.Errorf("CSV export holds raw control characters or lacks their escapes:\n%q", csvText)
	}
	jsonText := pw.do(t, request{path: "/queues/web-search-dlq/messages.json"}).Body.String()
	if raw(jsonText) {
		t.Errorf("JSON export holds raw control characters:\n%q", jsonText)
	}
	var export struct {
		Messages []struct {
			Body string `json:"body"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(jsonText), &export); err != nil || len(export.Messages) != 1 || export.Messages[0].Body != stored {
		t.Errorf("JSON export does not decode to the stored body: %v %+v", err, export)
	}
	page := pw.do(t, request{path: "/queues/web-search-dlq/messages/m-ctl"})
	if page.Code != http.StatusOK || raw(page.Body.String()) {
		t.Errorf("message page: %d, raw control characters: %v", page.Code, raw(page.Body.String()))
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(page.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Find("pre.body").Text(); !strings.Contains(got, escaped) {
		t.Errorf("message page body = %q, want the escapes %q", got, escaped)
	}
}

func TestRedrivePanelStates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		opts       pageWorldOptions
		running    bool
		wantReason string // empty: enabled
		wantCancel bool
	}{
		{"operator", pageWorldOptions{}, false, "", false},
		{"viewer", pageWorldOptions{TokenAuth: true}, false, "Your role (viewer)", false},
		{"read-only", pageWorldOptions{ReadOnly: true}, false, "read-only mode", false},
		{"task running", pageWorldOptions{}, true, "A move task is running", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pw := newPageWorld(t, tt.opts)
			if tt.running {
				cookie, token := pw.csrf(t)
				pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
					form: map[string][]string{"_csrf": {token}, "confirm": {"1"}, "max_per_second": {"1"}}}, http.StatusSeeOther)
			}
			doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
			assertSafe(t, doc)
			panel := doc.Find("#redrive-panel")
			if panel.Length() != 1 {
				t.Fatal("no redrive panel on the DLQ")
			}
			_, disabled := panel.Find("form.redrive-start fieldset").Attr("disabled")
			reason := panel.Find(".disabled-reason").Text()
			if tt.wantReason == "" && (disabled || reason != "") {
				t.Errorf("disabled (%q) for an operator", reason)
			}
			if tt.wantReason != "" && (!disabled || !strings.Contains(reason, tt.wantReason)) {
				t.Errorf("disabled=%v reason=%q, want %q", disabled, reason, tt.wantReason)
			}
			cancel := panel.Find(`form[action="/queues/web-search-dlq/redrive/cancel"]`).Length() == 1
			if cancel != tt.wantCancel {
				t.Errorf("cancel button = %v, want %v", cancel, tt.wantCancel)
			}
			if tt.running && panel.Find("progress").Length() != 1 {
				t.Error("no progress bar while a task runs")
			}
			if !tt.opts.TokenAuth {
				panel.Find("form").Each(func(_ int, f *goquery.Selection) {
					if v, _ := f.Find(`input[name="_csrf"]`).Attr("value"); v == "" {
						t.Errorf("a form without CSRF field: %s", outer(f))
					}
				})
				if h, _ := doc.Find("body").Attr("hx-headers"); !strings.Contains(h, "X-CSRF-Token") {
					t.Errorf("hx-headers = %q", h)
				}
			}
		})
	}
}

// TestRedrivePanelFollowsTheStoreNotTheSnapshot: the panel a browser fetches when a move task
// ends (the push's nudge comes at once) is read while the snapshot may still miss the end, by
// up to its lag. The panel's state comes from its own fresh read of the tasks: the history says
// COMPLETED and the start form is offered, never "a move task is running" beside it (the form
// stayed disabled until the next task change in the browser test).
func TestRedrivePanelFollowsTheStoreNotTheSnapshot(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{Snapshots: true, SnapshotLag: time.Hour})
	ctx := t.Context()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	task := store.MoveTask{QueueID: dlq.ID, TaskHandle: "h-1", Status: store.MoveTaskRunning, SourceARN: pw.ARN("web-search-dlq"),
		Moved: 1, ToMove: 3, StartedAt: pw.Now().Add(-time.Minute), UpdatedAt: pw.Now()}
	if task.ID, err = pw.Store.UpsertMoveTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	pw.bus.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: dlq.ID, At: pw.Now()})
	if _, err := pw.Views.Snapshot(ctx); err != nil { // the snapshot with the task running
		t.Fatal(err)
	}
	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/redrive", htmx: true}, http.StatusOK)
	if _, disabled := doc.Find("form.redrive-start fieldset").Attr("disabled"); !disabled {
		t.Fatal("the start form is offered while the task runs")
	}

	task.Status, task.Moved, task.UpdatedAt = store.MoveTaskCompleted, 3, pw.Now().Add(time.Second)
	if _, err := pw.Store.UpsertMoveTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	pw.bus.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: dlq.ID, At: pw.Now()})
	doc, _ = pw.page(t, request{path: "/queues/web-search-dlq/redrive", htmx: true}, http.StatusOK)
	status := strings.TrimSpace(doc.Find("table.history tbody tr").First().Find("td").First().Text())
	_, disabled := doc.Find("form.redrive-start fieldset").Attr("disabled")
	if status != "COMPLETED" || disabled {
		t.Errorf("after the task ended: history says %q, start form disabled=%v (%q); want COMPLETED and the form offered",
			status, disabled, doc.Find(".disabled-reason").Text())
	}
	if doc.Find("progress").Length() != 0 {
		t.Error("a progress bar after the task ended")
	}
}

// TestRedriveFormPressedTwice: the confirmation step carries an idempotency key in a hidden
// field, new for each confirmation; posting the same confirmation twice (a double click without
// JavaScript, a browser that posts the form again) starts one task, and the second answer says
// it started nothing.
func TestRedriveFormPressedTwice(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	confirmation := func() string {
		doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
			form: url.Values{"_csrf": {token}, "max_per_second": {"1"}}}, http.StatusOK)
		key, _ := doc.Find(`.confirm input[name="idempotency_key"]`).Attr("value")
		if len(key) < 16 {
			t.Fatalf("the confirmation carries no idempotency key: %q", key)
		}
		return key
	}
	key := confirmation()
	if other := confirmation(); other == key {
		t.Errorf("two confirmations carry the same key %q", key)
	}
	for i, want := range []string{"done=redrive-started", "done=redrive-repeated"} {
		_, rec := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
			form: url.Values{"_csrf": {token}, "max_per_second": {"1"}, "confirm": {"1"}, "idempotency_key": {key}}}, http.StatusSeeOther)
		loc := rec.Header().Get("Location")
		if !strings.Contains(loc, want) {
			t.Errorf("press %d: Location %q; want %s", i+1, loc, want)
			continue
		}
		doc, _ := pw.page(t, request{path: loc[:strings.Index(loc, "#")], header: cookie}, http.StatusOK)
		if notice := doc.Find(".notice").Text(); i == 1 && !strings.Contains(notice, "already sent: nothing new was started") {
			t.Errorf("the page after the second press says %q", notice)
		}
	}
	out, err := pw.SQS.ListMessageMoveTasks(t.Context(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(pw.ARN("web-search-dlq"))})
	if err != nil || len(out.Results) != 1 {
		t.Fatalf("move tasks = %d, %v; want one", len(out.Results), err)
	}
	entries, err := pw.Store.ListAudit(t.Context(), store.AuditFilter{Limit: 3})
	if err != nil || len(entries) != 3 || entries[0].Result != store.AuditRepeated || entries[1].Result != store.AuditAccepted || entries[2].Result != store.AuditIntent {
		t.Errorf("audit = %+v, %v; want intent, accepted, repeated", entries, err)
	}
}

func TestRedriveConfirmAndStart(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	post := func(form map[string][]string, htmx bool, status int) (*goquery.Document, *http.Response) {
		t.Helper()
		form["_csrf"] = []string{token}
		doc, rec := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie, form: form, htmx: htmx}, status)
		return doc, rec.Result()
	}

	t.Run("without a token", func(t *testing.T) {
		pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
			form: map[string][]string{"confirm": {"1"}}}, http.StatusForbidden)
	})
	t.Run("bad rate", func(t *testing.T) {
		doc, _ := post(map[string][]string{"max_per_second": {"900"}, "confirm": {"1"}}, true, http.StatusBadRequest)
		if !strings.Contains(doc.Find("#redrive-panel .error").Text(), "from 1 to 500") {
			t.Errorf("panel:\n%s", outer(doc.Find("#redrive-panel")))
		}
		if v, _ := doc.Find("#redrive-rate").Attr("value"); v != "900" {
			t.Errorf("the refused rate is not kept in the form: %q", v)
		}
	})
	t.Run("confirmation step", func(t *testing.T) {
		doc, _ := post(map[string][]string{"destination": {"web-search"}, "max_per_second": {"5"}}, false, http.StatusOK)
		assertSafe(t, doc)
		confirm := doc.Find(".confirm")
		text := strings.Join(strings.Fields(confirm.Text()), " ")
		for _, w := range []string{"About 3 messages will move from web-search-dlq to web-search, at most 5 per second.", "cannot be undone"} {
			if !strings.Contains(text, w) {
				t.Errorf("confirmation %q lacks %q", text, w)
			}
		}
		// The default destination, without a rate: no space before the punctuation either.
		doc, _ = post(map[string][]string{}, false, http.StatusOK)
		if text := strings.Join(strings.Fields(doc.Find(".confirm p").First().Text()), " "); !strings.HasSuffix(text, "to each message's original source queue (web-search).") {
			t.Errorf("confirmation %q; want it to end \"to each message's original source queue (web-search).\"", text)
		}
		if v, _ := confirm.Find(`input[name="confirm"]`).Attr("value"); v != "1" {
			t.Error("the confirm form does not post confirm=1")
		}
		if pw.Count(t, "web-search-dlq") != 3 {
			t.Error("the confirmation step moved messages")
		}
	})
	t.Run("confirmed", func(t *testing.T) {
		_, res := post(map[string][]string{"confirm": {"1"}}, false, http.StatusSeeOther)
		loc := res.Header.Get("Location")
		if loc != "/queues/web-search-dlq?done=redrive-started#redrive-panel" {
			t.Errorf("Location = %q", loc)
		}
		doc, _ := pw.page(t, request{path: strings.TrimSuffix(loc, "#redrive-panel")}, http.StatusOK)
		if doc.Find("#redrive-panel table.history tbody tr").Length() != 1 {
			t.Error("the started task is not in the history")
		}
		if !strings.Contains(doc.Find("#flash .notice").Text(), "Move task started") {
			t.Errorf("the page after the 303 does not say the task started; flash: %s", outer(doc.Find("#flash")))
		}
	})
	t.Run("second start refused in the panel", func(t *testing.T) {
		doc, _ := post(map[string][]string{"confirm": {"1"}}, true, http.StatusConflict)
		if doc.Find("#redrive-panel .error").Text() == "" || doc.Find("header.top").Length() != 0 {
			t.Errorf("panel:\n%s", outer(doc.Find("#redrive-panel")))
		}
	})
	t.Run("cancel", func(t *testing.T) {
		doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive/cancel", header: cookie,
			form: map[string][]string{"_csrf": {token}}, htmx: true}, http.StatusOK)
		if doc.Find("#redrive-panel").Length() != 1 {
			t.Errorf("no panel in the answer:\n%s", outer(doc.Find("body")))
		}
		if !strings.Contains(doc.Find(`#flash[hx-swap-oob="true"] .notice`).Text(), "Cancelling") {
			t.Errorf("the outcome is not sent to the flash area:\n%s", outer(doc.Find("body")))
		}
	})
	t.Run("audit", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/audit"}, http.StatusOK)
		assertSafe(t, doc)
		text := doc.Find("#audit-table").Text()
		for _, w := range []string{"redrive.start", "redrive.cancel", "web-search-dlq", "refused"} {
			if !strings.Contains(text, w) {
				t.Errorf("audit lacks %q", w)
			}
		}
		if ws, _ := doc.Find("body").Attr("ws-connect"); ws != "/ws?topic=audit" {
			t.Errorf("ws-connect = %q", ws)
		}
	})
}

func TestViewerCannotRedrive(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{TokenAuth: true})
	doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive",
		form: map[string][]string{}, htmx: true}, http.StatusForbidden)
	if !strings.Contains(doc.Find(".error").Text(), "viewer") {
		t.Errorf("panel:\n%s", outer(doc.Selection))
	}
	if pw.Count(t, "web-search-dlq") != 3 {
		t.Error("messages moved for a viewer")
	}
}

// TestRedriveFormRateIsTheActionsToRefuse: the form hands its rate to the action as typed, as
// the API does, so the role is checked first and every refusal is audited: a viewer with a bad
// rate is forbidden, an operator with one is told the rate is invalid.
func TestRedriveFormRateIsTheActionsToRefuse(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	tests := []struct {
		name   string
		token  string
		actor  string
		rate   string
		status int
		code   string
	}{
		{"viewer, not a number", h.viewer, "status-bot", "fast", http.StatusForbidden, "forbidden"},
		{"viewer, zero", h.viewer, "status-bot", "0", http.StatusForbidden, "forbidden"},
		{"operator, not a number", h.operator, "ops-bot", "fast", http.StatusBadRequest, "invalid_rate"},
		{"operator, zero", h.operator, "ops-bot", "0", http.StatusBadRequest, "invalid_rate"},
		{"operator, too fast", h.operator, "ops-bot", "501", http.StatusBadRequest, "invalid_rate"},
		{"operator, fractional", h.operator, "ops-bot", "2.5", http.StatusBadRequest, "invalid_rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cookies, csrf := browserSession(t, h, tt.token)
			form := url.Values{csrfField: {csrf}, "confirm": {"1"}, "max_per_second": {tt.rate}}
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/queues/orders-dlq/redrive", body: form.Encode(), cookies: cookies,
				header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"}})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, clip(rec.Body.String()))
			}
			entries, err := h.w.Store.ListAudit(t.Context(), store.AuditFilter{Limit: 1})
			if err != nil || len(entries) != 1 {
				t.Fatalf("audit: %v %+v", err, entries)
			}
			if e := entries[0]; e.Actor != tt.actor || e.Result != store.AuditRefused || !strings.HasPrefix(e.Detail, tt.code+":") {
				t.Errorf("newest audit entry = %+v; want %s refused with %s", e, tt.actor, tt.code)
			}
		})
	}
	if n := h.w.Count(t, "orders-dlq"); n != 5 {
		t.Errorf("orders-dlq holds %d; a refused form moved messages", n)
	}
}

// TestFreshnessCarriesItsThreshold: the freshness line of a page and of a push says how old the
// data was when it was rendered and past which age it is stale, for the page to count on its
// own while no push comes.
func TestFreshnessCarriesItsThreshold(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	msg, err := pw.srv.hubFreshness(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]*goquery.Document{"page": doc, "push": parseFragment(t, msg)} {
		t.Run(name, func(t *testing.T) {
			line := d.Find("#freshness")
			if got := line.AttrOr("data-stale-after", ""); got != "45" {
				t.Errorf("data-stale-after = %q, want 45 (the views' threshold, in seconds)", got)
			}
			if _, err := strconv.ParseFloat(line.AttrOr("data-age", ""), 64); err != nil {
				t.Errorf("data-age = %q: %v", line.AttrOr("data-age", ""), err)
			}
			if line.Find(`[aria-hidden="true"] time.age`).Length() != 1 || line.Find(".visually-hidden").Length() != 1 {
				t.Errorf("the counted age is not hidden from screen readers, or they get no time instead:\n%s", outer(line))
			}
		})
	}
}

func TestLoginPage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/login?next=/queues/web-search"}, http.StatusOK)
	form := doc.Find(`form[action="/login"][method="post"]`)
	if form.Find(`label[for="token"]`).Length() != 1 || form.Find(`input[name="token"][type="password"]`).Length() != 1 {
		t.Error("no labelled token field")
	}
	if v, _ := form.Find(`input[name="next"]`).Attr("value"); v != "/queues/web-search" {
		t.Errorf("next = %q", v)
	}
	doc, _ = pw.page(t, request{path: "/login?error=1&next=//evil.example"}, http.StatusUnauthorized)
	if !strings.Contains(doc.Find(".error").Text(), "That token was not accepted") {
		t.Error("no error message")
	}
	if v, _ := doc.Find(`input[name="next"]`).Attr("value"); v != "/" {
		t.Errorf("next = %q, want / for a foreign target", v)
	}
}

func TestStaticAssets(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	var srcs []string
	doc.Find("script[src], link[rel=stylesheet]").Each(func(_ int, s *goquery.Selection) {
		v, ok := s.Attr("src")
		if !ok {
			v, _ = s.Attr("href")
		}
		srcs = append(srcs, v)
	})
	if len(srcs) != 4 {
		t.Fatalf("assets = %q", srcs)
	}
	for _, src := range srcs {
		rec := pw.do(t, request{path: src})
		if rec.Code != http.StatusOK || !strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
			t.Errorf("%s: %d %q", src, rec.Code, rec.Header().Get("Cache-Control"))
		}
	}
	if rec := pw.do(t, request{path: "/static/0000/app.css"}); rec.Code != http.StatusOK || strings.Contains(rec.Header().Get("Cache-Control"), "immutable") {
		t.Errorf("stale hash: %d %q", rec.Code, rec.Header().Get("Cache-Control"))
	}
	if rec := pw.do(t, request{path: "/static/0000/nope.js"}); rec.Code != http.StatusNotFound {
		t.Errorf("unknown asset: %d", rec.Code)
	}
	if content, _ := doc.Find(`meta[name="htmx-config"]`).Attr("content"); !strings.Contains(content, `"allowEval":false`) ||
		!strings.Contains(content, `"includeIndicatorStyles":false`) {
		t.Errorf("htmx-config = %q", content)
	}
}

// TestRedriveOutcomeOutlivesPushes: an action made through htmx shows its outcome in the flash
// area, out of band, and neither the push that follows the move task nor the panel fetch that push
// triggers touches that area; so the outcome stays until the next action.
func TestRedriveOutcomeOutlivesPushes(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	dlq, err := pw.Views.ResolveQueue(context.Background(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		path   string
		form   url.Values
		status int
		class  string // of the flash message: notice for an outcome, error for a refusal
		want   string
	}{
		{"start", "/queues/web-search-dlq/redrive", url.Values{"confirm": {"1"}, "max_per_second": {"1"}}, http.StatusOK, "notice", "Move task started"},
		{"second start refused", "/queues/web-search-dlq/redrive", url.Values{"confirm": {"1"}}, http.StatusConflict, "error", "running"},
		{"cancel", "/queues/web-search-dlq/redrive/cancel", url.Values{}, http.StatusOK, "notice", "Cancelling the move task"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.form.Set("_csrf", token)
			doc, _ := pw.page(t, request{method: http.MethodPost, path: tt.path, header: cookie, form: tt.form, htmx: true}, tt.status)
			if doc.Find("#redrive-panel").Length() != 1 {
				t.Fatal("the answer has no panel to swap")
			}
			flash := doc.Find(`#flash[hx-swap-oob="true"]`)
			if text := flash.Find("." + tt.class).Text(); !strings.Contains(text, tt.want) || !strings.Contains(text, "web-search-dlq") {
				t.Errorf("flash %s = %q, want %q about web-search-dlq", tt.class, text, tt.want)
			}
			if doc.Find("#redrive-panel .notice").Length() != 0 {
				t.Error("the outcome is inside the panel, which the next push replaces")
			}

			// What follows: the hub's push about the move task, and the panel fetch it triggers.
			msg, err := pw.srv.hubRender(context.Background(), subscriptionOf(live.Queue(dlq.ID), templates.Nav{}, nil), live.Changes{events.MoveTasksChanged: true})
			if err != nil {
				t.Fatal(err)
			}
			push := parsePush(t, msg)
			if push.Find("#flash").Length() != 0 {
				t.Error("the push overwrites the flash area")
			}
			refresh, ok := push.Find("#redrive-refresh").Attr("hx-get")
			if !ok {
				t.Fatal("the push does not refresh the panel")
			}
			panel, _ := pw.page(t, request{path: refresh, htmx: true}, http.StatusOK)
			if panel.Find("#flash").Length() != 0 {
				t.Error("the panel fetch overwrites the flash area")
			}
		})
	}
}

// TestOperatorCues: what an operator woken at night looks for first is on the pages: the DLQ
// depths stand out in the overview, the DLQ's messages say which tool and since when, and the
// redrive panel says how many messages wait and where they will go.
func TestOperatorCues(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	overview, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	dlqPage, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	row := func(name string) *goquery.Selection {
		return overview.Find("tbody#overview-rows tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("th a").Text() == name
		})
	}
	tests := []struct {
		name string
		sel  *goquery.Selection
		want string // "" : the selection must be empty
	}{
		{"a source's DLQ depth stands out", row("web-search").Find("td.dlq-depth"), "3"},
		{"a DLQ's own depth stands out", row("web-search-dlq").Find("td.dlq-depth"), "3"},
		{"nothing stands out without DLQ messages", row("notifications").Find("td.dlq-depth"), ""},
		{"the sample's tool comes first", dlqPage.Find("#messages table.messages thead th").Eq(1), "Tool"},
		{"since when it fails", dlqPage.Find("#messages table.messages thead th:contains('First received')"), "First received"},
		{"the redrive says how many and where", dlqPage.Find("#redrive-panel .redrive-now"), "3 messages wait here now. By default each goes back to the queue it failed in (web-search)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.Join(strings.Fields(tt.sel.Text()), " ")
			if tt.want == "" {
				if tt.sel.Length() != 0 {
					t.Errorf("found %q", text)
				}
				return
			}
			if !strings.Contains(text, tt.want) {
				t.Errorf("text = %q, want %q", text, tt.want)
			}
		})
	}
}

// TestPagesWriteTimesOneWay: every page writes a time as "Mar 1 12:00:04 UTC" (or a relative
// "3 s ago" beside it), never ISO 8601 in its text: /status, the audit log and a message's page
// wrote "2026-03-01T12:00:04Z" where the others did not. Machine-readable times stay in the
// datetime attributes.
func TestPagesWriteTimesOneWay(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
		form: map[string][]string{"_csrf": {token}, "confirm": {"1"}}}, http.StatusSeeOther) // an audit entry
	iso := regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}`)
	for _, path := range []string{"/", "/status", "/audit", "/queues/web-search-dlq", "/queues/web-search-dlq/messages",
		"/queues/web-search-dlq/messages/m-plain", "/queues/tool-calls.fifo", "/queues/web-search"} {
		doc, _ := pw.page(t, request{path: path}, http.StatusOK)
		doc.Find("script, style").Remove()
		if m := iso.FindString(doc.Find("body").Text()); m != "" {
			t.Errorf("%s writes %q in its text", path, m)
		}
	}
}
