package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// rebound is what a browser led by DNS rebinding sends: the attacker's name in Host, and
// same-origin by every other header.
func rebound(host string) map[string]string {
	return map[string]string{"Origin": "http://" + host, "Sec-Fetch-Site": "same-origin"}
}

// TestHostNames: the dashboard answers its own names (its addresses, localhost, --listen's and
// --public-url's hosts, --allowed-host) and refuses every other with 421, whatever the mode.
func TestHostNames(t *testing.T) {
	t.Parallel()
	loopback := harnessConfig{mode: auth.ModeNone, listen: "127.0.0.1:8080"}
	everywhere := harnessConfig{mode: auth.ModeNone, listen: "0.0.0.0:8080", allowInsecure: true}
	allowed := everywhere
	allowed.allowedHosts = []string{"toolq.internal", "toolq.example.com"}
	named := harnessConfig{mode: auth.ModeNone, listen: "toolq.internal:8080", allowInsecure: true}
	public := harnessConfig{mode: auth.ModeNone, listen: "127.0.0.1:8080", publicURL: "https://toolq.example.com/ops"}
	tests := []struct {
		name string
		cfg  harnessConfig
		host string
		want int // GET /api/v1/summary
	}{
		{"loopback address", loopback, "127.0.0.1:8080", 200},
		{"localhost", loopback, "localhost:8080", 200},
		{"localhost without port", loopback, "localhost", 200},
		{"localhost, upper case and fully qualified", loopback, "LOCALHOST.:8080", 200},
		{"::1", loopback, "[::1]:8080", 200},
		{"other loopback address", loopback, "127.0.0.2:8080", 200},
		{"rebound name", loopback, "evil.example:8080", 421},
		{"rebound name without port", loopback, "evil.example", 421},
		{"name that starts like localhost", loopback, "localhost.evil.example:8080", 421},
		{"name that starts like an address", loopback, "127.0.0.1.nip.io:8080", 421},
		{"all interfaces: an address of the machine", everywhere, "10.0.0.5:8080", 200},
		{"all interfaces: an IPv6 address", everywhere, "[fd00::5]:8080", 200},
		{"all interfaces: a name nobody gave", everywhere, "toolq.internal:8080", 421},
		{"an allowed host", allowed, "toolq.internal:8080", 200},
		{"an allowed host, another port", allowed, "toolq.internal", 200},
		{"an allowed host, case and trailing dot", allowed, "Toolq.Example.COM.:443", 200},
		{"an allowed host's subdomain", allowed, "evil.toolq.internal", 421},
		{"the listener's name", named, "toolq.internal:8080", 200},
		{"another name beside the listener's", named, "evil.example:8080", 421},
		{"the public URL's host", public, "toolq.example.com", 200},
		{"another name beside the public URL's", public, "evil.example", 421},
		{"no listener (tests): any name", harnessConfig{mode: auth.ModeNone}, "evil.example", 200},
	}
	// One harness per configuration: the requests change nothing, and a harness costs a
	// simulator, a store and a server.
	harnesses := map[string]*apiHarness{}
	for _, tt := range tests {
		if key := fmt.Sprintf("%+v", tt.cfg); harnesses[key] == nil {
			harnesses[key] = newAPIHarness(t, tt.cfg)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := harnesses[fmt.Sprintf("%+v", tt.cfg)]
			rec := h.do(t, apiRequest{target: "/api/v1/summary", host: tt.host, header: rebound(tt.host)})
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d: %.200s", rec.Code, tt.want, rec.Body)
			}
			if tt.want == 421 {
				if code := errorCode(t, rec.Body.Bytes()); code != "misdirected_request" {
					t.Errorf("code %q, want misdirected_request", code)
				}
			}
			// The probes answer whatever the Host: a load balancer may probe by a name of its own.
			for _, probe := range []string{"/healthz", "/readyz"} {
				if rec := h.do(t, apiRequest{target: probe, host: tt.host}); rec.Code != 200 {
					t.Errorf("%s: status %d", probe, rec.Code)
				}
			}
		})
	}
}

