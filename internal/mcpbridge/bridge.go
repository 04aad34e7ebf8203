// Package mcpbridge is `dashboard mcp`: a Model Context Protocol server on standard input and
// output, for the clients that speak only stdio, whose tools are those of a running toolq. It
// lists the tools toolq's /mcp endpoint offers its token (a viewer's has no operator tools) and
// forwards every call there as it is: toolq checks, answers and audits each one, and the bridge
// adds nothing and keeps nothing, neither on disk nor between calls.
package mcpbridge

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options configure a bridge. URL is required.
type Options struct {
	// URL is the toolq to reach: its address (https://toolq.example.com), or its /mcp endpoint.
	URL string
	// Token is a toolq API token (tq_…), sent as a Bearer header; empty under --auth none.
	Token string
	// Version is the bridge's own, for its client's name.
	Version string
	// Timeout bounds each HTTP request to toolq (default 60 s).
	Timeout time.Duration
	Logger  *slog.Logger // default: discard
}

// Endpoint returns the MCP endpoint of a toolq address: its /mcp, unless the URL names it.
func Endpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("mcpbridge: the URL must be http(s)://host[:port][/path] of a running toolq")
	}
	if !strings.HasSuffix(u.Path, "/mcp") {
		u.Path = strings.TrimRight(u.Path, "/") + "/mcp"
	}
	return u.String(), nil
}

// Run connects to toolq, then serves its tools on local (stdio) until the client hangs up or ctx
// ends (a signal: then it returns nil). A toolq that cannot be reached or refuses the token fails Run at once, so that the
// client shows why.
func Run(ctx context.Context, opts Options, local mcp.Transport) error {
	endpoint, err := Endpoint(opts.URL)
	if err != nil {
		return err
	}
	r := &remote{
		endpoint: endpoint,
		client: &http.Client{
			Timeout:       cmp.Or(opts.Timeout, 60*time.Second),
			Transport:     bearer{token: opts.Token, base: http.DefaultTransport},
			CheckRedirect: sameOrigin,
		},
		impl: &mcp.Implementation{Name: "toolq-mcp-bridge", Version: cmp.Or(opts.Version, "dev")},
		log:  cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
	}
	session, err := r.session(ctx)
	if err != nil {
		return err
	}
	defer r.close()
	tools, err := listTools(ctx, session)
	if err != nil {
		return fmt.Errorf("mcpbridge: list the tools of %s: %w", endpoint, err)
	}
	init := session.InitializeResult()
	srv := mcp.NewServer(&mcp.Implementation{Name: init.ServerInfo.Name, Title: init.ServerInfo.Title, Version: init.ServerInfo.Version},
		&mcp.ServerOptions{Instructions: init.Instructions, Capabilities: &mcp.ServerCapabilities{}, Logger: r.log})
	listed := map[string]bool{}
	for _, t := range tools {
		srv.AddTool(t, r.forward(t.Name))
		listed[t.Name] = true
	}
	srv.AddReceivingMiddleware(r.forwardUnlisted(listed))
	served, err := srv.Connect(ctx, local, nil)
	if err != nil {
		return fmt.Errorf("mcpbridge: serve on stdio: %w", err)
	}
	// A signal ends the bridge even while its client holds standard input open.
	stop := context.AfterFunc(ctx, func() { served.Close() })
	defer stop()
	err = served.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// listTools lists every tool toolq offers this token, page by page.
func listTools(ctx context.Context, s *mcp.ClientSession) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// remote is the bridge's client session with toolq, opened again after toolq broke it (a
// restart, a network failure): the next call finds a fresh one.
type remote struct {
	endpoint string
	client   *http.Client
	impl     *mcp.Implementation
	log      *slog.Logger

	mu      sync.Mutex
	current *mcp.ClientSession
}

// session returns the open session, or opens one.
func (r *remote) session(ctx context.Context) (*mcp.ClientSession, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		return r.current, nil
	}
	c := mcp.NewClient(r.impl, nil)
	s, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.endpoint, HTTPClient: r.client, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("mcpbridge: connect to %s: %w", r.endpoint, err)
	}
	r.current = s
	return s, nil
}

// drop forgets a session that failed, so that the next call opens another.
func (r *remote) drop(s *mcp.ClientSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == s {
		r.current = nil
		go s.Close()
	}
}

func (r *remote) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current != nil {
		r.current.Close()
		r.current = nil
	}
}

// forward is the handler of a listed tool: the call goes to toolq.
func (r *remote) forward(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return r.call(ctx, name, req.Params.Arguments), nil
	}
}

// forwardUnlisted sends toolq the calls of tools it did not list to this token too (a viewer
// calling start_redrive), rather than refuse them here: toolq refuses them and audits the
// refusal as it does over HTTP.
func (r *remote) forwardUnlisted(listed map[string]bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			call, ok := req.(*mcp.CallToolRequest)
			if !ok || call.Params == nil || listed[call.Params.Name] {
				return next(ctx, method, req)
			}
			return r.call(ctx, call.Params.Name, call.Params.Arguments), nil
		}
	}
}

// call calls the tool of that name in toolq with the client's arguments, and answers with
// toolq's result as it is, error results included. When toolq cannot be asked (unreachable, the
// token refused), the call answers an error result saying so.
func (r *remote) call(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	s, err := r.session(ctx)
	if err != nil {
		return unreachable(err)
	}
	params := &mcp.CallToolParams{Name: name}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := s.CallTool(ctx, params)
	if err != nil {
		r.log.Warn("mcpbridge: toolq did not answer a call", "tool", name, "err", err)
		r.drop(s)
		return unreachable(err)
	}
	return res
}

// unreachable is the answer of a call toolq did not answer, in the shape of toolq's own errors.
func unreachable(err error) *mcp.CallToolResult {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{
		"code":    "toolq_unreachable",
		"message": "the bridge could not ask toolq (" + err.Error() + "); try again, or check the URL and the token",
	}})
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(body)}}}
}

// maxRedirects is how many redirects within toolq's own origin are followed, as net/http does.
const maxRedirects = 10

// sameOrigin follows a redirect only within the scheme and host of the URL given: bearer adds the
// token to every request it sends, so a redirect elsewhere (a 302 or a 307 from a misconfigured
// proxy, or from someone who took over a name) would hand it the token. net/http drops the
// Authorization header on such a redirect only when the first request carried it, not when a
// RoundTripper adds it.
func sameOrigin(req *http.Request, via []*http.Request) error {
	from := via[0].URL
	if req.URL.Scheme != from.Scheme || !strings.EqualFold(req.URL.Host, from.Host) {
		return fmt.Errorf("mcpbridge: %s redirected to %s, another scheme or host: not followed, so that the token goes to nobody else (if that is toolq, give it to --url)",
			from.Redacted(), req.URL.Redacted())
	}
	if len(via) >= maxRedirects {
		return fmt.Errorf("mcpbridge: stopped after %d redirects", maxRedirects)
	}
	return nil
}

// bearer adds the token to every request to toolq.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
