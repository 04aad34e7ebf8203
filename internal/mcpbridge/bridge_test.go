package mcpbridge

import (
	"context"
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

// TestRunEndsWithItsContext: a signal ends the bridge while its client still holds the
// connection open, and the client's calls reach toolq until then.
func TestRunEndsWithItsContext(t *testing.T) {
	t.Parallel()
	remote := mcp.NewServer(&mcp.Implementation{Name: "toolq", Version: "test"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "get_status"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, struct{}{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	local, client := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{URL: srv.URL}, local) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), client, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_status"})
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "seen" {
		t.Fatalf("call through the bridge: %+v, %v", res, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run after its context ended: %v", err)
	}
}
