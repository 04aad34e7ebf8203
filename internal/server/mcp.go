package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/mcpbridge"
)

// The MCP endpoint: AI agents call toolq's tools over the Model Context Protocol's Streamable
// HTTP transport at /mcp, on the dashboard's own listener. It is a machine API like /api/v1 and
// goes through the same middleware: the authentication (Bearer tokens, --auth proxy identities),
// the rate limit per identity, the JSON-only rule for cookie-borne POSTs. The tools call what the
// API's handlers call (mcp_tools.go), and the actions audit every attempt with the caller's name.
//
// The server is stateless (each POST is a session of its own, as the SDK's Stateless mode
// serves it): every request is authenticated afresh, a revoked token ends an agent's access at
// its next call, replicas behind a load balancer need no sticky sessions, and nothing is kept
// between calls but the signed confirmation tokens an agent carries itself.

// mcpPath is where the MCP endpoint is served.
const mcpPath = "/mcp"

// mcpCaller is who calls a tool, as the middleware established it for the HTTP request that
// carries the call.
type mcpCaller struct {
	identity auth.Identity
	actor    actions.Actor
	// baseURL is the dashboard's address, for the links the tools write.
	baseURL string
	// answers are the request's tools' answers, encoded, until its writer writes them.
	answers *mcpAnswers
}

type mcpCallerKey struct{}

// mcpCallerOf returns the caller of the request a tool call came in.
func mcpCallerOf(ctx context.Context) (mcpCaller, bool) {
	c, ok := ctx.Value(mcpCallerKey{}).(mcpCaller)
	return c, ok
}

// newMCPHandler returns the Streamable HTTP handler of the tools. The SDK's own rebinding check
// is off: it refuses every request whose Host is not loopback when the listener is, which would
// refuse a reverse proxy on the same machine (--auth proxy); checkHost refuses a rebound Host
// before authentication, in every mode, with toolq's own names, and serveMCP checks the Origin.
func newMCPHandler(srv *mcp.Server, log *slog.Logger) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless:                  true,
		JSONResponse:               true,
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        64 << 10, // as bodyLimit
		Logger:                     log,
	})
}

// serveMCP answers /mcp. The MCP specification requires the Origin of every request to be
// checked (a web page must not drive a local server, whatever the method); the caller's identity
// goes to the tools in the request's context, which the SDK's stateless sessions keep.
func (s *Server) serveMCP(c echo.Context) error {
	req := c.Request()
	if crossSite(req) {
		return newError(http.StatusForbidden, "cross_site", "cross-origin requests to the MCP endpoint are refused")
	}
	if req.Method == http.MethodPost {
		refusal, err := refuseMessage(req)
		if err != nil {
			return err
		}
		if refusal != nil {
			return c.JSONBlob(http.StatusBadRequest, refusal)
		}
	}
	answers := &mcpAnswers{}
	ctx := context.WithValue(req.Context(), mcpCallerKey{}, mcpCaller{identity: identity(c), actor: actor(c), baseURL: s.baseURL(c), answers: answers})
	s.mcp.ServeHTTP(splicingWriter{ResponseWriter: c.Response(), answers: answers}, req.WithContext(ctx))
	if n := answers.unwritten(); n > 0 {
		// A client that went away, or a message the SDK wrote in pieces: the latter would hand a
		// client a placeholder, which the tests would see.
		s.log.Warn("MCP answers not written", "answers", n)
	}
	return nil
}

// refuseMessage reads a POST's body and returns the JSON-RPC error that refuses it, if it is
// not one request or notification the tools may be handed:
//   - a batch: one POST carrying many tool calls would pass the rate limit as one request, and
//     the protocol's versions since 2025-06-18 have no batches;
//   - a message that names a member twice ({"name":"get_queue","name":"start_redrive"}): the SDK
//     takes the last, where a proxy or a log may read the first, and the API refuses such a body
//     (a call's arguments are the tool's to refuse, with the API's invalid_json: toolArgs);
//   - a response or an error: a stateless server sends no requests to clients (the SDK refuses
//     them), so no answer from a client is awaited, and the SDK would accept one with 202.
//
// A body that is not JSON is left to the SDK, which answers 400. The refusal is a JSON-RPC error,
// as the stdio bridge answers such a line: the SDK's clients surface its message, where they
// would only say "Bad Request" of the API's error shape.
func refuseMessage(req *http.Request) ([]byte, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err // over the body limit: 413
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	if !json.Valid(body) {
		return nil, nil
	}
	if bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("[")) {
		return mcpbridge.Refusal(nil, jsonrpc.CodeInvalidRequest, "invalid_json: JSON-RPC batches are not served: send one message a request"), nil
	}
	if errors.Is(walkNames(body, nil, []string{"params", "arguments"}), errNamedTwice) {
		return mcpbridge.Refusal(body, jsonrpc.CodeInvalidRequest, "invalid_json: the message names a member twice: name each once"), nil
	}
	if msg, err := jsonrpc.DecodeMessage(body); err == nil {
		if _, isResponse := msg.(*jsonrpc.Response); isResponse {
			return mcpbridge.Refusal(body, jsonrpc.CodeInvalidRequest, "invalid_request: toolq sends no requests to MCP clients, so it takes no responses or errors: send requests and notifications only"), nil
		}
	}
	return nil, nil
}
