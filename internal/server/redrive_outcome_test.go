package server

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// TestRedrivePageShowsWhatCameBack: a redrive started from the panel remembers what it moves;
// a hostile tool call that comes back shows on the redrive's row, its page (by tool, server,
// reason; safely), the API and the next confirmation, with the count's source and age.
func TestRedrivePageShowsWhatCameBack(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
		form: map[string][]string{"_csrf": {token}, "confirm": {"1"}}}, http.StatusSeeOther)
	ctx := t.Context()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := pw.Store.ListMoveTasks(ctx, dlq.ID, 1)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks = %+v, %v", tasks, err)
	}
	task := tasks[0]
	// SQS completes the task; the hostile call (tc_x) fails again and is back a minute later,
	// under a new message id.
	task.Status, task.Moved, task.UpdatedAt = store.MoveTaskCompleted, 3, task.StartedAt.Add(time.Second)
	if _, err := pw.Store.UpsertMoveTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	pw.Advance(2 * time.Minute)
	if _, err := pw.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: pw.Now(), Seen: 1, ApproxVisible: 1},
		[]store.SampledMessage{{MessageID: "m-xss-again", ToolCallID: "tc_x", ToolName: "<script>alert('tool')</script>",
			SentAt: task.StartedAt.Add(time.Second), Body: xssBody, Dimensions: map[string]string{"mcpServer": xssAttr, "error": xssGroup}}}, nil); err != nil {
		t.Fatal(err)
	}
	id := strconv.FormatInt(task.ID, 10)

	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/redrives/" + id}, http.StatusOK)
	assertSafe(t, doc)
	text := strings.Join(strings.Fields(doc.Find("#redrive-outcome").Text()), " ")
	for _, want := range []string{
		"3 moved · 1 back within 2 min: <script>alert('tool')</script> 1",
		"From toolq's samples of the dead-letter queue · counted at the sample of",
		"toolq knew 3 of the messages it moved",
		"1 call that failed again is in the dead-letter queue now",
		"2 messages of the sample carry neither a body hash nor a tool call id",
		"By tool", "By mcpServer", "By reason",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the redrive page lacks %q:\n%s", want, text)
		}
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
	if o := r.Outcome; o.BouncedBack != 1 || o.Remembered != 3 || o.InDeadLetterQueue != 1 || o.Source != "samples" || o.CheckedAt == nil {
		t.Errorf("API outcome = %+v", o)
	}
	metrics := pw.do(t, request{path: "/metrics"}).Body.String()
	for _, want := range []string{
		`toolq_redrive_outcome_bounced_back_messages{queue="web-search-dlq",region="us-east-1"} 1`,
		`toolq_redrive_outcome_remembered_messages{queue="web-search-dlq",region="us-east-1"} 3`,
		`toolq_redrive_outcome_bounced_back_by_tool{queue="web-search-dlq",region="us-east-1",tool="<script>alert('tool')</script>"} 1`,
		`toolq_redrive_outcome_settled{queue="web-search-dlq",region="us-east-1"} 0`,
		`toolq_redrive_outcome_checked_timestamp_seconds{queue="web-search-dlq",region="us-east-1"}`,
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
