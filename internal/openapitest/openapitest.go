// Package openapitest holds toolq's answers to its OpenAPI document, for tests: every answer
// under /api/v1 that a test sees must be one the document describes (a documented status, its
// content type, a body its schema accepts), and hold no field the document does not name. The
// server's test harnesses check each answer they get with Check; end-to-end tests wrap their
// HTTP client's transport with Transport. Nothing but tests imports it.
package openapitest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
)

// APIPrefix starts the paths the document describes.
const APIPrefix = "/api/v1/"

// Checker checks answers against one OpenAPI document.
type Checker struct {
	router routers.Router
	// schemas are the document's components, closed.
	schemas openapi3.Schemas
}

// New reads an OpenAPI 3.1 document (JSON), checks that it is a valid one, and returns its
// checker. The checker holds answers to a closed reading of the document: an object schema with
// properties and no additionalProperties of its own accepts no other key (the document leaves
// them open, for clients that tolerate new fields; the tests must not, or a field added without
// the document passes).
func New(document []byte) (*Checker, error) {
	ctx := context.Background()
	doc, err := openapi3.NewLoader().LoadFromData(document)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the document: %w", err)
	}
	if err := doc.Validate(ctx); err != nil {
		return nil, fmt.Errorf("openapitest: the document is not valid OpenAPI: %w", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(document, &raw); err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	closeDocument(raw)
	closedJSON, err := json.Marshal(raw)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	closed, err := openapi3.NewLoader().LoadFromData(closedJSON)
	if err != nil {
		return nil, fmt.Errorf("openapitest: load the closed document: %w", err)
	}
	router, err := legacy.NewRouter(closed)
	if err != nil {
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	c := &Checker{router: router, schemas: closed.Components.Schemas}
	if c.schemas["Error"] == nil {
		return nil, errors.New("openapitest: the document has no Error schema")
	}
	return c, nil
}

// Check returns what is wrong with an answer to req (status, header and the whole body); nil
// for an answer the document describes, and for any answer outside /api/v1. An answer to a path
// or method the document does not describe must be an error (4xx, or 5xx from a route of a
// test's own) in the Error shape. Event
// streams are checked by status and content type: their body never ends.
func (c *Checker) Check(req *http.Request, status int, header http.Header, body []byte) error {
	if !strings.HasPrefix(req.URL.Path, APIPrefix) || req.Method == http.MethodHead || req.Method == http.MethodOptions {
		return nil
	}
	what := req.Method + " " + req.URL.RequestURI()
	body, err := decoded(header, body)
	if err != nil {
		return fmt.Errorf("%s: %d: %w", what, status, err)
	}
	// The document's server is "/": route by path alone, whatever host a client called.
	req = req.Clone(req.Context())
	req.URL = &url.URL{Path: req.URL.Path, RawPath: req.URL.RawPath, RawQuery: req.URL.RawQuery}
	req.Host = ""
	route, params, err := c.router.FindRoute(req)
	if err != nil {
		if status < 400 {
			return fmt.Errorf("%s: %d for a path or method the document does not describe", what, status)
		}
		return c.checkError(what, status, header, body)
	}
	input := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Body:                   io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{
			IncludeResponseStatus: true,
			MultiError:            true,
			AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
			ExcludeResponseBody:   isEventStream(header),
		},
	}
	if err := openapi3filter.ValidateResponse(req.Context(), input); err != nil {
		return fmt.Errorf("%s: %d %s does not match the document: %w (body %.300s)", what, status, header.Get("Content-Type"), err, body)
	}
	if isEventStream(header) {
		resp := route.Operation.Responses.Status(status)
		if resp == nil || resp.Value == nil || resp.Value.Content.Get(header.Get("Content-Type")) == nil {
			return fmt.Errorf("%s: %d %s is not a documented content type", what, status, header.Get("Content-Type"))
		}
	}
	return nil
}

// checkError checks an answer in the Error shape.
func (c *Checker) checkError(what string, status int, header http.Header, body []byte) error {
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	if mt != "application/json" {
		return fmt.Errorf("%s: %d %s, not an Error in JSON", what, status, header.Get("Content-Type"))
	}
	if err := c.Schema("Error", body); err != nil {
		return fmt.Errorf("%s: %d: %w", what, status, err)
	}
	return nil
}

// Schema returns what is wrong with a JSON value (an event stream's data, say) read as the
// document's component schema of that name.
func (c *Checker) Schema(name string, value []byte) error {
	s := c.schemas[name]
	if s == nil || s.Value == nil {
		return fmt.Errorf("the document has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if err := s.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("not a %s: %w (value %.300s)", name, err, value)
	}
	return nil
}

// decoded returns body without its Content-Encoding (gzip or br), as a client reads it.
func decoded(header http.Header, body []byte) ([]byte, error) {
	var r io.Reader
	switch enc := header.Get("Content-Encoding"); enc {
	case "", "identity":
		return body, nil
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("gzip body: %w", err)
		}
		r = zr
	case "br":
		r = brotli.NewReader(bytes.NewReader(body))
	default:
		return nil, fmt.Errorf("a body in %q, which the checker cannot read", enc)
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s body: %w", header.Get("Content-Encoding"), err)
	}
	return out, nil
}

// isEventStream reports whether an answer is a stream of Server-Sent Events.
func isEventStream(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "text/event-stream"
}

// Client returns an HTTP client whose every answer of /api/v1 must be one the OpenAPI document
// in the file at path describes, or its request fails with the reason. It panics when the
// document does not load: a test's set-up, which has nothing to test without it.
func Client(path string) *http.Client {
	doc, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	c, err := New(doc)
	if err != nil {
		panic(err)
	}
	return &http.Client{Transport: c.Transport(nil)}
}

// Transport wraps base (nil: http.DefaultTransport) so that every answer of /api/v1 it carries
// is checked: one the document does not describe fails the request with the reason, as a
// transport error the client's caller sees.
func (c *Checker) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper{c: c, base: base}
}

