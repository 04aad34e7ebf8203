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
