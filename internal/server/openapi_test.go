package server

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/auth"
)

func TestOpenAPIMatchesRoutes(t *testing.T) {
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

// TestOpenAPIDescribesResponses checks real answers against the schemas the document gives for
// them: every key is documented, every required key is there, types (nullable ones included)
// and date-times hold. A field added to a response without the document fails here.
func TestOpenAPIDescribesResponses(t *testing.T) {
	h := newAPIHarness(t, harnessConfig{})
	var doc map[string]any
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	tests := []struct {
		method, target, route, body string
		status                      int
	}{
		{"GET", "/api/v1/queues", "/api/v1/queues", "", 200},
		{"GET", "/api/v1/queues/orders-dlq", "/api/v1/queues/{queue}", "", 200},
		{"GET", "/api/v1/queues/calls.fifo", "/api/v1/queues/{queue}", "", 200},
		{"GET", "/api/v1/queues/orders/metrics?name=NumberOfMessagesSent", "/api/v1/queues/{queue}/metrics", "", 200},
		{"GET", "/api/v1/queues/calls.fifo/groups", "/api/v1/queues/{queue}/groups", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/messages?limit=1", "/api/v1/queues/{queue}/messages", "", 200},
		{"GET", "/api/v1/queues/orders-dlq/messages/m-1", "/api/v1/queues/{queue}/messages/{messageId}", "", 200},
		{"GET", "/api/v1/summary", "/api/v1/summary", "", 200},
		{"GET", "/api/v1/status", "/api/v1/status", "", 200},
		{"GET", "/api/v1/queues/nope", "/api/v1/queues/{queue}", "", 404},
		{"POST", "/api/v1/queues/orders-dlq/redrives", "/api/v1/queues/{queue}/redrives", `{"maxMessagesPerSecond":1}`, 202},
		{"POST", "/api/v1/queues/orders-dlq/redrives", "/api/v1/queues/{queue}/redrives", ``, 409},
		{"GET", "/api/v1/queues/orders-dlq/redrives", "/api/v1/queues/{queue}/redrives", "", 200},
		{"GET", "/api/v1/queues/orders-dlq", "/api/v1/queues/{queue}", "", 200}, // now with a redrive
		{"GET", "/api/v1/summary", "/api/v1/summary", "", 200},                  // now with a running redrive
		{"POST", "/api/v1/queues/orders-dlq/redrives/cancel", "/api/v1/queues/{queue}/redrives/cancel", ``, 200},
		{"POST", "/api/v1/queues/orders/redrives", "/api/v1/queues/{queue}/redrives", ``, 422},
		{"GET", "/api/v1/audit", "/api/v1/audit", "", 200},
		{"POST", "/api/v1/embed-links", "/api/v1/embed-links", `{"path":"/?embed=1"}`, 201},
		{"GET", "/api/v1/notifications", "/api/v1/notifications", "", 200},
		{"POST", "/api/v1/notifications/test", "/api/v1/notifications/test", `{"target":"nope"}`, 404},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target+" "+itoa(int64(tt.status)), func(t *testing.T) {
			rec := h.do(t, apiRequest{method: tt.method, target: tt.target, body: tt.body, header: jsonPost(h.operator)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %.300s", rec.Code, tt.status, rec.Body)
			}
			schema := dig(doc, "paths", tt.route, strings.ToLower(tt.method), "responses", itoa(int64(tt.status)), "content", "application/json", "schema")
			if schema == nil {
				t.Fatalf("openapi.json has no JSON schema for %s %s %d", tt.method, tt.route, tt.status)
			}
			var got any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			for _, problem := range conform(doc, schema, got, "$") {
				t.Error(problem)
			}
		})
	}
}

// dig follows keys through nested JSON objects; nil when one is missing.
func dig(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// conform returns how v departs from the schema: the subset of JSON Schema the document uses
// ($ref, allOf, oneOf, type with null, properties, required, items, additionalProperties,
// format date-time). Undocumented object keys are departures unless additionalProperties says
// otherwise.
func conform(doc map[string]any, schema, v any, path string) []string {
	s, _ := schema.(map[string]any)
	if ref, ok := s["$ref"].(string); ok {
		return conform(doc, dig(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...), v, path)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		for _, alt := range alts {
			if len(conform(doc, alt, v, path)) == 0 {
				return nil
			}
		}
		return []string{path + ": matches none of oneOf"}
	}
	var problems []string
	if types := schemaTypes(s); len(types) > 0 && !slices.Contains(types, jsonType(v)) &&
		!(jsonType(v) == "integer" && slices.Contains(types, "number")) {
		return []string{fmt.Sprintf("%s: %s, documented as %v", path, jsonType(v), types)}
	}
	if str, ok := v.(string); ok && s["format"] == "date-time" {
		if _, err := time.Parse(time.RFC3339, str); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %q is not a date-time", path, str))
		}
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			problems = append(problems, conform(doc, s["items"], e, fmt.Sprintf("%s[%d]", path, i))...)
		}
	case map[string]any:
		props, required, extra := objectSchema(doc, s)
		for _, k := range required {
			if _, ok := x[k]; !ok {
				problems = append(problems, fmt.Sprintf("%s: required %q missing", path, k))
			}
		}
		for k, e := range x {
			switch p, ok := props[k]; {
			case ok:
				problems = append(problems, conform(doc, p, e, path+"."+k)...)
			case extra == nil:
				problems = append(problems, fmt.Sprintf("%s: %q is not documented", path, k))
			case extra != true:
				problems = append(problems, conform(doc, extra, e, path+"."+k)...)
			}
		}
	}
	return problems
}

// objectSchema merges an object schema with the members of its allOf.
func objectSchema(doc map[string]any, s map[string]any) (props map[string]any, required []string, extra any) {
	props = map[string]any{}
	if ref, ok := s["$ref"].(string); ok {
		s, _ = dig(doc, strings.Split(strings.TrimPrefix(ref, "#/"), "/")...).(map[string]any)
	}
	parts, _ := s["allOf"].([]any)
	for _, part := range parts {
		p, r, e := objectSchema(doc, part.(map[string]any))
		maps.Copy(props, p)
		required = append(required, r...)
		if e != nil {
			extra = e
		}
	}
	if p, ok := s["properties"].(map[string]any); ok {
		maps.Copy(props, p)
	}
	reqs, _ := s["required"].([]any)
	for _, r := range reqs {
		required = append(required, r.(string))
	}
	if e, ok := s["additionalProperties"]; ok && e != false {
		extra = e
	} else if !ok && len(props) == 0 && len(parts) == 0 {
		extra = true // {"type":"object"} alone: any keys
	}
	return props, required, extra
}

func schemaTypes(s map[string]any) []string {
	switch t := s["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			out = append(out, x.(string))
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == float64(int64(x)) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}
