package mcpbridge

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestEndpoint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		url, want string
	}{
		{"https://toolq.example.com", "https://toolq.example.com/mcp"},
		{"https://toolq.example.com/", "https://toolq.example.com/mcp"},
		{"http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080/mcp"},
		{"https://example.com/toolq", "https://example.com/toolq/mcp"},
		{"ftp://toolq.example.com", ""},
		{"https://user:pass@toolq.example.com", ""},
		{"https://toolq.example.com/?token=x", ""},
		{"toolq.example.com", ""},
	}
	for _, tt := range tests {
		got, err := Endpoint(tt.url)
		if tt.want == "" {
			if err == nil {
				t.Errorf("Endpoint(%q) = %q, want an error", tt.url, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Endpoint(%q) = %q, %v; want %q", tt.url, got, err, tt.want)
		}
	}
}

// TestRunFailsAtOnceWhenToolqRefuses: a refused token stops the bridge before it serves, so that
// the client shows why, and the token went as a Bearer header.
func TestRunFailsAtOnceWhenToolqRefuses(t *testing.T) {
	t.Parallel()
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":{"code":"unauthorized","message":"the credentials are invalid, expired or revoked"}}`))
	}))
	defer srv.Close()
	local, _ := mcp.NewInMemoryTransports()
	err := Run(t.Context(), Options{URL: srv.URL, Token: "tq_test"}, local)
	if err == nil || !strings.Contains(err.Error(), "connect to "+srv.URL+"/mcp") {
		t.Errorf("Run = %v, want a failure to connect", err)
	}
	if got != "Bearer tq_test" {
		t.Errorf("Authorization = %q", got)
	}
}
