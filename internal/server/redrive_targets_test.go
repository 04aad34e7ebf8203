package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/store"
)

// TestRedriveDestinations: the panel offers the DLQ's own sources (and queues its name carries),
// the rest only behind "Other queue…", whose type the action checks.
//
// Never offered: a queue of another account (a move task moves messages within one; the action
// refuses it) and a dead-letter queue (its name may carry the DLQ's: web-search-v2-dlq), which
// only typed reach the action.
func TestRedriveDestinations(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	pw.CreateQueue(t, "web-search-v2-dlq", "", nil)
	pw.CreateQueue(t, "web-search-v2", "web-search-v2-dlq", nil)
	pw.Watch(t, "web-search-v2-dlq", "web-search-v2")
	now := pw.Now()
	if _, err := pw.Store.UpsertQueue(t.Context(), store.Queue{Region: "us-east-1", Name: "web-search-prod", AccountID: "111111111111",
		ARN: "arn:aws:sqs:us-east-1:111111111111:web-search-prod", URL: "https://sqs/111111111111/web-search-prod", FirstSeen: now, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	var options []string
	doc.Find("#redrive-destination option").Each(func(_ int, s *goquery.Selection) { options = append(options, s.AttrOr("value", "")) })
	if want := []string{"", "web-search", "web-search-v2", "other…"}; !slices.Equal(options, want) {
		t.Errorf("destinations = %q, want %q: the source, the queue its name carries, then other queues behind Other queue…", options, want)
	}
	var others []string
	doc.Find("#redrive-others option").Each(func(_ int, s *goquery.Selection) { others = append(others, s.AttrOr("value", "")) })
	if !slices.Contains(others, "notifications") || slices.Contains(others, "tool-calls.fifo") || slices.Contains(others, "web-search") {
		t.Errorf("other queues = %q: want the standard queues that are not listed above", others)
	}
	for _, never := range []string{"web-search-v2-dlq", "web-search-prod", "tool-calls-dlq.fifo"} {
		if slices.Contains(options, never) || slices.Contains(others, never) {
			t.Errorf("%s offered (destinations %q, others %q): a dead-letter queue or another account's queue", never, options, others)
		}
	}

	cookie, token := pw.csrf(t)
	post := func(other string, status int) *goquery.Document {
		doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
			form: url.Values{"_csrf": {token}, "destination": {"other…"}, "destination_other": {other}}}, status)
		return doc
	}
	confirm := post("notifications", http.StatusOK).Find(".confirm").Text()
	if !strings.Contains(confirm, "notifications") {
		t.Errorf("the confirmation of a redrive to another queue does not name it: %q", confirm)
	}
	// Typed, a dead-letter queue is still a destination the operator may choose.
	if confirm := post("web-search-v2-dlq", http.StatusOK).Find(".confirm").Text(); !strings.Contains(confirm, "web-search-v2-dlq") {
		t.Errorf("the confirmation of a redrive to a typed dead-letter queue does not name it: %q", confirm)
	}
	if doc := post("", http.StatusUnprocessableEntity); doc.Find("#redrive-panel .error").Length() == 0 {
		t.Error("Other queue… with no queue named: no error in the panel")
	}
}

// TestFailedRedriveSaysWhatToDo: a redrive that SQS failed (here with the reason it gives when
// messages were sent to the DLQ directly) shows its reason and what to do, atop the panel and
// in its row.
func TestFailedRedriveSaysWhatToDo(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := t.Context()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.Store.UpsertMoveTask(ctx, store.MoveTask{QueueID: dlq.ID, TaskHandle: "h-1", Status: store.MoveTaskFailed,
		SourceARN: pw.ARN("web-search-dlq"), Moved: 0, ToMove: 3, FailureReason: "CouldNotDetermineMessageSource",
		StartedAt: pw.Now().Add(-time.Minute), UpdatedAt: pw.Now()}); err != nil {
		t.Fatal(err)
	}
	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	top := strings.Join(strings.Fields(doc.Find("#redrive-panel .redrive-failed").Text()), " ")
	row := strings.Join(strings.Fields(doc.Find("#redrive-panel table.history tbody tr td.failure").First().Text()), " ")
	for where, text := range map[string]string{"the panel": top, "the task's row": row} {
		if !strings.Contains(text, "CouldNotDetermineMessageSource") || !strings.Contains(text, "source queue chosen as its destination") {
			t.Errorf("%s says %q; want the reason and what to do about it", where, text)
		}
	}
	var api struct {
		Redrives []struct {
			FailureAdvice string `json:"failureAdvice"`
		} `json:"redrives"`
	}
	rec := pw.do(t, request{path: "/api/v1/queues/web-search-dlq/redrives"})
	if err := json.Unmarshal(rec.Body.Bytes(), &api); err != nil || len(api.Redrives) != 1 || api.Redrives[0].FailureAdvice == "" {
		t.Errorf("API redrives: %v %s; want the failed task with its advice", err, rec.Body)
	}
}
