package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/views"
)

// TestSelectionRefusedBesideAMoveTask is TestSelectiveRedriveThroughTheAPI the other way round:
// while a move task of the whole DLQ runs in SQS, a selective redrive of the same DLQ is refused
// with 409 task_running, the refusal is audited, and no job is created beside the task.
func TestSelectionRefusedBesideAMoveTask(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: `{}`, header: jsonPost(h.operator)})
	if rec.Code != http.StatusAccepted {
		t.Fatalf("start the move task: %d %s", rec.Code, rec.Body)
	}
	var started views.Redrive
	if err := json.Unmarshal(rec.Body.Bytes(), &started); err != nil || started.Kind != "moveTask" || !started.Running {
		t.Fatalf("started %+v, %v; want a running move task", started, err)
	}

	rec = h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives",
		body: `{"selection":{"tools":["create_document"]}}`, header: jsonPost(h.operator)})
	if rec.Code != http.StatusConflict || errorCode(t, rec.Body.Bytes()) != "task_running" {
		t.Errorf("a selection beside the move task: %d %s; want 409 task_running", rec.Code, rec.Body)
	}

	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/queues/orders-dlq/redrives", header: bearer(h.viewer)})
	var list redriveList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Redrives) != 1 || list.Redrives[0].Kind != "moveTask" {
		t.Errorf("redrives %s, %v; want the move task alone", rec.Body, err)
	}
	rec = h.do(t, apiRequest{method: http.MethodGet, target: "/api/v1/audit", header: bearer(h.operator)})
	var audit struct {
		Entries []views.AuditEntry `json:"entries"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &audit); err != nil {
		t.Fatal(err)
	}
	refused := false
	for _, e := range audit.Entries {
		refused = refused || e.Result == "refused" && e.Code == "task_running" && e.Params["selection"] != nil
	}
	if !refused {
		t.Errorf("the audit log has no refusal of the selection, task_running: %s", strings.TrimSpace(rec.Body.String()))
	}
}
