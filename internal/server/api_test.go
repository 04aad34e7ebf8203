package server

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
)

// errorCode decodes the error shape and returns its code, failing the test on any other shape.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("body %.200q is not the error shape", body)
	}
	return e.Error.Code
}

// checkShape walks a JSON document: keys are camelCase (AWS's own names inside the attributes
// and metrics maps aside), listed fields are arrays (never null) and times are RFC 3339.
func checkShape(t *testing.T, path string, v any, arrays map[string]bool) {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := path + "." + k
			if !strings.HasSuffix(path, ".attributes") && !strings.HasSuffix(path, ".metrics") && !strings.HasSuffix(path, ".params") {
				if strings.ContainsAny(k, "_- ") || !unicode.IsLower(rune(k[0])) {
					t.Errorf("%s: key %q is not camelCase", path, k)
				}
			}
			if arrays[k] && !strings.HasSuffix(p, ".totals.queues") { // totals count the queues
				if _, ok := val.([]any); !ok {
					t.Errorf("%s is %T, want an array", p, val)
				}
			}
			if s, ok := val.(string); ok && (strings.HasSuffix(k, "At") || k == "since" || k == "until") && s != "" {
				if _, err := time.Parse(time.RFC3339, s); err != nil {
					t.Errorf("%s = %q is not RFC 3339", p, s)
				}
			}
			checkShape(t, p, val, arrays)
		}
	case []any:
		for _, e := range x {
			checkShape(t, path+"[]", e, arrays)
		}
	}
}

