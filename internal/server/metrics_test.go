package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	// One refused action, so the actions counter has a series.
	h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives/cancel", header: jsonPost(h.operator)})
	rec := h.do(t, apiRequest{target: "/metrics", header: bearer(h.viewer)})
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d", rec.Code)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`toolq_queue_visible_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_dlq_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_queue_inflight_messages{account="default",queue="orders",region="us-east-1"} 0`,
		`toolq_queue_health{account="default",queue="orders-dlq",region="us-east-1"}`,
		`toolq_queue_metrics_error 0`,
		`toolq_websocket_clients 0`,
		`toolq_actions_total{action="redrive.cancel",result="refused"} 1`,
		`toolq_http_requests_total{code="409",method="POST",route="/api/v1/queues/:queue/redrives/cancel"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `toolq_dlq_messages{account="default",queue="orders",`) {
		t.Error("a source queue is exported as a DLQ")
	}
}

// TestWebsocketClientsGauge: the gauge counts the real websockets of the live pages, and counts
// them down when they close.
func TestWebsocketClientsGauge(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	gauge := func() string {
		rec := httptest.NewRecorder()
		pw.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		for line := range strings.SplitSeq(rec.Body.String(), "\n") {
			if strings.HasPrefix(line, "toolq_websocket_clients ") {
				return line
			}
		}
		return "no toolq_websocket_clients line"
	}
	waitGauge := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for gauge() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%s, want %s", gauge(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	a, _, err := dial(t, srv, "topic=overview", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := dial(t, srv, "topic=audit", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	nextWith(t, a, "#totals") // registered and served
	waitGauge("toolq_websocket_clients 2")
	a.Close()
	b.Close()
	waitGauge("toolq_websocket_clients 0")
}

// TestMetricsLabelsAreBounded: the method and the path are the client's text; were they labels
// as sent, any client could add series (memory kept for the life of the process) at will.
func TestMetricsLabelsAreBounded(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	tests := []struct {
		name, method, target string
		want                 string // a series that must exist after the request
		leak                 string // text of the request that no label may carry
	}{
		{"made-up method, known route", "FOO1", "/api/v1/queues", `method="other",route="/api/v1/queues"`, "FOO1"},
		{"another made-up method", "FOO2", "/api/v1/queues", `method="other",route="/api/v1/queues"`, "FOO2"},
		{"made-up method, unknown path", "BAR", "/x/y/z", `method="other",route="unmatched"`, "BAR"},
		{"unknown path", http.MethodGet, "/nope/abc123", `method="GET",route="unmatched"`, "abc123"},
		{"known method", http.MethodDelete, "/api/v1/queues", `method="DELETE",route="/api/v1/queues"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.do(t, apiRequest{method: tt.method, target: tt.target})
			body := h.do(t, apiRequest{target: "/metrics", header: bearer(h.viewer)}).Body.String()
			if !strings.Contains(body, tt.want) {
				t.Errorf("/metrics lacks a series with %s", tt.want)
			}
			if tt.leak != "" && strings.Contains(body, tt.leak) {
				t.Errorf("/metrics has a label value the client chose: %s", tt.leak)
			}
		})
	}
}
