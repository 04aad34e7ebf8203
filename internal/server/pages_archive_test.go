package server

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Hostile text of archived tool calls.
const (
	archiveXSSBody = `<script>alert(1)</script>`
	archiveXSSTool = `"><img src=x onerror=alert(1)>`
)

// archivedPlain is how many plain archived messages archiveWorld adds to the hostile and the
// formula one: more than a page, so that the pages have a next one.
const archivedPlain = messagesPerPage + 5

// archiveWorld is the page world with web-search-dlq's archive filled through the store, as a
// discard leaves it: archivedPlain plain calls (every third of tool fetch, the others
// web_search), then a-formula (a CSV formula body), then a-xss (hostile body, tool, dimension,
// reason and attribute; a binary attribute; system attributes), the newest. The discard has
// ended, so that nothing keeps a restore from starting.
func archiveWorld(t *testing.T, o pageWorldOptions) *pageWorld {
	t.Helper()
	pw := newPageWorld(t, o)
	ctx := context.Background()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	now := pw.Now()
	job, err := pw.Store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask:  store.MoveTask{QueueID: dlq.ID, SourceARN: pw.ARN("web-search-dlq"), StartedAt: now.Add(-time.Hour), Kind: store.KindDiscard},
		Selection: `{"q":"x"}`, Actor: "ops-bot",
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(id, tool, body string) store.ArchivedMessage {
		return store.ArchivedMessage{
			QueueID: dlq.ID, QueueARN: pw.ARN("web-search-dlq"), MessageID: id, Body: body, BodyHash: "h-" + id,
			MessageAttributes: map[string]store.ArchivedAttribute{}, SystemAttributes: map[string]string{"ApproximateReceiveCount": "3"},
			DeadLetterSourceARN: pw.ARN("web-search"), SentAt: now.Add(-2 * time.Hour), ReceiveCount: 3,
			ToolName: tool, ToolCallID: "tc_" + id, SessionID: "sess_" + id, Dimensions: map[string]string{"mcpServer": "docs-legacy"},
			DiscardedBy: "ops-bot", DiscardedAt: now.Add(-30 * time.Minute),
		}
	}
	var msgs []store.ArchivedMessage
	for i := range archivedPlain {
		tool := "web_search"
		if i%3 == 0 {
			tool = "fetch"
		}
		msgs = append(msgs, msg(fmt.Sprintf("a-plain-%02d", i), tool, `{"toolName":"`+tool+`","toolArgs":{"q":"golang"}}`))
	}
	formula := msg("a-formula", "web_search", `=HYPERLINK("http://evil","x")`)
	formula.Reason = "connection_refused"
	xss := msg("a-xss", archiveXSSTool, archiveXSSBody)
	xss.Reason = archiveXSSTool
	xss.Dimensions = map[string]string{"mcpServer": archiveXSSBody, "error": archiveXSSTool}
	xss.MessageAttributes = map[string]store.ArchivedAttribute{
		"note": {DataType: "String", StringValue: xssAttr},
		"blob": {DataType: "Binary", BinaryValue: []byte{0, 1, 2, 0xff}},
	}
	xss.SystemAttributes = map[string]string{"SenderId": "AIDAEXAMPLE", "AWSTraceHeader": "Root=1-5759e988-bd862e3fe1be46a994272793"}
	xss.TraceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793"
	if err := pw.Store.Archive(ctx, job.ID, append(msgs, formula, xss), nil); err != nil {
		t.Fatal(err)
	}
	job.Status, job.UpdatedAt, job.EndedAt = store.MoveTaskCompleted, now, now
	if err := pw.Store.SaveSelectionJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	return pw
}

// text is a selection's text, a space between its elements' texts, its white space collapsed.
func text(s *goquery.Selection) string {
	var parts []string
	var walk func(*goquery.Selection)
	walk = func(sel *goquery.Selection) {
		sel.Contents().Each(func(_ int, c *goquery.Selection) {
			if goquery.NodeName(c) == "#text" {
				parts = append(parts, c.Text())
			} else {
				walk(c)
			}
		})
	}
	walk(s)
	return strings.Join(strings.Fields(strings.Join(parts, " ")), " ")
}

// archiveRows returns the message ids of an archive page's table, in order.
func archiveRows(doc *goquery.Document) []string {
	var out []string
	doc.Find("table.archive tbody tr th[scope=row]").Each(func(_ int, s *goquery.Selection) { out = append(out, text(s)) })
	return out
}

