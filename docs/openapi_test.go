package docs_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// spec is the API's OpenAPI document, read as the server serves it.
type spec struct{ doc map[string]any }

func openAPI(t *testing.T) spec {
	t.Helper()
	data, err := os.ReadFile("../internal/server/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	return spec{doc}
}

// check returns what in v disagrees with schema, the part of JSON Schema the document uses:
// $ref, type (one or a list, "null" among them), enum, required, properties and items. A
// property the schema does not name is a problem too: an example shows only what the API sends.
func (s spec) check(v any, schema map[string]any, at string) []string {
	if ref, ok := schema["$ref"].(string); ok {
		target, err := s.resolve(ref)
		if err != nil {
			return []string{at + ": " + err.Error()}
		}
		return s.check(v, target, at)
	}
	if t, ok := schema["type"]; ok && !typeMatches(v, t) {
		return []string{fmt.Sprintf("%s: %s, want type %v", at, jsonType(v), t)}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, v) {
		return []string{fmt.Sprintf("%s: %v is not one of %v", at, v, enum)}
	}
	var problems []string
	switch v := v.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		for _, r := range asStrings(schema["required"]) {
			if _, ok := v[r]; !ok {
				problems = append(problems, fmt.Sprintf("%s: %q is required", at, r))
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub, ok := props[k].(map[string]any)
			if !ok {
				if props != nil {
					problems = append(problems, fmt.Sprintf("%s: %q is not a property of the schema", at, k))
				}
				continue
			}
			problems = append(problems, s.check(v[k], sub, at+"."+k)...)
		}
	case []any:
		if items, ok := schema["items"].(map[string]any); ok {
			for i, e := range v {
				problems = append(problems, s.check(e, items, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	return problems
}

func (s spec) resolve(ref string) (map[string]any, error) {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("reference %q outside the document", ref)
	}
	var node any = s.doc
	for _, part := range strings.Split(path, "/") {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("reference %q: no %q", ref, part)
		}
		node = m[part]
	}
	m, ok := node.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("reference %q names no schema", ref)
	}
	return m, nil
}

func typeMatches(v any, t any) bool {
	switch t := t.(type) {
	case string:
		return typeIs(v, t)
	case []any:
		return slices.ContainsFunc(t, func(e any) bool { s, _ := e.(string); return typeIs(v, s) })
	}
	return true
}

func typeIs(v any, t string) bool {
	switch t {
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "number":
		_, ok := v.(float64)
		return ok
	}
	return jsonType(v) == t
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func asStrings(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func TestCheckAgainstTheDocument(t *testing.T) {
	s := openAPI(t)
	alert := map[string]any{"$ref": "#/components/schemas/Alert"}
	tests := []struct {
		name    string
		example string
		want    string // a problem it must report, "" for none
	}{
		{"a good one", `{"id":1,"at":"2026-11-30T12:00:00Z","kind":"test","severity":"info","resolved":false,"title":"t","path":"/","url":"u"}`, ""},
		{"a kind the API never sends", `{"id":1,"kind":"dlq.departure"}`, "is not one of"},
		{"a string for a number", `{"id":"42"}`, "want type integer"},
		{"a property the API does not have", `{"id":1,"colour":"red"}`, `"colour" is not a property`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tt.example), &v); err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(s.check(v, alert, "$"), "\n")
			if tt.want == "" && strings.Contains(problems, "is not one of") || tt.want != "" && !strings.Contains(problems, tt.want) {
				t.Errorf("problems:\n%s\nwant one saying %q", problems, tt.want)
			}
		})
	}
}
