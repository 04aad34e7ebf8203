package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/views"
)

// TestSelectiveRedriveThroughTheAPI: a start with a selection is a redrive of kind selection in
// the same list, read and cancelled as a move task is, and no move task starts beside it.
func TestSelectiveRedriveThroughTheAPI(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives",
		body: `{"selection":{"tools":["create_document"],"dimensions":{"mcpServer":["docs-legacy"]}}}`, header: jsonPost(h.operator)})
	if rec.Code != http.StatusAccepted {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	var started views.Redrive
	if err := json.Unmarshal(rec.Body.Bytes(), &started); err != nil {
		t.Fatal(err)
	}
	if started.Kind != "selection" || started.Status != "RUNNING" {
		t.Errorf("started %+v; want a RUNNING redrive of kind selection", started)
	}

	// A move task is refused while the job runs, and so is a second selection.
	for _, body := range []string{``, `{"selection":{"tools":["x"]}}`} {
		rec = h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: body, header: jsonPost(h.operator)})
		if rec.Code != http.StatusConflict || errorCode(t, rec.Body.Bytes()) != "task_running" {
			t.Errorf("start %q beside the job: %d %s; want 409 task_running", body, rec.Code, rec.Body)
		}
	}

	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/queues/orders-dlq/redrives", header: bearer(h.viewer)})
	var list redriveList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Redrives) != 1 {
		t.Fatalf("list: %s, %v", rec.Body, err)
	}
	got := list.Redrives[0]
	if got.Selection == nil || strings.Join(got.Selection.Tools, ",") != "create_document" || got.Selection.Dimensions["mcpServer"][0] != "docs-legacy" || got.Selection.Actor != "ops-bot" {
		t.Errorf("listed %+v; want the job with its selection and who started it", got.Selection)
	}

	rec = h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives/cancel", header: jsonPost(h.operator)})
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"CANCELLING"`) {
		t.Errorf("cancel: %d %s; want 200 CANCELLING", rec.Code, rec.Body)
	}
	// The audit log has the start with its selection, and the cancel.
	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/audit", header: bearer(h.operator)})
	if !strings.Contains(rec.Body.String(), `"selection":{"dimensions":{"mcpServer":["docs-legacy"]},"tools":["create_document"]}`) {
		t.Errorf("audit log without the selection: %s", rec.Body)
	}
}