// TestArchivePages: the whole archive and a queue's list the archived calls newest first, as
// text whatever they hold; the search, the tool filter and the groupings narrow or count them,
// and Next pages on; the stats say what the archive holds and where that comes from.
func TestArchivePages(t *testing.T) {
	t.Parallel()
	pw := archiveWorld(t, pageWorldOptions{})
	total := archivedPlain + 2

	for _, path := range []string{"/archive", "/queues/web-search-dlq/archive"} {
		t.Run(path, func(t *testing.T) {
			doc, _ := pw.page(t, request{path: path}, http.StatusOK)
			assertSafe(t, doc)
			rows := archiveRows(doc)
			if len(rows) != messagesPerPage || rows[0] != "a-xss" || rows[1] != "a-formula" {
				t.Fatalf("%d rows, first %q; want %d, newest (a-xss, a-formula) first", len(rows), rows[:min(2, len(rows))], messagesPerPage)
			}
			first := doc.Find("table.archive tbody tr").First()
			if got := text(first.Find("td").Eq(map[bool]int{true: 2, false: 1}[path == "/archive"])); got != archiveXSSTool {
				t.Errorf("the hostile tool shows as %q; want it as text", got)
			}
			if got := text(first.Find("td.preview")); got != archiveXSSBody {
				t.Errorf("the hostile body shows as %q", got)
			}
			if href, _ := first.Find("th a").Attr("href"); href != "/queues/web-search-dlq/archive/a-xss" {
				t.Errorf("the message links to %q", href)
			}
			stats := text(doc.Find(".archive-stats"))
			if !strings.Contains(stats, fmt.Sprintf("holds %d messages", total)) || !strings.Contains(stats, "forever") || !strings.Contains(stats, "Read from toolq's database") {
				t.Errorf("the stats say %q", stats)
			}
			if nav, _ := doc.Find(`nav[aria-label="Main"] a[aria-current="page"]`).Attr("href"); nav != "/archive" {
				t.Errorf("the navigation marks %q", nav)
			}
			next, ok := doc.Find(`a[rel="next"]`).Attr("href")
			if !ok {
				t.Fatal("no Next link")
			}
			doc, _ = pw.page(t, request{path: next}, http.StatusOK)
			if rows := archiveRows(doc); len(rows) != total-messagesPerPage || slices.Contains(rows, "a-xss") {
				t.Errorf("the next page: %d rows; want the %d older ones", len(rows), total-messagesPerPage)
			}
		})
	}

	fetches := 0
	for i := range archivedPlain {
		if i%3 == 0 {
			fetches++
		}
	}
	tests := []struct {
		name, query string
		rows        int
		has         string
	}{
		{"tool", "tool=fetch", fetches, "a-plain-00"},
		{"hostile tool", "tool=" + url.QueryEscape(archiveXSSTool), 1, "a-xss"},
		{"search", "q=hyperlink", 1, "a-formula"},
		{"search and tool", "q=golang&tool=fetch", fetches, "a-plain-03"},
		{"nothing", "q=no-such-text", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/archive?" + tc.query}, http.StatusOK)
			assertSafe(t, doc)
			rows := archiveRows(doc)
			if len(rows) != tc.rows || tc.has != "" && !slices.Contains(rows, tc.has) {
				t.Errorf("%d rows %v; want %d with %q", len(rows), rows, tc.rows, tc.has)
			}
			if tc.rows > 0 && doc.Find(".hits .chip").Length() == 0 {
				t.Error("the filters show no chip to remove them")
			}
		})
	}

	t.Run("grouped", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/archive?groupBy=toolName"}, http.StatusOK)
		assertSafe(t, doc)
		groups := map[string]string{}
		doc.Find("table.groups-by tbody tr").Each(func(_ int, s *goquery.Selection) { groups[text(s.Find("th"))] = text(s.Find("td")) })
		// The page's 50 rows: a-xss, a-formula, then a-plain-54 down to a-plain-07.
		want := map[string]string{archiveXSSTool: "1", "fetch": "16", "web_search": "33"}
		if fmt.Sprint(groups) != fmt.Sprint(want) {
			t.Errorf("grouped by tool: %v; want %v", groups, want)
		}
		doc, _ = pw.page(t, request{path: "/queues/web-search-dlq/archive?groupBy=reason"}, http.StatusOK)
		if got := text(doc.Find("table.groups-by caption")); !strings.Contains(got, "This page's 50 messages by reason") {
			t.Errorf("the reason grouping's caption: %q", got)
		}
		if doc.Find("table.groups-by tbody tr").Length() != 3 {
			t.Errorf("grouped by reason: %q; want none, connection_refused and the hostile one", text(doc.Find("table.groups-by tbody")))
		}
	})

	t.Run("htmx", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/archive?tool=fetch", htmx: true}, http.StatusOK)
		if doc.Find("#archive-list").Length() != 1 || doc.Find("header.top").Length() != 0 {
			t.Error("the filter form's HTMX answer is not the list alone")
		}
	})

	t.Run("queue page links", func(t *testing.T) {
		doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
		if href, _ := doc.Find(".archive-link a").Attr("href"); href != "/queues/web-search-dlq/archive" {
			t.Errorf("the DLQ's page links its archive as %q", href)
		}
		doc, _ = pw.page(t, request{path: "/queues/web-search"}, http.StatusOK)
		if doc.Find(".archive-link").Length() != 0 {
			t.Error("a source queue's page links an archive")
		}
	})
}