type roundTripper struct {
	c    *Checker
	base http.RoundTripper
}

func (rt roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.base.RoundTrip(req)
	if err != nil || !strings.HasPrefix(req.URL.Path, APIPrefix) {
		return resp, err
	}
	var body []byte
	if !isEventStream(resp.Header) {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapitest: read the answer: %w", err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := rt.c.Check(req, resp.StatusCode, resp.Header, body); err != nil {
		if resp.Body != nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("openapitest: %w", err)
	}
	return resp, nil
}

// closeDocument closes every object schema of the document that names its properties and says
// nothing of others: additionalProperties false, or, on a schema made of allOf (whose parts
// each name only some of the properties), unevaluatedProperties false on the whole and the parts
// left open. A part that refers to a component is replaced by a copy of it first, since the
// component itself is closed (QueueDetail is QueueSummary and more).
func closeDocument(doc map[string]any) {
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	for _, s := range schemas {
		inlineAllOfParts(s, schemas)
	}
	if comps != nil {
		if schemas, ok := comps["schemas"].(map[string]any); ok {
			for _, s := range schemas {
				closeSchema(s, false)
			}
		}
		for _, kind := range []string{"responses", "requestBodies"} {
			if items, ok := comps[kind].(map[string]any); ok {
				for _, item := range items {
					closeContent(item)
				}
			}
		}
	}
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, op := range ops {
			op, _ := op.(map[string]any)
			closeContent(op["requestBody"])
			responses, _ := op["responses"].(map[string]any)
			for _, r := range responses {
				closeContent(r)
			}
		}
	}
}

// inlineAllOfParts replaces each member of an allOf of s that refers to a component by a copy
// of that component.
func inlineAllOfParts(v any, schemas map[string]any) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	list, _ := s["allOf"].([]any)
	for i, member := range list {
		m, _ := member.(map[string]any)
		ref, _ := m["$ref"].(string)
		if name, ok := strings.CutPrefix(ref, "#/components/schemas/"); ok && len(m) == 1 {
			list[i] = deepCopy(schemas[name])
		}
	}
}

// deepCopy copies a value decoded from JSON.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// closeContent closes the schemas of a response's or request body's content.
func closeContent(v any) {
	m, _ := v.(map[string]any)
	content, _ := m["content"].(map[string]any)
	for _, media := range content {
		media, _ := media.(map[string]any)
		closeSchema(media["schema"], false)
	}
}

// closeSchema closes one schema and those inside it; part says it is a member of an allOf.
func closeSchema(v any, part bool) {
	s, ok := v.(map[string]any)
	if !ok {
		return
	}
	_, props := s["properties"].(map[string]any)
	_, composed := s["allOf"].([]any)
	_, additional := s["additionalProperties"]
	_, unevaluated := s["unevaluatedProperties"]
	switch {
	case additional || unevaluated || part:
	case composed:
		s["unevaluatedProperties"] = false
	case props:
		s["additionalProperties"] = false
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for _, p := range props {
			closeSchema(p, false)
		}
	}
	for _, key := range []string{"items", "additionalProperties", "not"} {
		closeSchema(s[key], false)
	}
	for _, key := range []string{"allOf", "oneOf", "anyOf", "prefixItems"} {
		list, _ := s[key].([]any)
		for _, member := range list {
			closeSchema(member, key == "allOf")
		}
	}
}
