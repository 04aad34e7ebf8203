package openapitest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// document is a small API in the shape of toolq's: a component extended with allOf, a nullable
// member, an open map, an event stream and the Error shape.
const document = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "servers": [{"url": "/"}],
  "paths": {
    "/api/v1/things/{thing}": {
      "get": {
        "parameters": [{"name": "thing", "in": "path", "required": true, "schema": {"type": "string"}}],
        "responses": {
          "200": {"description": "ok", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ThingDetail"}}}},
          "404": {"description": "no", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
        }
      }
    },
    "/api/v1/events": {
      "get": {"responses": {"200": {"description": "stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}}}}
    }
  },
  "components": {
    "schemas": {
      "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["code", "message"],
        "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}},
      "Thing": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "rate": {"type": ["integer", "null"]},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
      "ThingDetail": {"allOf": [{"$ref": "#/components/schemas/Thing"}, {"type": "object", "properties": {"at": {"type": "string", "format": "date-time"}}}]}
    }
  }
}`

func TestCheck(t *testing.T) {
	c, err := New([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	tests := []struct {
		name, method, target string
		status               int
		header               http.Header
		body                 string
		ok                   bool
	}{
		{"as documented", "GET", "/api/v1/things/a", 200, jsonHeader, `{"name":"a","rate":2,"labels":{"x":"y"},"at":"2026-01-02T03:04:05Z"}`, true},
		{"null where null is allowed", "GET", "/api/v1/things/a", 200, jsonHeader, `{"name":"a","rate":null}`, true},
		{"a key no schema names", "GET", "/api/v1/things/a", 200, jsonHeader, `{"name":"a","topology":{}}`, false},
		{"a required key missing", "GET", "/api/v1/things/a", 200, jsonHeader, `{"rate":1}`, false},
		{"a number as a string", "GET", "/api/v1/things/a", 200, jsonHeader, `{"name":"a","rate":"2"}`, false},
		{"not a date-time", "GET", "/api/v1/things/a", 200, jsonHeader, `{"name":"a","at":"yesterday"}`, false},
		{"an undocumented status", "GET", "/api/v1/things/a", 422, jsonHeader, `{"error":{"code":"x","message":"y"}}`, false},
		{"an undocumented content type", "GET", "/api/v1/things/a", 200, http.Header{"Content-Type": {"text/plain"}}, `a`, false},
		{"a documented error", "GET", "/api/v1/things/a", 404, jsonHeader, `{"error":{"code":"x","message":"y"}}`, true},
		{"an error in another shape", "GET", "/api/v1/things/a", 404, jsonHeader, `{"message":"y"}`, false},
		{"an unknown path's error", "GET", "/api/v1/nothing", 404, jsonHeader, `{"error":{"code":"not_found","message":"y"}}`, true},
		{"an unknown method's error", "DELETE", "/api/v1/things/a", 405, jsonHeader, `{"error":{"code":"method_not_allowed","message":"y"}}`, true},
		{"an unknown path's success", "GET", "/api/v1/nothing", 200, jsonHeader, `{}`, false},
		{"an unknown path's error in another shape", "GET", "/api/v1/nothing", 404, http.Header{"Content-Type": {"text/plain"}}, `404 page not found`, false},
		{"an event stream", "GET", "/api/v1/events", 200, http.Header{"Content-Type": {"text/event-stream"}}, ``, true},
		{"outside the API", "GET", "/metrics", 200, http.Header{"Content-Type": {"text/plain"}}, `x 1`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := c.Check(httptest.NewRequest(tt.method, tt.target, nil), tt.status, tt.header, []byte(tt.body))
			if (err == nil) != tt.ok {
				t.Errorf("Check = %v; want ok %v", err, tt.ok)
			}
		})
	}
}

func TestSchema(t *testing.T) {
	c, err := New([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Schema("Thing", []byte(`{"name":"a"}`)); err != nil {
		t.Errorf("a Thing refused: %v", err)
	}
	for _, bad := range []string{`{"name":"a","extra":1}`, `{}`, `[`} {
		if err := c.Schema("Thing", []byte(bad)); err == nil {
			t.Errorf("%s taken for a Thing", bad)
		}
	}
	if err := c.Schema("Nothing", []byte(`{}`)); err == nil {
		t.Error("a schema the document does not have")
	}
}

func TestTransport(t *testing.T) {
	c, err := New([]byte(document))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/things/bad" {
			io.WriteString(w, `{"name":"bad","extra":1}`)
			return
		}
		io.WriteString(w, `{"name":"good"}`)
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: c.Transport(nil)}
	resp, err := client.Get(srv.URL + "/api/v1/things/good")
	if err != nil {
		t.Fatalf("a documented answer refused: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"name":"good"}` {
		t.Errorf("the body was not handed on: %q", body)
	}
	if _, err := client.Get(srv.URL + "/api/v1/things/bad"); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("an undocumented field passed: %v", err)
	}
}

func TestNewRefusesAnInvalidDocument(t *testing.T) {
	for _, doc := range []string{`{`, `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/x":{"get":{"responses":{"200":{"$ref":"#/nowhere"}}}}}}`} {
		if _, err := New([]byte(doc)); err == nil {
			t.Errorf("New(%.40q) accepted", doc)
		}
	}
}