// TestArchivedMessagePage: one archived call, whole: every message attribute (a binary one as
// base64), every system attribute, what the triage read, the discard, the body; hostile text
// stays text.
func TestArchivedMessagePage(t *testing.T) {
	t.Parallel()
	pw := archiveWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/archive/a-xss"}, http.StatusOK)
	assertSafe(t, doc)
	attrs := map[string]string{}
	doc.Find("table.message-attributes tbody tr").Each(func(_ int, s *goquery.Selection) {
		attrs[text(s.Find("th"))] = text(s.Find("td").Last())
	})
	if attrs["note"] != xssAttr || attrs["blob"] != "AAEC/w== (binary, base64)" {
		t.Errorf("message attributes: %q", attrs)
	}
	sys := map[string]string{}
	doc.Find("table.system-attributes tbody tr").Each(func(_ int, s *goquery.Selection) { sys[text(s.Find("th"))] = text(s.Find("td")) })
	if len(sys) != 2 || sys["SenderId"] != "AIDAEXAMPLE" || !strings.HasPrefix(sys["AWSTraceHeader"], "Root=1-") {
		t.Errorf("system attributes: %q", sys)
	}
	triage := text(doc.Find(".triage-read"))
	for _, want := range []string{"Tool " + archiveXSSTool, "Tool call id tc_a-xss", "Session sess_a-xss", "mcpServer " + archiveXSSBody, "Reason " + archiveXSSTool} {
		if !strings.Contains(triage, want) {
			t.Errorf("what the triage read: %q lacks %q", triage, want)
		}
	}
	if facts := text(doc.Find(".discard-facts")); !strings.Contains(facts, "Discarded by ops-bot") || !strings.Contains(facts, "not yet") {
		t.Errorf("the discard's facts: %q", facts)
	}
	if body := doc.Find("pre.body").Text(); body != archiveXSSBody {
		t.Errorf("the body shows as %q", body)
	}
	if doc.Find(`form#restore-form input[name="sel_message_id"][value="a-xss"]`).Length() != 1 {
		t.Error("no Restore this message")
	}

	doc, _ = pw.page(t, request{path: "/queues/web-search-dlq/archive/a-plain-01"}, http.StatusOK)
	if body := doc.Find("pre.body").Text(); !strings.Contains(body, "\n  \"toolArgs\": {") {
		t.Errorf("a JSON body is not pretty-printed: %q", body)
	}
	if rec := pw.do(t, request{path: "/queues/web-search-dlq/archive/nope"}); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown archived message: %d", rec.Code)
	}
}

