package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/views"
)

// runJobs runs the harness's jobs with an engine until none runs.
func (h *apiHarness) runJobs(t *testing.T) {
	t.Helper()
	coll, err := collector.New(collector.Options{Regions: []collector.Region{{Name: actionstest.Region, SQS: h.w.SQS}}, Store: h.w.Store})
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(engine.Options{Clients: map[string]engine.SQSAPI{actionstest.Region: h.w.SQS}, Store: h.w.Store,
		Read: coll.ReadMessage, Poll: 20 * time.Millisecond, Now: h.w.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		jobs, err := h.w.Store.RunnableSelectionJobs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) == 0 {
			return
		}
	}
	t.Fatal("the jobs did not end")
}

// TestArchiveThroughTheAPI: a discard takes the selection's call out of the DLQ into the
// archive, which lists it whole; a restore sends it back to its source and marks it restored;
// what matches nothing, or a viewer, is refused.
func TestArchiveThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	post := func(target, body, token string) *httptest.ResponseRecorder {
		return h.do(t, apiRequest{method: http.MethodPost, target: target, body: body, header: jsonPost(token)})
	}
	if rec := post("/api/v1/queues/orders-dlq/discards", `{"selection":{"q":"tc_001"}}`, h.viewer); rec.Code != http.StatusForbidden {
		t.Errorf("a viewer's discard: %d; want 403", rec.Code)
	}
	if rec := post("/api/v1/queues/orders-dlq/discards", `{}`, h.operator); rec.Code != http.StatusUnprocessableEntity || errorCode(t, rec.Body.Bytes()) != "empty_selection" {
		t.Errorf("a discard without a selection: %d %s", rec.Code, rec.Body)
	}
	rec := post("/api/v1/queues/orders-dlq/discards", `{"selection":{"q":"tc_001"}}`, h.operator)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"kind":"discard"`) {
		t.Fatalf("discard: %d %s", rec.Code, rec.Body)
	}
	h.runJobs(t)
	if n := h.w.Count(t, "orders-dlq"); n != 4 {
		t.Errorf("the DLQ holds %d; want the 4 others", n)
	}

	var page views.ArchivePage
	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/queues/orders-dlq/archive", header: bearer(h.viewer)})
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Messages) != 1 || page.Messages[0].ToolCallID != "tc_001" || page.Stats.Messages != 1 {
		t.Fatalf("archive: %d %s", rec.Code, rec.Body)
	}
	id := page.Messages[0].MessageID
	if rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/queues/orders-dlq/archive/" + url.PathEscape(id), header: bearer(h.viewer)}); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"discardedBy":"ops-bot"`) {
		t.Errorf("one archived message: %d %s", rec.Code, rec.Body)
	}
	if rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/archive?q=TC_001", header: bearer(h.viewer)}); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), id) {
		t.Errorf("the whole archive: %d %s", rec.Code, rec.Body)
	}

	if rec = post("/api/v1/queues/orders-dlq/archive/restores", `{"selection":{"tools":["nope"]}}`, h.operator); rec.Code != http.StatusUnprocessableEntity || errorCode(t, rec.Body.Bytes()) != "selection_matches_nothing" {
		t.Errorf("a restore that matches nothing: %d %s", rec.Code, rec.Body)
	}
	rec = post("/api/v1/queues/orders-dlq/archive/restores", `{"selection":{"messageIds":["`+id+`"]}}`, h.operator)
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"kind":"restore"`) {
		t.Fatalf("restore: %d %s", rec.Code, rec.Body)
	}
	h.runJobs(t)
	if n := h.w.Count(t, "orders"); n != 1 {
		t.Errorf("the source holds %d; want the restored call", n)
	}
	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/queues/orders-dlq/archive/" + url.PathEscape(id), header: bearer(h.viewer)})
	if !strings.Contains(rec.Body.String(), `"restoredTo":"`+h.w.ARN("orders")+`"`) {
		t.Errorf("not marked restored: %s", rec.Body)
	}
}
