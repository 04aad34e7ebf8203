package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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

// TestRedirectElsewhereKeepsTheToken: toolq's address answers with a redirect to another
// listener (another host for the browser: another port here), which records what it gets. The
// bridge does not follow it, says where it led, and the token never reaches the second
// listener; a redirect within toolq's own origin is followed with the token.
func TestRedirectElsewhereKeepsTheToken(t *testing.T) {
	t.Parallel()
	remote := mcp.NewServer(&mcp.Implementation{Name: "toolq", Version: "test"}, nil)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var elsewhere []string // the Authorization headers the other listener received
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		elsewhere = append(elsewhere, r.Header.Get("Authorization"))
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	defer other.Close()
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			toolq := httptest.NewServer(http.RedirectHandler(other.URL+"/mcp", status))
			defer toolq.Close()
			local, client := mcp.NewInMemoryTransports()
			// Were the redirect followed, the bridge would serve its client: that one hangs up
			// at once, so that Run returns either way.
			if conn, err := client.Connect(t.Context()); err == nil {
				conn.Close()
			}
			err := Run(t.Context(), Options{URL: toolq.URL, Token: "tq_secret"}, local)
			if err == nil || !strings.Contains(err.Error(), "redirected to "+other.URL+"/mcp") || !strings.Contains(err.Error(), "not followed") {
				t.Errorf("Run = %v, want a refused redirect naming %s", err, other.URL)
			}
		})
	}
	mu.Lock()
	if len(elsewhere) != 0 {
		t.Errorf("the other listener received %d requests (Authorization %q)", len(elsewhere), elsewhere)
	}
	mu.Unlock()

	// Within the origin: /old/mcp → /mcp, and the token goes along.
	var got []string
	toolq := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/old/mcp" {
			http.Redirect(w, r, "/mcp", http.StatusPermanentRedirect)
			return
		}
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	defer toolq.Close()
	ctx, cancel := context.WithCancel(t.Context())
	local, client := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, Options{URL: toolq.URL + "/old/mcp", Token: "tq_secret"}, local) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(t.Context(), client, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run through a redirect within toolq: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) == 0 || got[0] != "Bearer tq_secret" {
		t.Errorf("Authorization after the redirect within toolq: %q", got)
	}
}

// TestBadLinesAreAnswered: a line of the client's that is not one message (a batch, JSON cut
// short, not JSON, not JSON-RPC, too long) gets a JSON-RPC error, and the next line is served:
// the client keeps its tools.
func TestBadLinesAreAnswered(t *testing.T) {
	t.Parallel()
	remote := mcp.NewServer(&mcp.Implementation{Name: "toolq", Version: "test"}, nil)
	mcp.AddTool(remote, &mcp.Tool{Name: "get_status"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "seen"}}}, struct{}{}, nil
	})
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return remote }, &mcp.StreamableHTTPOptions{Stateless: true}))
	defer srv.Close()

	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- Run(t.Context(), Options{URL: srv.URL}, &LineTransport{In: stdinR, Out: stdoutW})
		stdoutW.Close()
		stdinR.CloseWithError(errors.New("the bridge ended")) // the test's next write fails rather than blocks
	}()
	out := bufio.NewScanner(stdoutR)
	out.Buffer(nil, 1<<20)
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(stdinW, line+"\n"); err != nil {
			t.Fatalf("write %q: %v", line, err)
		}
	}
	type answer struct {
		ID     json.RawMessage
		Result json.RawMessage
		Error  *struct {
			Code    int
			Message string
		}
	}
	next := func() answer {
		t.Helper()
		if !out.Scan() {
			t.Fatalf("the bridge ended: %v, %v", out.Err(), <-done)
		}
		var a answer
		if err := json.Unmarshal(out.Bytes(), &a); err != nil {
			t.Fatalf("answer %q: %v", out.Text(), err)
		}
		return a
	}
	call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_status"}}`

	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
	if a := next(); string(a.ID) != "1" || a.Error != nil {
		t.Fatalf("initialize: %+v", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	tests := []struct {
		name, line string
		id         string
		code       int
	}{
		{"batch", `[{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`, "null", jsonrpc.CodeInvalidRequest},
		{"cut short", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":`, "null", jsonrpc.CodeParseError},
		{"not JSON", `hello`, "null", jsonrpc.CodeParseError},
		{"two values", `{} {}`, "null", jsonrpc.CodeParseError},
		{"not JSON-RPC, with an id", `{"jsonrpc":"1.0","id":"x-4","method":"tools/list"}`, `"x-4"`, jsonrpc.CodeInvalidRequest},
		{"too long", `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"pad":"` + strings.Repeat("x", maxLine) + `"}}`, "null", jsonrpc.CodeInvalidRequest},
	}
	for i, tt := range tests {
		send(tt.line)
		a := next()
		if a.Error == nil || a.Error.Code != tt.code || string(a.ID) != tt.id {
			t.Errorf("%s: answer %+v (id %s), want error %d with id %s", tt.name, a, a.ID, tt.code, tt.id)
		}
		// The next line is served as if nothing had happened.
		id := 100 + i
		send(fmt.Sprintf(call, id))
		if a := next(); string(a.ID) != strconv.Itoa(id) || a.Error != nil || !strings.Contains(string(a.Result), "seen") {
			t.Errorf("after %s: %+v %s", tt.name, a, a.Result)
		}
	}
	stdinW.Close() // the client hangs up
	if err := <-done; err != nil {
		t.Errorf("Run after the client hung up: %v", err)
	}
}
