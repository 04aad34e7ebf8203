package server

import (
	"net/http"
	"strings"
	"testing"
)

func TestMetricsEndpoint(t *testing.T) {
	h := newAPIHarness(t, harnessConfig{})
	// One refused action, so the actions counter has a series.
	h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives/cancel", header: jsonPost(h.operator)})
	rec := h.do(t, apiRequest{target: "/metrics", header: bearer(h.viewer)})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`toolq_queue_visible_messages{queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_dlq_messages{queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_queue_inflight_messages{queue="orders",region="us-east-1"} 0`,
		`toolq_queue_health{queue="orders-dlq",region="us-east-1"}`,
		`toolq_queue_metrics_error 0`,
		`toolq_websocket_clients 3`,
		`toolq_actions_total{action="redrive.cancel",result="refused"} 1`,
		`toolq_http_requests_total{code="409",method="POST",route="/api/v1/queues/:queue/redrives/cancel"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `toolq_dlq_messages{queue="orders",`) {
		t.Error("a source queue is exported as a DLQ")
	}
}
