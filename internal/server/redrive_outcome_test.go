package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// TestRedrivePageShowsWhatCameBack: a redrive started from the panel remembers what it moves;
// a hostile tool call that comes back shows on the redrive's row, its page (by tool, server,
// reason; safely), the API and the next confirmation, with the count's source and age. A copy of
// its body sent straight to the DLQ is not counted, and one that reuses its tool call id with
// another body shows apart; the reasons, read from the error dimension, show in one table.
func TestRedrivePageShowsWhatCameBack(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	task := hostileBounceBack(t, pw, cookie, token)
	id := strconv.FormatInt(task.ID, 10)

	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/redrives/" + id}, http.StatusOK)
	assertSafe(t, doc)
	text := strings.Join(strings.Fields(doc.Find("#redrive-outcome").Text()), " ")
	for _, want := range []string{
		"3 moved · 1 back within 2 min: <script>alert('tool')</script> 1",
		"From toolq's samples of the dead-letter queue · counted at the sample of",
		"toolq knew 3 of the messages it moved",
		"1 call that failed again is in the dead-letter queue now",
		"2 messages of the sample carry no body hash (stored before toolq hashed bodies)",
		"Same call id, other body: 1 arrival in the dead-letter queue since the start reused a tool call id this redrive moved",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the redrive page lacks %q:\n%s", want, text)
		}
	}
	var tables []string
	doc.Find("#redrive-outcome h3").Each(func(_ int, h *goquery.Selection) { tables = append(tables, h.Text()) })
	if want := []string{"What this count can miss", "By tool", "By mcpServer", "By reason (error)"}; !slices.Equal(tables, want) {
		t.Errorf("the redrive page's tables = %q, want %q (the reasons once, not again as By error)", tables, want)
	}
	if n := doc.Find("#redrive-outcome table.bounces").First().Find("tbody tr").Length(); n != 2 {
		t.Errorf("by tool: %d rows, want 2 (the hostile tool and web_search)", n)
	}

	queue, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	row := queue.Find("#redrive-panel table.history tbody tr").First()
	if link, _ := row.Find("a").Attr("href"); link != "/queues/web-search-dlq/redrives/"+id || !strings.Contains(row.Text(), "1 back within 2 min") {
		t.Errorf("the redrive's row: %q links to %q", row.Text(), link)
	}

	rec := pw.do(t, request{path: "/api/v1/queues/web-search-dlq/redrives/" + id})
	var r views.Redrive
	if err := json.Unmarshal(rec.Body.Bytes(), &r); err != nil || rec.Code != http.StatusOK || r.Outcome == nil {
		t.Fatalf("API: %d %s", rec.Code, rec.Body)
	}
	if o := r.Outcome; o.BouncedBack != 1 || o.Remembered != 3 || o.InDeadLetterQueue != 1 || o.Source != "samples" || o.CheckedAt == nil ||
		o.SameCallOtherBody != 1 || o.ReasonDimension != "error" {
		t.Errorf("API outcome = %+v", o)
	}
	metrics := pw.do(t, request{path: "/metrics"}).Body.String()
	for _, want := range []string{
		`toolq_redrive_outcome_bounced_back_messages{account="default",queue="web-search-dlq",region="us-east-1"} 1`,
		`toolq_redrive_outcome_remembered_messages{account="default",queue="web-search-dlq",region="us-east-1"} 3`,
		`toolq_redrive_outcome_bounced_back_by_tool{account="default",queue="web-search-dlq",region="us-east-1",tool="<script>alert('tool')</script>"} 1`,
		`toolq_redrive_outcome_settled{account="default",queue="web-search-dlq",region="us-east-1"} 0`,
		`toolq_redrive_outcome_checked_timestamp_seconds{account="default",queue="web-search-dlq",region="us-east-1"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if rec := pw.do(t, request{path: "/queues/web-search-dlq/redrives/999"}); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown redrive's page: %d", rec.Code)
	}

	confirm, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
		form: map[string][]string{"_csrf": {token}}}, http.StatusOK)
	note := strings.Join(strings.Fields(confirm.Find("#redrive-last-outcome").Text()), " ")
	for _, want := range []string{"The last redrive of this queue (started 2 min ago): 3 moved · 1 back within 2 min",
		"Redriving now would replay 1 call that already failed again after the last redrive."} {
		if !strings.Contains(note, want) {
			t.Errorf("the confirmation lacks %q:\n%s", want, note)
		}
	}
}

// hostileBounceBack starts a redrive of web-search-dlq from its panel; SQS completes it, and two
// minutes later the hostile call (tc_x) is back in the DLQ under a new message id, beside a copy
// of its body sent straight to the DLQ and a call that reuses its id with another body.
func hostileBounceBack(t *testing.T, pw *pageWorld, cookie http.Header, token string) store.MoveTask {
	t.Helper()
	dlq, task := redriveFromPanel(t, pw, cookie, token)
	completeTask(t, pw, task)
	pw.Advance(2 * time.Minute)
	const forged = `{"toolCallId":"tc_x","toolName":"web_search","toolArgs":{"q":"forged"}}`
	dims := map[string]string{"mcpServer": xssAttr, "error": xssGroup}
	if _, err := pw.Store.SaveSample(t.Context(), store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: pw.Now(), Seen: 3, ApproxVisible: 3},
		[]store.SampledMessage{
			{MessageID: "m-xss-again", ToolCallID: "tc_x", ToolName: "<script>alert('tool')</script>", SentAt: task.StartedAt.Add(time.Second),
				Body: xssBody, BodyHash: bodyHash(xssBody), DeadLetterSourceARN: pw.ARN("web-search"), Dimensions: dims},
			// A copy of its body sent straight to the DLQ: no DeadLetterQueueSourceArn.
			{MessageID: "m-xss-copy", ToolCallID: "tc_x", ToolName: "<script>alert('tool')</script>", SentAt: task.StartedAt.Add(time.Second),
				Body: xssBody, BodyHash: bodyHash(xssBody), Dimensions: dims},
			// Its tool call id with another body, failed through the source.
			{MessageID: "m-xss-other", ToolCallID: "tc_x", ToolName: "web_search", SentAt: task.StartedAt.Add(time.Second),
				Body: forged, BodyHash: bodyHash(forged), DeadLetterSourceARN: pw.ARN("web-search"), Dimensions: dims},
		}, nil); err != nil {
		t.Fatal(err)
	}
	return task
}

// redriveFromPanel starts a redrive of web-search-dlq from its panel, as a browser confirms it,
// and returns the DLQ and the task.
func redriveFromPanel(t *testing.T, pw *pageWorld, cookie http.Header, token string) (views.QueueKey, store.MoveTask) {
	t.Helper()
	pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
		form: map[string][]string{"_csrf": {token}, "confirm": {"1"}}}, http.StatusSeeOther)
	dlq, err := pw.Views.ResolveQueue(t.Context(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := pw.Store.ListMoveTasks(t.Context(), dlq.ID, 1)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks = %+v, %v", tasks, err)
	}
	return dlq, tasks[0]
}

// completeTask records, as the collector would from SQS, that the task moved the DLQ's three
// messages a second after its start.
func completeTask(t *testing.T, pw *pageWorld, task store.MoveTask) {
	t.Helper()
	task.Status, task.Moved, task.UpdatedAt = store.MoveTaskCompleted, 3, task.StartedAt.Add(time.Second)
	if _, err := pw.Store.UpsertMoveTask(t.Context(), task); err != nil {
		t.Fatal(err)
	}
}

// TestRedriveHistoryPushesWhatCameBack: a DLQ page open in a browser sees its past redrive's
// "Came back" change as samples count it, through the hub's pushes over the websocket, without
// a reload or a panel fetch; the push carries the history out of band, links alone.
func TestRedriveHistoryPushesWhatCameBack(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	cookie, token := pw.csrf(t)
	dlq, task := redriveFromPanel(t, pw, cookie, token)
	completeTask(t, pw, task)
	conn, _, err := dial(t, srv, "topic="+queueTopic(dlq.ID), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	row := func(doc *goquery.Document) string {
		return strings.Join(strings.Fields(doc.Find("#redrive-history table.history tbody tr").First().Find("td").Last().Text()), " ")
	}
	doc := nextWith(t, conn, "#redrive-history")
	if got := row(doc); got != "3 moved · none back so far" {
		t.Fatalf("the first push's row says %q", got)
	}

	// The call fails again; the collector's next sample of the DLQ sees it back.
	pw.Advance(2 * time.Minute)
	if _, err := pw.Store.SaveSample(t.Context(), store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: pw.Now(), Seen: 1, ApproxVisible: 1},
		[]store.SampledMessage{{MessageID: "m-xss-again", ToolCallID: "tc_x", ToolName: "web_search", SentAt: task.StartedAt.Add(time.Second),
			Body: xssBody, BodyHash: bodyHash(xssBody), DeadLetterSourceARN: pw.ARN("web-search")}}, nil); err != nil {
		t.Fatal(err)
	}
	pw.bus.Publish(events.Event{Kind: events.SampleTaken, QueueID: dlq.ID, At: pw.Now()})
	doc = nextWith(t, conn, "#redrive-history")
	assertSafe(t, doc)
	history := doc.Find("#redrive-history")
	if oob, _ := history.Attr("hx-swap-oob"); oob != "true" || history.Find("form, input").Length() != 0 {
		t.Errorf("history pushed with hx-swap-oob %q and %d form fields", oob, history.Find("form, input").Length())
	}
	if got, want := row(doc), "3 moved · 1 back within 2 min: web_search 1"; got != want {
		t.Errorf("the pushed row says %q, want %q", got, want)
	}
	if link, _ := history.Find("tbody tr a").Attr("href"); link != "/queues/web-search-dlq/redrives/"+strconv.FormatInt(task.ID, 10) {
		t.Errorf("the pushed row links to %q", link)
	}
}

// TestMCPPreviewSaysWhatTheConfirmationSays: start_redrive's preview gives an agent the facts the
// UI's confirmation gives a person about the last redrive (which one, what came back, how many
// calls a redrive now would replay), from the same reading; its prose keeps the messages' names
// out (they are in the JSON, as data). Before any redrive there is nothing to say.
func TestMCPPreviewSaysWhatTheConfirmationSays(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	var local *apiHarness // auth none: the MCP client needs no token
	cs := local.mcpSession(t, srv.URL+mcpPath, "")
	tools := toolNames(t, cs)
	preview := func() (*redrivePreview, string) {
		t.Helper()
		raw, text := call(t, cs, tools, "start_redrive", map[string]any{"queue": "web-search-dlq"})
		var answer startRedriveAnswer
		if err := json.Unmarshal(raw, &answer); err != nil || answer.Preview == nil {
			t.Fatalf("preview = %s (%v)", raw, err)
		}
		return answer.Preview, text
	}
	if p, text := preview(); p.LastRedrive != nil || strings.Contains(text, "last redrive") {
		t.Errorf("a preview before any redrive: %+v, %q", p.LastRedrive, text)
	}

	cookie, token := pw.csrf(t)
	task := hostileBounceBack(t, pw, cookie, token)
	confirm, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
		form: map[string][]string{"_csrf": {token}}}, http.StatusOK)
	note := confirm.Find("#redrive-last-outcome")
	said := strings.Join(strings.Fields(note.Find("p.warning").Text()), " ")
	p, text := preview()
	last := p.LastRedrive
	if last == nil || last.Redrive.ID != task.ID || last.Redrive.Outcome == nil || last.WouldReplay != 1 || last.Note != said ||
		!strings.Contains(strings.Join(strings.Fields(note.Text()), " "), last.Redrive.Outcome.Line) {
		t.Fatalf("the preview's last redrive = %+v; the confirmation says %q", last, strings.Join(strings.Fields(note.Text()), " "))
	}
	for _, want := range []string{
		"The last redrive of this queue (started " + task.StartedAt.UTC().Format(time.RFC3339) + "): 3 moved · 1 back within 2 min.",
		"Redriving now would replay 1 call that already failed again after the last redrive.",
		"Counted from toolq's sample of the dead-letter queue at " + pw.Now().UTC().Format(time.RFC3339) + ", which saw 100% of it.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the preview's text lacks %q:\n%s", want, text)
		}
	}
	for _, hostile := range []string{"<script>", "alert", "</code>"} {
		if strings.Contains(text, hostile) {
			t.Errorf("the preview's text carries message text %q:\n%s", hostile, text)
		}
	}
}