// TestArchiveExports: JSON, JSON Lines and CSV downloads of a queue's archive, with the page's
// filters; the CSV defuses the formula a body holds.
func TestArchiveExports(t *testing.T) {
	t.Parallel()
	pw := archiveWorld(t, pageWorldOptions{})
	total := archivedPlain + 2
	tests := []struct {
		path, contentType, file string
	}{
		{"/queues/web-search-dlq/archive.json", "application/json", "web-search-dlq-archive-messages.json"},
		{"/queues/web-search-dlq/archive.jsonl", "application/jsonl", "web-search-dlq-archive-messages.jsonl"},
		{"/queues/web-search-dlq/archive.csv", "text/csv; charset=utf-8", "web-search-dlq-archive-messages.csv"},
	}
	for _, tc := range tests {
		rec := pw.do(t, request{path: tc.path})
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != tc.contentType ||
			rec.Header().Get("Content-Disposition") != `attachment; filename="`+tc.file+`"` {
			t.Errorf("%s: %d %q %q", tc.path, rec.Code, rec.Header().Get("Content-Type"), rec.Header().Get("Content-Disposition"))
		}
		if tc.contentType != "text/csv; charset=utf-8" && strings.Contains(rec.Body.String(), "<script>") {
			t.Errorf("%s holds a raw <script>", tc.path)
		}
	}

	var page views.ArchivePage
	if err := json.Unmarshal(pw.do(t, request{path: "/queues/web-search-dlq/archive.json"}).Body.Bytes(), &page); err != nil || len(page.Messages) != total || page.Messages[0].Body != archiveXSSBody {
		t.Errorf("the JSON export: %v, %d messages", err, len(page.Messages))
	}

	body := pw.do(t, request{path: "/queues/web-search-dlq/archive.jsonl"}).Body.String()
	sc := bufio.NewScanner(strings.NewReader(body))
	var lines []views.ArchivedMessage
	for sc.Scan() {
		var m views.ArchivedMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %d: %v", len(lines)+1, err)
		}
		lines = append(lines, m)
	}
	if len(lines) != total || lines[0].MessageID != "a-xss" || len(lines[0].MessageAttributes) != 2 || lines[0].SystemAttributes["SenderId"] != "AIDAEXAMPLE" {
		t.Errorf("the JSON Lines export: %d lines, first %+v", len(lines), lines[0])
	}

	rows, err := csv.NewReader(strings.NewReader(pw.do(t, request{path: "/queues/web-search-dlq/archive.csv"}).Body.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	header := rows[0]
	col := func(name string) int { return slices.Index(header, name) }
	if len(rows) != total+1 || col("body") < 0 || col("dimension.mcpServer") < 0 {
		t.Fatalf("the CSV export: %d rows, header %q", len(rows), header)
	}
	for _, r := range rows[1:] {
		if r[col("messageId")] == "a-formula" && r[col("body")] != `'=HYPERLINK("http://evil","x")` {
			t.Errorf("the formula body is exported as %q", r[col("body")])
		}
		if r[col("messageId")] == "a-xss" && r[col("toolName")] != archiveXSSTool {
			t.Errorf("the hostile tool is exported as %q", r[col("toolName")])
		}
	}

	filtered, err := csv.NewReader(strings.NewReader(pw.do(t, request{path: "/queues/web-search-dlq/archive.csv?q=hyperlink"}).Body.String())).ReadAll()
	if err != nil || len(filtered) != 2 {
		t.Errorf("the filtered CSV export: %v, %d rows; want the header and a-formula", err, len(filtered))
	}
}

// TestRestoreByClicks: the queue archive's form reviews a restore of the checked calls (or of
// the page's filters), which says what it sends and where and that they stay in the archive;
// its confirmation starts a restore job (303 to the queue page, which says so). Refusals show on
// the page with their status.
func TestRestoreByClicks(t *testing.T) {
	t.Parallel()
	pw := archiveWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	page, _ := pw.page(t, request{path: "/queues/web-search-dlq/archive?tool=fetch", header: cookie}, http.StatusOK)
	form := page.Find("form#restore-form")
	if form.Length() != 1 || form.Find(`input[name="sel_tool"][value="fetch"]`).Length() != 1 || form.Find(`button[value="filters"]`).Length() != 1 {
		t.Fatal("no restore form carrying the page's filter")
	}
	if n := page.Find(`table.archive input[type="checkbox"][name="sel_message_id"][form="restore-form"]`).Length(); n != len(archiveRows(page)) {
		t.Errorf("%d checkboxes; want one per row", n)
	}

	// Nothing checked: refused on the page, with its status.
	refused, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"checked"}}}, http.StatusUnprocessableEntity)
	if refused.Find(".restore-confirm .error").Length() != 1 || refused.Find(".restore-confirm button").Length() != 0 {
		t.Errorf("a review of nothing shows %q", text(refused.Find(".restore-confirm")))
	}

	review, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"checked"}, "sel_message_id": {"a-formula", "a-xss"}}}, http.StatusOK)
	assertSafe(t, review)
	said := text(review.Find(".restore-confirm"))
	for _, want := range []string{"back to the queue each failed in", "holds 2 of them", "the restore sends 2", "tool web_search 1", "to web-search 2", "stay in the archive, marked restored"} {
		if !strings.Contains(said, want) {
			t.Errorf("the confirmation says %q; want %q in it", said, want)
		}
	}
	confirm := url.Values{"_csrf": {token}}
	review.Find(".restore-confirm form input[type=hidden]").Each(func(_ int, s *goquery.Selection) {
		name, _ := s.Attr("name")
		value, _ := s.Attr("value")
		confirm.Add(name, value)
	})
	if confirm.Get("confirm") != "1" || confirm.Get("idempotency_key") == "" || len(confirm["sel_message_id"]) != 2 {
		t.Fatalf("the confirmation's form carries %v", confirm)
	}
	_, rec := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie, form: confirm}, http.StatusSeeOther)
	loc := rec.Header().Get("Location")
	if !strings.Contains(loc, "done=restore-started") {
		t.Fatalf("Location %q; want the queue page saying the restore started", loc)
	}
	dlq, err := pw.Views.ResolveQueue(context.Background(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := pw.Store.ListMoveTasks(context.Background(), dlq.ID, 1)
	if err != nil || len(tasks) != 1 || tasks[0].Kind != store.KindRestore {
		t.Fatalf("the newest job: %+v, %v; want a restore", tasks, err)
	}
	queuePath, _, _ := strings.Cut(loc, "#") // a browser keeps the fragment to itself
	queue, _ := pw.page(t, request{path: queuePath}, http.StatusOK)
	if notice := text(queue.Find(".flash .notice")); !strings.Contains(notice, "Restore started") {
		t.Errorf("the queue page's notice: %q", notice)
	}
	// The same confirmation again starts nothing more.
	_, rec = pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie, form: confirm}, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); !strings.Contains(loc, "done=redrive-repeated") {
		t.Errorf("a repeated confirmation goes to %q", loc)
	}

	refusals := []struct {
		name   string
		form   url.Values
		status int
	}{
		// A restore is running now: the review says so.
		{"a job running", url.Values{"scope": {"filters"}, "sel_tool": {"fetch"}}, http.StatusConflict},
		{"matches nothing", url.Values{"confirm": {"1"}, "sel_tool": {"nope"}, "idempotency_key": {"k-nothing"}}, http.StatusUnprocessableEntity},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("_csrf", token)
			doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie, form: tc.form}, tc.status)
			if doc.Find(".restore-confirm .error").Length() != 1 || doc.Find(".restore-confirm button").Length() != 0 {
				t.Errorf("the refusal shows %q", text(doc.Find(".restore-confirm")))
			}
		})
	}
}

