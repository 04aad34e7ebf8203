package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/auth"
)

func TestOpenAPIMatchesRoutes(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeNone})
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi = %q", doc.OpenAPI)
	}
	var documented []string
	for p, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+p)
		}
	}
	var routed []string
	for _, r := range h.srv.echo.Routes() {
		if !strings.HasPrefix(r.Path, "/api/v1/") || (r.Method != http.MethodGet && r.Method != http.MethodPost && r.Method != http.MethodPut && r.Method != http.MethodDelete && r.Method != http.MethodPatch) {
			continue
		}
		// echo's :param is OpenAPI's {param}.
		parts := strings.Split(r.Path, "/")
		for i, p := range parts {
			if strings.HasPrefix(p, ":") {
				parts[i] = "{" + p[1:] + "}"
			}
		}
		routed = append(routed, r.Method+" "+strings.Join(parts, "/"))
	}
	slices.Sort(documented)
	slices.Sort(routed)
	if !slices.Equal(documented, routed) {
		t.Errorf("openapi.json and the routes differ:\ndocumented %v\nrouted     %v", documented, routed)
	}
	rec := h.do(t, apiRequest{target: "/api/v1/openapi.json"})
	if rec.Code != 200 || rec.Body.String() != string(openAPIDocument) {
		t.Errorf("GET openapi.json: %d", rec.Code)
	}
}

// TestOpenAPIDescribesResponses asks for every operation of the document in the states that
// change its answer (a running redrive, a cancelled one, refused rates in the audit log, a queue
// that is not a dead-letter queue); the harness checks every answer against the document
// (checkContract), so a field, a status or a value added without the document fails here. Each
// documented operation must be asked for with a success at least once.
func TestOpenAPIDescribesResponses(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	tests := []struct {
		method, target, body string
		status               int
	}{
		{"GET", "/api/v1/openapi.json", "", 200},
		{"GET", "/api/v1/queues", "", 200},
		{"GET", "/api/v1/queues?health=warning,critical&dlq=true", "", 200},
		{"GET", "/api/v1/queues/orders-dlq", "", 200},
		{"GET", "/api/v1/queues/calls.fifo", "", 200},
		{"GET", "/api/v1/queues/orders/metrics?name=NumberOfMessagesSent", "", 200},
		{"GET", "/api/v1/queues/calls.fifo/groups", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/messages?limit=1", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/messages?groupBy=mcpServer", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/messages/m-1", "", 200},
		{"GET", "/api/v1/advice", "", 200},
		{"GET", "/api/v1/summary", "", 200},
		{"GET", "/api/v1/summary?all=true", "", 200},
		{"GET", "/api/v1/summary?format=text", "", 200},
		{"GET", "/api/v1/status", "", 200},
		{"GET", "/api/v1/queues/nope", "", 404},
		{"GET", "/api/v1/queues/a%2Fb", "", 400},
		{"POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":"fast"}`, 400},
		{"POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":2.5}`, 400},
		{"POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":1}`, 202},
		{"POST", "/api/v1/queues/orders-dlq/redrives", ``, 409},
		{"GET", "/api/v1/queues/orders-dlq/redrives", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/redrives/1", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/redrives/99", "", 404},
		{"GET", "/api/v1/queues/orders-dlq/redrives/x", "", 400},
		{"GET", "/api/v1/queues/orders-dlq", "", 200}, // now with a redrive
		{"GET", "/api/v1/summary", "", 200},           // now with a running redrive
		{"POST", "/api/v1/queues/orders-dlq/redrives/cancel", ``, 200},
		{"POST", "/api/v1/queues/orders-dlq/redrives/cancel", ``, 409},
		{"POST", "/api/v1/queues/orders/redrives", ``, 422},
		{"POST", "/api/v1/queues/orders/redrives/cancel", ``, 422},
		{"POST", "/api/v1/queues/orders-dlq/redrives", `{"Destination":"x"}`, 400},
		{"GET", "/api/v1/audit", "", 200}, // with the refused rates, as given
		{"GET", "/api/v1/audit?limit=1", "", 200},
		{"POST", "/api/v1/embed-links", `{"path":"/?embed=1"}`, 201},
		{"POST", "/api/v1/embed-links", `{"path":"/audit?embed=1"}`, 400},
		{"GET", "/api/v1/notifications", "", 200},
		{"POST", "/api/v1/notifications/test", `{"target":"nope"}`, 404},
		{"GET", "/api/v1/nope", "", 404},
		{"DELETE", "/api/v1/queues", "", 405},
	}
	succeeded := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target+" "+itoa(int64(tt.status)), func(t *testing.T) {
			rec := h.do(t, apiRequest{method: tt.method, target: tt.target, body: tt.body, header: jsonPost(h.operator)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %.300s", rec.Code, tt.status, rec.Body)
			}
			if rec.Code < 300 {
				succeeded[tt.method+" "+strings.Split(tt.target, "?")[0]] = true
			}
		})
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	// Asked elsewhere, through the same checks: the event stream, which never ends
	// (TestEventStreamResumes reads it through the checked client), and a test notification,
	// which needs a target (TestStatusPageNotifications).
	// The archive's operations need a discard that ran (TestArchiveThroughTheAPI).
	elsewhere := []string{"GET /api/v1/events", "POST /api/v1/notifications/test",
		"POST /api/v1/queues/{queue}/discards", "GET /api/v1/queues/{queue}/archive", "GET /api/v1/archive",
		"GET /api/v1/queues/{queue}/archive/{messageId}", "POST /api/v1/queues/{queue}/archive/restores"}
	concrete := strings.NewReplacer("{queue}", "orders-dlq", "{messageId}", "m-1", "{redriveId}", "1")
	for path, ops := range doc.Paths {
		for method := range ops {
			op := strings.ToUpper(method) + " " + concrete.Replace(path)
			if !succeeded[op] && !slices.Contains(elsewhere, strings.ToUpper(method)+" "+path) && !succeeded[strings.Replace(op, "orders-dlq", "orders", 1)] &&
				!succeeded[strings.Replace(op, "orders-dlq", "calls.fifo", 1)] {
				t.Errorf("%s is documented but no request above succeeds at it", op)
			}
		}
	}
}