// TestRebindingRefusedInEveryMode: a page whose name was re-bound to the dashboard's address
// is refused before authentication in every auth mode, on every surface, even when the browser
// or the proxy in front adds credentials that would pass (a token, a proxy user in the operator
// group); nothing reaches the actions. The same requests under the dashboard's own name pass,
// which shows that the Host alone refused them.
func TestRebindingRefusedInEveryMode(t *testing.T) {
	t.Parallel()
	const evil, own = "evil.example:8080", "127.0.0.1:8080"
	type mode struct {
		name   string
		cfg    harnessConfig
		remote string
		creds  func(h *apiHarness) map[string]string
	}
	modes := []mode{
		{"none", harnessConfig{mode: auth.ModeNone, listen: "127.0.0.1:8080"}, "", func(*apiHarness) map[string]string { return nil }},
		{"token", harnessConfig{mode: auth.ModeToken, listen: "127.0.0.1:8080"}, "", func(h *apiHarness) map[string]string { return bearer(h.operator) }},
		// docs/api.md's proxy set-up on one machine: the proxy is the dashboard's neighbour.
		{"proxy", harnessConfig{mode: auth.ModeProxy, listen: "127.0.0.1:8080"}, "10.9.0.1:4000", func(*apiHarness) map[string]string {
			return map[string]string{auth.HeaderForwardedUser: "mallory", auth.HeaderForwardedGroups: "sre"}
		}},
		{"proxy on every interface", harnessConfig{mode: auth.ModeProxy, listen: "[::]:8080", allowedHosts: []string{"toolq.internal"}}, "10.9.0.1:4000", func(*apiHarness) map[string]string {
			return map[string]string{auth.HeaderForwardedUser: "mallory", auth.HeaderForwardedGroups: "sre"}
		}},
	}
	const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
	surfaces := []struct {
		name string
		req  apiRequest
	}{
		{"page", apiRequest{target: "/"}},
		{"static asset", apiRequest{target: "/favicon.ico"}},
		{"API read", apiRequest{target: "/api/v1/summary"}},
		{"redrive start", apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: `{}`,
			header: map[string]string{"Content-Type": "application/json"}}},
		{"MCP tools/list", apiRequest{method: http.MethodPost, target: mcpPath, body: toolsList,
			header: map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}}},
		{"websocket", apiRequest{target: "/ws?topic=overview", header: map[string]string{
			"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}}},
		{"event stream", apiRequest{target: "/api/v1/events", header: map[string]string{"Accept": "text/event-stream"}}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			h := newAPIHarness(t, m.cfg)
			send := func(r apiRequest, host string) (int, string) {
				hdr := rebound(host)
				for k, v := range m.creds(h) {
					hdr[k] = v
				}
				for k, v := range r.header {
					hdr[k] = v
				}
				r.header, r.host, r.remote = hdr, host, m.remote
				if r.target == "/api/v1/events" {
					// Let through, a stream never ends by itself: end it once it has answered.
					ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
					defer cancel()
					r.ctx = ctx
				}
				rec := h.do(t, r)
				return rec.Code, rec.Body.String()
			}
			for _, s := range surfaces {
				code, body := send(s.req, evil)
				if code != http.StatusMisdirectedRequest {
					t.Errorf("%s: status %d, want 421: %.200s", s.name, code, body)
					continue
				}
				if isAPIPath(strings.SplitN(s.req.target, "?", 2)[0]) {
					if c := errorCode(t, []byte(body)); c != "misdirected_request" {
						t.Errorf("%s: code %q, want misdirected_request", s.name, c)
					}
				}
			}
			if entries, err := h.w.Store.ListAudit(t.Context(), store.AuditFilter{Limit: 10}); err != nil || len(entries) != 0 {
				t.Errorf("a rebound request reached the actions: %+v, %v", entries, err)
			}

			// Under the dashboard's own name, the same credentials read and see the operator's tools.
			if code, body := send(surfaces[2].req, own); code != http.StatusOK {
				t.Errorf("API read under %s: status %d: %.200s", own, code, body)
			}
			if code, body := send(surfaces[4].req, own); code != http.StatusOK || !strings.Contains(body, `"start_redrive"`) {
				t.Errorf("MCP tools/list under %s: status %d: %.300s", own, code, body)
			}
			if m.cfg.allowedHosts != nil {
				if code, body := send(surfaces[2].req, "toolq.internal"); code != http.StatusOK {
					t.Errorf("API read under an allowed host: status %d: %.200s", code, body)
				}
			}
		})
	}
}