func TestAPIShapes(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	arrays := map[string]bool{"queues": true, "reasons": true, "sourceQueues": true, "errors": true, "points": true,
		"groups": true, "messages": true, "tools": true, "attributes": false, "redrives": true, "entries": true,
		"unhealthy": true, "deadLetterQueues": true, "runningRedrives": true}
	arn := url.PathEscape(h.w.ARN("orders-dlq"))
	tests := []struct {
		target string
		keys   []string // top-level keys that must be present
	}{
		{"/api/v1/queues", []string{"queues"}},
		{"/api/v1/queues?health=warning,critical", []string{"queues"}},
		{"/api/v1/queues?dlq=true", []string{"queues"}},
		{"/api/v1/queues/orders-dlq", []string{"name", "arn", "attributes", "metrics", "health", "freshness", "errors"}},
		{"/api/v1/queues/" + arn, []string{"name"}},
		{"/api/v1/queues/" + strings.ReplaceAll(arn, ":", "%3A"), []string{"name"}},
		{"/api/v1/queues/orders-dlq/metrics?name=ApproximateNumberOfMessagesVisible", []string{"queue", "name", "since", "until", "points"}},
		{"/api/v1/queues/orders/metrics?name=NumberOfMessagesSent&since=2026-03-01T10:00:00Z&until=1772366400", []string{"points"}},
		{"/api/v1/queues/calls.fifo/groups", []string{"groups"}},
		{"/api/v1/queues/orders-dlq/messages", []string{"messages", "nextCursor", "tools"}},
		{"/api/v1/queues/orders-dlq/messages?toolName=create_document&limit=1", []string{"messages"}},
		{"/api/v1/queues/orders-dlq/messages/m-1", []string{"messageId", "body", "attributes"}},
		{"/api/v1/queues/orders-dlq/redrives", []string{"redrives"}},
		{"/api/v1/audit", []string{"entries", "nextBefore"}},
		{"/api/v1/summary", []string{"generatedAt", "totals", "problems", "deadLetterQueues", "runningRedrives"}},
		{"/api/v1/summary?all=true", []string{"generatedAt", "totals", "unhealthy", "queues", "deadLetterQueues", "runningRedrives"}},
		{"/api/v1/openapi.json", []string{"openapi", "paths"}},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			rec := h.do(t, apiRequest{target: tt.target, header: bearer(h.viewer)})
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type = %q", ct)
			}
			var doc map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			for _, k := range tt.keys {
				if _, ok := doc[k]; !ok {
					t.Errorf("key %q missing from %.300s", k, rec.Body)
				}
			}
			if !strings.HasSuffix(tt.target, "openapi.json") {
				checkShape(t, "$", doc, arrays)
			}
		})
	}
	t.Run("message body is data, not markup", func(t *testing.T) {
		rec := h.do(t, apiRequest{target: "/api/v1/queues/orders-dlq/messages/m-1", header: bearer(h.viewer)})
		var m struct{ Body string }
		json.Unmarshal(rec.Body.Bytes(), &m)
		if !strings.Contains(m.Body, "<script>alert(1)</script>") {
			t.Errorf("body = %q; want the exact text", m.Body)
		}
		if strings.Contains(rec.Body.String(), "<script>") {
			t.Error("raw <script> in a JSON response: it must be escaped (\\u003c)")
		}
	})
	t.Run("summary lists the unhealthy queues when asked", func(t *testing.T) {
		var brief, all struct {
			Unhealthy []json.RawMessage `json:"unhealthy"`
			Queues    []json.RawMessage `json:"queues"`
			Totals    struct{ Queues int }
		}
		json.Unmarshal(h.do(t, apiRequest{target: "/api/v1/summary", header: bearer(h.viewer)}).Body.Bytes(), &brief)
		json.Unmarshal(h.do(t, apiRequest{target: "/api/v1/summary?all=true", header: bearer(h.viewer)}).Body.Bytes(), &all)
		if brief.Unhealthy != nil || brief.Queues != nil || brief.Totals.Queues != 4 {
			t.Errorf("the summary lists %d unhealthy and %d queues, counts %d; want none listed, 4 counted", len(brief.Unhealthy), len(brief.Queues), brief.Totals.Queues)
		}
		if len(all.Unhealthy) == 0 || len(all.Queues) != 4 {
			t.Errorf("?all=true lists %d unhealthy and %d queues; want some, and all 4", len(all.Unhealthy), len(all.Queues))
		}
		if rec := h.do(t, apiRequest{target: "/api/v1/summary?all=maybe", header: bearer(h.viewer)}); rec.Code != http.StatusBadRequest {
			t.Errorf("?all=maybe: %d, want 400", rec.Code)
		}
	})
	t.Run("summary as text", func(t *testing.T) {
		rec := h.do(t, apiRequest{target: "/api/v1/summary", header: map[string]string{"Authorization": "Bearer " + h.viewer, "Accept": "text/plain"}})
		if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") || rec.Body.Len() == 0 {
			t.Errorf("status %d, type %q, body %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
		}
	})
	t.Run("audit pages", func(t *testing.T) {
		for range 3 {
			h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders/redrives", header: jsonPost(h.operator)})
		}
		rec := h.do(t, apiRequest{target: "/api/v1/audit?limit=2", header: bearer(h.viewer)})
		var p struct {
			Entries    []struct{ ID int64 }
			NextBefore *int64
		}
		json.Unmarshal(rec.Body.Bytes(), &p)
		if len(p.Entries) != 2 || p.NextBefore == nil {
			t.Fatalf("page 1 = %s", rec.Body)
		}
		rec = h.do(t, apiRequest{target: "/api/v1/audit?limit=2&before=" + itoa(*p.NextBefore), header: bearer(h.viewer)})
		var p2 struct{ Entries []struct{ ID int64 } }
		json.Unmarshal(rec.Body.Bytes(), &p2)
		if len(p2.Entries) != 1 || p2.Entries[0].ID >= *p.NextBefore {
			t.Errorf("page 2 = %s", rec.Body)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestAPIBadInput(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	huge := `{"destination":"` + strings.Repeat("a", 70<<10) + `"}`
	tests := []struct {
		name   string
		method string
		target string
		body   string
		status int
		code   string
	}{
		{"path traversal", "GET", "/api/v1/queues/..%2F..%2Fetc%2Fpasswd", "", 400, "invalid_queue"},
		{"encoded slash", "GET", "/api/v1/queues/orders%2Fx", "", 400, "invalid_queue"},
		{"dot dot", "GET", "/api/v1/queues/..", "", 400, "invalid_queue"},
		{"escaped percent", "GET", "/api/v1/queues/%25zz", "", 400, "invalid_queue"},
		{"NUL", "GET", "/api/v1/queues/a%00b", "", 400, "invalid_queue"},
		{"too long", "GET", "/api/v1/queues/" + strings.Repeat("q", 81), "", 400, "invalid_queue"},
		{"script", "GET", "/api/v1/queues/%3Cscript%3E", "", 400, "invalid_queue"},
		{"unknown name", "GET", "/api/v1/queues/nope", "", 404, "queue_not_found"},
		{"unknown ARN", "GET", "/api/v1/queues/" + url.PathEscape("arn:aws:sqs:us-east-1:000000000000:nope"), "", 404, "queue_not_found"},
		{"not an SQS ARN", "GET", "/api/v1/queues/" + url.PathEscape("arn:aws:s3:::bucket"), "", 400, "invalid_queue"},
		{"unknown message", "GET", "/api/v1/queues/orders-dlq/messages/nope", "", 404, "message_not_found"},
		{"message of unknown queue", "GET", "/api/v1/queues/nope/messages/m-1", "", 404, "queue_not_found"},
		{"unknown route", "GET", "/api/v1/nope", "", 404, "not_found"},
		{"wrong method", "DELETE", "/api/v1/queues", "", 405, "method_not_allowed"},
		{"bad since", "GET", "/api/v1/queues/orders/metrics?since=yesterday", "", 400, "invalid_parameter"},
		{"since after until", "GET", "/api/v1/queues/orders/metrics?since=2026-03-01T12:00:00Z&until=2026-03-01T11:00:00Z", "", 400, "invalid_parameter"},
		{"span too long", "GET", "/api/v1/queues/orders/metrics?since=2026-01-01T00:00:00Z&until=2026-03-01T00:00:00Z", "", 400, "span_too_long"},
		{"unknown metric", "GET", "/api/v1/queues/orders/metrics?name=CPUUtilization", "", 400, "unknown_metric"},
		{"bad cursor", "GET", "/api/v1/queues/orders-dlq/messages?cursor=garbage", "", 400, "bad_cursor"},
		{"limit zero", "GET", "/api/v1/queues/orders-dlq/messages?limit=0", "", 400, "invalid_parameter"},
		{"limit huge", "GET", "/api/v1/queues/orders-dlq/messages?limit=100000", "", 400, "invalid_parameter"},
		{"bad health", "GET", "/api/v1/queues?health=purple", "", 400, "invalid_parameter"},
		{"bad dlq flag", "GET", "/api/v1/queues?dlq=maybe", "", 400, "invalid_parameter"},
		{"audit before junk", "GET", "/api/v1/audit?before=-1", "", 400, "invalid_parameter"},
		{"malformed JSON", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":`, 400, "invalid_json"},
		{"not an object", "POST", "/api/v1/queues/orders-dlq/redrives", `[1,2]`, 400, "invalid_json"},
		{"rate not a number", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":"fast"}`, 400, "invalid_rate"},
		{"unknown field", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":"orders","force":true}`, 400, "unknown_field"},
		{"two objects", "POST", "/api/v1/queues/orders-dlq/redrives", `{}{}`, 400, "invalid_json"},
		{"huge body", "POST", "/api/v1/queues/orders-dlq/redrives", huge, 413, "body_too_large"},
		{"rate out of range", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":501}`, 400, "invalid_rate"},
		{"rate zero", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":0}`, 400, "invalid_rate"},
		{"rate negative", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":-5}`, 400, "invalid_rate"},
		{"rate fractional", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":2.5}`, 400, "invalid_rate"},
		{"rate huge", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":1e30}`, 400, "invalid_rate"},
		{"destination of another type", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":"calls.fifo"}`, 422, "destination_type_mismatch"},
		{"destination unknown", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":"nope"}`, 422, "destination_not_found"},
		{"destination junk", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":"../x"}`, 422, "destination_not_found"},
		{"redrive of an unknown queue", "POST", "/api/v1/queues/nope/redrives", ``, 404, "queue_not_found"},
		{"redrive of an unknown ARN", "POST", "/api/v1/queues/" + url.PathEscape("arn:aws:sqs:us-east-1:000000000000:nope") + "/redrives", ``, 404, "queue_not_found"},
		{"unicode queue", "GET", "/api/v1/queues/" + url.PathEscape("キュー"), "", 400, "invalid_queue"},
		{"very long queue", "GET", "/api/v1/queues/" + strings.Repeat("q", 5000), "", 400, "invalid_queue"},
		{"negative limit", "GET", "/api/v1/queues/orders-dlq/messages?limit=-1", "", 400, "invalid_parameter"},
		{"garbage limit", "GET", "/api/v1/queues/orders-dlq/messages?limit=ten", "", 400, "invalid_parameter"},
		{"garbage until", "GET", "/api/v1/queues/orders/metrics?until=%00", "", 400, "invalid_parameter"},
		{"huge unix since", "GET", "/api/v1/queues/orders/metrics?since=99999999999999999999", "", 400, "invalid_parameter"},
		{"until past the year 9999", "GET", "/api/v1/queues/orders/metrics?until=253402300800", "", 400, "invalid_parameter"},
		{"since past the year 9999", "GET", "/api/v1/queues/orders/metrics?since=253402300800", "", 400, "invalid_parameter"},
		{"unix time before 1970", "GET", "/api/v1/queues/orders/metrics?until=-1", "", 400, "invalid_parameter"},
		{"RFC 3339 before 1970", "GET", "/api/v1/queues/orders/metrics?since=0001-01-01T00:00:00Z", "", 400, "invalid_parameter"},
		{"null body", "POST", "/api/v1/queues/orders-dlq/redrives", `null`, 400, "invalid_json"},
		{"null body with spaces", "POST", "/api/v1/queues/orders-dlq/redrives", " null \n", 400, "invalid_json"},
		{"string body", "POST", "/api/v1/queues/orders-dlq/redrives", `"x"`, 400, "invalid_json"},
		{"duplicate key", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":1,"maxMessagesPerSecond":500}`, 400, "invalid_json"},
		{"duplicate key of another case", "POST", "/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":1,"MaxMessagesPerSecond":500}`, 400, "unknown_field"},
		{"wrong-case key", "POST", "/api/v1/queues/orders-dlq/redrives", `{"Destination":"orders"}`, 400, "unknown_field"},
		{"wrong-case key, all capitals", "POST", "/api/v1/queues/orders-dlq/redrives", `{"MAXMESSAGESPERSECOND":5}`, 400, "unknown_field"},
		{"duplicate key in embed link", "POST", "/api/v1/embed-links", `{"path":"/?embed=1","path":"/queues/orders?embed=1"}`, 400, "invalid_json"},
		{"null embed link", "POST", "/api/v1/embed-links", `null`, 400, "invalid_json"},
		{"destination in an unwatched region", "POST", "/api/v1/queues/orders-dlq/redrives", `{"destination":"arn:aws:sqs:eu-west-1:000000000000:orders"}`, 422, "invalid_destination"},
		{"audit limit huge", "GET", "/api/v1/audit?limit=1000000", "", 400, "invalid_parameter"},
		{"not a DLQ", "POST", "/api/v1/queues/orders/redrives", ``, 422, "not_dead_letter_queue"},
		{"empty selection", "POST", "/api/v1/queues/orders-dlq/redrives", `{"selection":{}}`, 422, "empty_selection"},
		{"selection of empty values", "POST", "/api/v1/queues/orders-dlq/redrives", `{"selection":{"tools":[],"dimensions":{"mcpServer":[]}}}`, 422, "empty_selection"},
		{"selection by an unknown dimension", "POST", "/api/v1/queues/orders-dlq/redrives", `{"selection":{"dimensions":{"region":["x"]}}}`, 422, "unknown_dimension"},
		{"groups on a standard DLQ", "POST", "/api/v1/queues/orders-dlq/redrives", `{"selection":{"groups":["sess_1"]}}`, 422, "groups_on_standard_queue"},
		{"selection with an unknown field", "POST", "/api/v1/queues/orders-dlq/redrives", `{"selection":{"tool":["x"]}}`, 400, "unknown_field"},
		{"cancel with nothing running", "POST", "/api/v1/queues/orders-dlq/redrives/cancel", ``, 409, "no_task_running"},
		{"cancel with a body", "POST", "/api/v1/queues/orders-dlq/redrives/cancel", `{"x":1}`, 400, "unknown_field"},
		{"embed link elsewhere", "POST", "/api/v1/embed-links", `{"path":"https://evil.example/"}`, 400, "invalid_path"},
		{"embed link to the API", "POST", "/api/v1/embed-links", `{"path":"/api/v1/queues"}`, 400, "invalid_path"},
		{"embed link ttl", "POST", "/api/v1/embed-links", `{"path":"/?embed=1","ttlSeconds":99999999}`, 400, "invalid_ttl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, apiRequest{method: tt.method, target: tt.target, body: tt.body, header: jsonPost(h.operator)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if code := errorCode(t, rec.Body.Bytes()); code != tt.code {
				t.Errorf("code %q, want %q", code, tt.code)
			}
			if strings.Contains(rec.Body.String(), "sql") || strings.Contains(rec.Body.String(), "goroutine") {
				t.Errorf("internal text in %s", rec.Body)
			}
		})
	}
}

// TestAPITimeBounds: the edges of the times a parameter may name are answered, not failed.
func TestAPITimeBounds(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	for _, target := range []string{
		"/api/v1/queues/orders/metrics?until=253402300799",
		"/api/v1/queues/orders/metrics?until=9999-12-31T23:59:59Z",
		"/api/v1/queues/orders/metrics?since=0&until=3600",
		"/api/v1/queues/orders/metrics?since=1970-01-01T00:00:00Z&until=1970-01-01T02:00:00%2B01:00",
	} {
		t.Run(target, func(t *testing.T) {
			rec := h.do(t, apiRequest{target: target, header: jsonPost(h.operator)})
			if rec.Code != http.StatusOK {
				t.Errorf("status %d, want 200: %s", rec.Code, rec.Body)
			}
		})
	}
}

// TestAPIIdempotencyKey: a start sent again with its Idempotency-Key gets the first answer,
// 202 and the same task, and starts nothing; a new key is a new start (409 while one runs).
func TestAPIIdempotencyKey(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	var replayed string // the Idempotent-Replayed header of the last answer
	post := func(key string) (int, map[string]any) {
		hdr := jsonPost(h.operator)
		hdr["Idempotency-Key"] = key
		rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: `{"maxMessagesPerSecond":1}`, header: hdr})
		var doc map[string]any
		json.Unmarshal(rec.Body.Bytes(), &doc)
		replayed = rec.Header().Get("Idempotent-Replayed")
		return rec.Code, doc
	}
	code, first := post("3f0c6d1e-4c55-4a8e-9d0e-5f0f2b7a9c11")
	if code != http.StatusAccepted || replayed != "" {
		t.Fatalf("start: %d %v, Idempotent-Replayed %q", code, first, replayed)
	}
	h.w.Advance(time.Second)
	code, again := post("3f0c6d1e-4c55-4a8e-9d0e-5f0f2b7a9c11")
	if code != http.StatusAccepted || again["startedAt"] != first["startedAt"] || again["taskHandle"] != first["taskHandle"] {
		t.Errorf("repeat: %d %v; want 202 and the same task", code, again)
	}
	if replayed != "true" {
		t.Errorf("the repeat's Idempotent-Replayed = %q; want true", replayed)
	}
	if code, doc := post("another-key"); code != http.StatusConflict || doc["error"].(map[string]any)["code"] != "task_running" || replayed != "" {
		t.Errorf("a new key: %d %v, Idempotent-Replayed %q; want 409 task_running, not a replay", code, doc, replayed)
	}
	if code, doc := post("another-key"); code != http.StatusConflict || replayed != "true" {
		t.Errorf("the refusal repeated: %d %v, Idempotent-Replayed %q; want 409 again, marked a replay", code, doc, replayed)
	}
	if code, doc := post("bad key\u00e9"); code != http.StatusBadRequest || doc["error"].(map[string]any)["code"] != "invalid_idempotency_key" {
		t.Errorf("a bad key: %d %v; want 400 invalid_idempotency_key", code, doc)
	}
	out, err := h.w.SQS.ListMessageMoveTasks(t.Context(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(h.w.ARN("orders-dlq"))})
	if err != nil || len(out.Results) != 1 {
		t.Errorf("move tasks = %d, %v; want one", len(out.Results), err)
	}
}

// TestAPIRefusesActionsWithoutAudit: with the audit table gone, a start is 503 audit_unavailable
// and nothing moves.
func TestAPIRefusesActionsWithoutAudit(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	db, err := sql.Open("sqlite", "file:"+h.w.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TABLE audit_log"); err != nil {
		t.Fatal(err)
	}
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", header: jsonPost(h.operator)})
	if rec.Code != http.StatusServiceUnavailable || errorCode(t, rec.Body.Bytes()) != "audit_unavailable" {
		t.Fatalf("start without an audit table: %d %s; want 503 audit_unavailable", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "no such table") {
		t.Errorf("internal text in %s", rec.Body)
	}
	out, err := h.w.SQS.ListMessageMoveTasks(t.Context(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(h.w.ARN("orders-dlq"))})
	if err != nil || len(out.Results) != 0 {
		t.Errorf("move tasks = %d, %v; want none", len(out.Results), err)
	}
	if rec := h.do(t, apiRequest{target: "/readyz"}); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("readyz without an audit table: %d %s; want 503", rec.Code, rec.Body)
	}
}

func TestAPIRedriveFlow(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	post := func(target, body string) (int, map[string]any) {
		rec := h.do(t, apiRequest{method: http.MethodPost, target: target, body: body, header: jsonPost(h.operator)})
		var doc map[string]any
		json.Unmarshal(rec.Body.Bytes(), &doc)
		return rec.Code, doc
	}
	code, doc := post("/api/v1/queues/orders-dlq/redrives", `{"maxMessagesPerSecond":2}`)
	if code != http.StatusAccepted || doc["status"] != "RUNNING" || doc["toMove"] != float64(5) || doc["running"] != true {
		t.Fatalf("start: %d %v", code, doc)
	}
	if code, doc = post("/api/v1/queues/orders-dlq/redrives", ``); code != http.StatusConflict {
		t.Fatalf("second start: %d %v; want 409", code, doc)
	}
	h.w.Advance(time.Second)
	code, doc = post("/api/v1/queues/orders-dlq/redrives/cancel", ``)
	if code != http.StatusOK || doc["status"] != "CANCELLING" || doc["moved"] != float64(2) {
		t.Fatalf("cancel: %d %v", code, doc)
	}
	h.w.Advance(time.Second)
	if moved, left := h.w.Count(t, "orders"), h.w.Count(t, "orders-dlq"); moved != 2 || left != 3 {
		t.Errorf("moved %d, left %d; want 2 and 3", moved, left)
	}
	rec := h.do(t, apiRequest{target: "/api/v1/queues/orders-dlq/redrives", header: bearer(h.viewer)})
	var list struct{ Redrives []map[string]any }
	json.Unmarshal(rec.Body.Bytes(), &list)
	if len(list.Redrives) != 1 {
		t.Errorf("redrives = %s", rec.Body)
	}
	rec = h.do(t, apiRequest{target: "/api/v1/audit?queue=orders-dlq", header: bearer(h.viewer)})
	var audit struct {
		Entries []struct {
			ID                    int64
			Action, Result, Actor string
			IntentID              *int64
		}
	}
	json.Unmarshal(rec.Body.Bytes(), &audit)
	// Each action wrote its intent before it called AWS, and its outcome, naming the intent, after.
	want := []string{"redrive.cancel accepted", "redrive.cancel intent", "redrive.start refused", "redrive.start intent",
		"redrive.start accepted", "redrive.start intent"}
	if len(audit.Entries) != len(want) {
		t.Fatalf("audit = %s", rec.Body)
	}
	for i, e := range audit.Entries {
		if got := e.Action + " " + e.Result; got != want[i] || e.Actor != "ops-bot" {
			t.Errorf("audit[%d] = %s by %s; want %s by ops-bot", i, got, e.Actor, want[i])
		}
		if i%2 == 0 && (e.IntentID == nil || *e.IntentID != audit.Entries[i+1].ID) || i%2 == 1 && e.IntentID != nil {
			t.Errorf("audit[%d] names intent %v; want each outcome to name the intent below it", i, e.IntentID)
		}
	}
}

// TestEmbedLinkLifetimeByRole: a viewer's embed links live at most 24 hours, an operator's 30
// days; beyond is 400 invalid_ttl, saying the limit.
func TestEmbedLinkLifetimeByRole(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	tests := []struct {
		name   string
		token  string
		ttl    int64
		status int
	}{
		{"viewer, a day", h.viewer, 86400, http.StatusCreated},
		{"viewer, a day and a second", h.viewer, 86401, http.StatusBadRequest},
		{"viewer, 30 days", h.viewer, 2592000, http.StatusBadRequest},
		{"operator, 30 days", h.operator, 2592000, http.StatusCreated},
		{"operator, past 30 days", h.operator, 2592001, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links",
				body: `{"path":"/?embed=1","ttlSeconds":` + strconv.FormatInt(tt.ttl, 10) + `}`, header: jsonPost(tt.token)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.status == http.StatusBadRequest && (errorCode(t, rec.Body.Bytes()) != "invalid_ttl" || !strings.Contains(rec.Body.String(), "for a ")) {
				t.Errorf("refusal %s", rec.Body)
			}
		})
	}
}

func TestEmbedLinkAPI(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links", body: `{"path":"/queues/orders-dlq?embed=1","ttlSeconds":600}`, header: jsonPost(h.viewer)})
	if rec.Code != http.StatusCreated {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	var link struct{ URL, Path, ExpiresAt string }
	json.Unmarshal(rec.Body.Bytes(), &link)
	if !strings.HasPrefix(link.Path, "/queues/orders-dlq?") || !strings.Contains(link.Path, "embed=1") || !strings.Contains(link.Path, auth.EmbedParam+"=") || !strings.HasSuffix(link.URL, link.Path) {
		t.Fatalf("link = %+v", link)
	}
	if rec := h.do(t, apiRequest{target: link.Path}); rec.Code == http.StatusUnauthorized || rec.Code == http.StatusSeeOther || rec.Code == http.StatusForbidden {
		t.Errorf("embedded page: status %d", rec.Code)
	}
	token := link.Path[strings.Index(link.Path, auth.EmbedParam+"=")+len(auth.EmbedParam)+1:]
	for _, target := range []string{"/queues/orders?embed=1&embed_token=" + token, "/api/v1/queues?embed_token=" + token} {
		if rec := h.do(t, apiRequest{target: target}); rec.Code != http.StatusForbidden {
			t.Errorf("%s: status %d; want 403", target, rec.Code)
		}
	}
	if rec := h.do(t, apiRequest{method: http.MethodPost, target: "/queues/orders-dlq/redrive?embed_token=" + token, body: "confirm=1",
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}}); rec.Code != http.StatusForbidden {
		t.Errorf("POST with an embed link: status %d; want 403", rec.Code)
	}
}

// TestEmbedLinkDiesWithItsToken: links live up to 30 days and anyone holding one can read; a
// revoked token's links must stop working with it, as its sessions do.
func TestEmbedLinkDiesWithItsToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		revoke bool
		want   int
	}{
		{"token live", false, http.StatusOK},
		{"token revoked", true, http.StatusSeeOther}, // to the login page, like any credential-less browser
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAPIHarness(t, harnessConfig{})
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links", body: `{"path":"/queues/orders-dlq?embed=1"}`, header: jsonPost(h.viewer)})
			var link struct{ Path string }
			if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil || rec.Code != http.StatusCreated {
				t.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
			if tt.revoke {
				if err := auth.RevokeToken(t.Context(), h.w.Store, "status-bot"); err != nil {
					t.Fatal(err)
				}
			}
			if rec := h.do(t, apiRequest{target: link.Path}); rec.Code != tt.want {
				t.Errorf("embedded page: status %d, want %d", rec.Code, tt.want)
			}
			// Its websocket: open while the token lives; told the link ended once it is revoked.
			srv := httptest.NewServer(h.srv.Handler())
			defer srv.Close()
			conn, _, err := dialAs(t, srv, "topic=queue:1&"+link.Path[strings.Index(link.Path, "?")+1:], nil)
			if err != nil {
				t.Fatalf("websocket: %v", err)
			}
			if tt.revoke {
				if code := closeCode(t, conn); code != closeLinkEnded {
					t.Errorf("websocket with a revoked token's link: close code %d, want %d", code, closeLinkEnded)
				}
			} else {
				nextWith(t, conn, "#queue-stats")
			}
		})
	}
}

// TestAPIWhenTheStoreFails: a database that no longer answers (a closed SQLite store, a
// PostgreSQL that refuses its clients) is an outage, answered 503 database_unavailable with
// Retry-After everywhere (the API, an action, a page, /readyz), in the error shape, with nothing
// of the database's own text; the same failure while the database answers stays a 500
// (TestPanicIsA500WithoutDetail).
func TestAPIWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	engines := []struct {
		name   string
		outage func(t *testing.T) (harnessConfig, func(*apiHarness))
	}{
		{"sqlite", func(t *testing.T) (harnessConfig, func(*apiHarness)) {
			return harnessConfig{}, func(h *apiHarness) {
				if err := h.w.Store.Close(); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"postgres", func(t *testing.T) (harnessConfig, func(*apiHarness)) {
			url := pgtest.DB(t)
			return harnessConfig{db: url}, func(*apiHarness) { pgtest.Outage(t, url) }
		}},
	}
	tests := []struct {
		method, target string
		status         int
		code           string
	}{
		{"GET", "/api/v1/queues", 503, "database_unavailable"},
		{"GET", "/api/v1/queues/orders-dlq", 503, "database_unavailable"},
		{"GET", "/api/v1/queues/orders-dlq/messages", 503, "database_unavailable"},
		{"GET", "/api/v1/audit", 503, "database_unavailable"},
		{"GET", "/api/v1/summary", 503, "database_unavailable"},
		{"GET", "/api/v1/status", 503, "database_unavailable"},
		{"POST", "/api/v1/queues/orders-dlq/redrives", 503, "database_unavailable"},
		{"POST", "/api/v1/queues/orders-dlq/redrives/cancel", 503, "database_unavailable"},
		{"GET", "/queues/orders-dlq", 503, ""},
		{"GET", "/readyz", 503, ""},
	}
	for _, engine := range engines {
		t.Run(engine.name, func(t *testing.T) {
			cfg, outage := engine.outage(t)
			h := newAPIHarness(t, cfg)
			// Before the outage the same requests are answered.
			if rec := h.do(t, apiRequest{target: "/api/v1/queues", header: bearer(h.operator)}); rec.Code != http.StatusOK {
				t.Fatalf("before the outage: %d %s", rec.Code, rec.Body)
			}
			outage(h)
			for _, tt := range tests {
				t.Run(tt.method+" "+tt.target, func(t *testing.T) {
					// The bearer check reads the store too: a failure there is the same 503, not a 401.
					rec := h.do(t, apiRequest{method: tt.method, target: tt.target, header: jsonPost(h.operator)})
					if rec.Code != tt.status {
						t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, clip(rec.Body.String()))
					}
					if rec.Header().Get("Retry-After") == "" && tt.target != "/readyz" {
						t.Error("no Retry-After")
					}
					body := strings.ToLower(rec.Body.String())
					for _, leak := range []string{"sql", "closed", "store:", "no such", "pgx", "connections"} {
						if strings.Contains(body, leak) {
							t.Errorf("%q in %s", leak, clip(rec.Body.String()))
						}
					}
					if tt.code != "" && errorCode(t, rec.Body.Bytes()) != tt.code {
						t.Errorf("body %s", rec.Body)
					}
				})
			}
		})
	}
}

// TestSummaryTextIsChatSafe: the text summary is posted to chat as it is, and health reasons
// quote message group ids, which SQS lets hold any punctuation: a hostile one must not ping a
// channel or hide a link.
func TestSummaryTextIsChatSafe(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, group string
		refused     []string // what the posted text must not contain
	}{
		{"slack channel mention", "<!channel>", []string{"<!channel>", "<"}},
		{"slack here mention", "<!here|here>", []string{"<!here", "<"}},
		{"slack user mention", "<@U024BE7LH>", []string{"<@", "@U"}},
		{"slack link", "<https://evil.example|open the runbook>", []string{"<https:", "<"}},
		{"plain mention", "@here", []string{"@here"}},
		{"discord everyone", "@everyone", []string{"@everyone"}},
		{"mattermost channel", "@channel", []string{"@channel"}},
		{"markdown link", "[Fix-now](https://evil.example/x)", []string{"[Fix-now]", "](", "["}},
		{"markdown image", "![x](https://evil.example/p.png)", []string{"![", "](", "["}},
		{"markdown reference link", "[Fix-now][1] [1]: https://evil.example", []string{"[Fix-now]", "[1]:", "]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAPIHarness(t, harnessConfig{})
			ctx := t.Context()
			q, err := h.w.Store.GetQueueByARN(ctx, h.w.ARN("calls.fifo"))
			if err != nil {
				t.Fatal(err)
			}
			now := h.w.Now()
			if _, err := h.w.Store.SaveSample(ctx, store.Sample{QueueID: q.ID, Kind: store.SampleSource, At: now, Seen: 2, ApproxVisible: 2, Receives: 1, MessagesTaken: 2},
				nil, []store.GroupBacklog{{QueueID: q.ID, GroupID: tt.group, Messages: 2, OldestSentAt: now.Add(-time.Hour), HeadMessageID: "m-9", HeadReceiveCount: 4, Blocked: true}}); err != nil {
				t.Fatalf("SaveSample: %v", err)
			}
			rec := h.do(t, apiRequest{target: "/api/v1/summary", header: map[string]string{"Authorization": "Bearer " + h.viewer, "Accept": "text/plain"}})
			text := rec.Body.String()
			if rec.Code != http.StatusOK || !strings.Contains(text, "calls.fifo") || !strings.Contains(text, "blocked") {
				t.Fatalf("status %d; the summary does not name the blocked group of calls.fifo:\n%s", rec.Code, text)
			}
			for _, bad := range tt.refused {
				if strings.Contains(text, bad) {
					t.Errorf("the chat text holds %q:\n%s", bad, text)
				}
			}
		})
	}
}

// TestRedriveRateIsTheActionsToRefuse: a rate out of range is refused by the action, after the
// role check and with an audit entry, not by the handler before either.
func TestRedriveRateIsTheActionsToRefuse(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	post := func(token string) *httptest.ResponseRecorder {
		return h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: `{"maxMessagesPerSecond":0}`,
			header: map[string]string{"Authorization": "Bearer " + token, "Content-Type": "application/json"}})
	}
	if rec := post(h.viewer); rec.Code != http.StatusForbidden {
		t.Errorf("viewer with rate 0: %d, want 403 (the role is checked first)", rec.Code)
	}
	rec := post(h.operator)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"invalid_rate"`) {
		t.Fatalf("operator with rate 0: %d %s, want 400 invalid_rate", rec.Code, rec.Body)
	}
	entries, err := h.w.Store.ListAudit(t.Context(), store.AuditFilter{Limit: 1})
	if err != nil || len(entries) != 1 || entries[0].Result != store.AuditRefused || !strings.Contains(entries[0].Detail, "invalid_rate") {
		t.Errorf("newest audit entry = %+v, %v; want the refused rate", entries, err)
	}
}