// TestRestoreByFilters: a review of the page's filters counts the archived calls they name and
// sends them to the destination typed.
func TestRestoreByFilters(t *testing.T) {
	t.Parallel()
	pw := archiveWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	review, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"filters"}, "sel_q": {"hyperlink"}, "destination": {"notifications"}}}, http.StatusOK)
	said := text(review.Find(".restore-confirm"))
	for _, want := range []string{"go to notifications", "search hyperlink", "holds 1 of them", "to notifications 1"} {
		if !strings.Contains(said, want) {
			t.Errorf("the confirmation says %q; want %q in it", said, want)
		}
	}
	if v, _ := review.Find(`.restore-confirm input[name="destination"]`).Attr("value"); v != "notifications" {
		t.Errorf("the destination is carried as %q", v)
	}
}

// TestArchiveRestoreRoles: a viewer, or any user in read-only mode, reads why instead of the
// restore's buttons, and has no checkboxes; a viewer's review is refused.
func TestArchiveRestoreRoles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    pageWorldOptions
		why  string
	}{
		{"viewer", pageWorldOptions{TokenAuth: true}, "Your role (viewer)"},
		{"read-only", pageWorldOptions{ReadOnly: true}, "read-only mode"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pw := archiveWorld(t, tc.o)
			for _, path := range []string{"/queues/web-search-dlq/archive", "/queues/web-search-dlq/archive/a-xss"} {
				doc, _ := pw.page(t, request{path: path}, http.StatusOK)
				if doc.Find("form#restore-form button").Length() != 0 || doc.Find(`input[name="sel_message_id"][type="checkbox"]`).Length() != 0 {
					t.Errorf("%s offers the restore", path)
				}
				if why := text(doc.Find("form#restore-form .disabled-reason")); !strings.Contains(why, tc.why) {
					t.Errorf("%s says %q; want %q", path, why, tc.why)
				}
			}
		})
	}
	pw := archiveWorld(t, pageWorldOptions{TokenAuth: true})
	doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore",
		form: url.Values{"scope": {"checked"}, "sel_message_id": {"a-xss"}}}, http.StatusForbidden)
	if !strings.Contains(text(doc.Find(".restore-confirm .error")), "viewer") {
		t.Error("a viewer's review does not say why it is refused")
	}
	doc, _ = pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/archive/restore",
		form: url.Values{"confirm": {"1"}, "sel_message_id": {"a-xss"}, "idempotency_key": {"k-viewer"}}}, http.StatusForbidden)
	if doc.Find(".restore-confirm .error").Length() != 1 {
		t.Error("a viewer's start does not show the refusal")
	}
}
