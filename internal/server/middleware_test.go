package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// identityCase is one caller of the auth matrix.
type identityCase struct {
	name    string
	cfg     harnessConfig
	header  func(h *apiHarness) map[string]string
	remote  string
	read    int // GET /api/v1/queues
	act     int // POST .../redrives then .../redrives/cancel; allowed: 202 then 200
	metrics int // GET /metrics
}

// allowed marks an identity that may act, in the act column of the matrix.
const allowed = 0

func TestAuthMatrix(t *testing.T) {
	t.Parallel()
	none := func(*apiHarness) map[string]string { return nil }
	tok := func(pick func(h *apiHarness) string) func(h *apiHarness) map[string]string {
		return func(h *apiHarness) map[string]string { return bearer(pick(h)) }
	}
	proxy := func(user, groups string) func(*apiHarness) map[string]string {
		return func(*apiHarness) map[string]string {
			return map[string]string{auth.HeaderForwardedUser: user, auth.HeaderForwardedGroups: groups}
		}
	}
	token := harnessConfig{mode: auth.ModeToken}
	cases := []identityCase{
		{"anonymous", token, none, "", 401, 401, 401},
		{"bad token", token, func(*apiHarness) map[string]string { return bearer("tq_notatoken") }, "", 401, 401, 401},
		{"not bearer", token, func(h *apiHarness) map[string]string {
			return map[string]string{"Authorization": "Basic " + h.operator}
		}, "", 401, 401, 401},
		{"revoked token", token, tok(func(h *apiHarness) string { return h.revoked }), "", 401, 401, 401},
		{"viewer", token, tok(func(h *apiHarness) string { return h.viewer }), "", 200, 403, 200},
		{"operator", token, tok(func(h *apiHarness) string { return h.operator }), "", 200, allowed, 200},
		{"proxy headers in token mode", token, proxy("mallory", "sre"), "10.9.0.1:4000", 401, 401, 401},
		{"proxy operator, trusted", harnessConfig{mode: auth.ModeProxy}, proxy("carol", "dev,sre"), "10.9.0.1:4000", 200, allowed, 200},
		{"proxy viewer, trusted", harnessConfig{mode: auth.ModeProxy}, proxy("dave", "dev"), "10.9.0.1:4000", 200, 403, 200},
		{"proxy user, untrusted", harnessConfig{mode: auth.ModeProxy}, proxy("mallory", "sre"), "203.0.113.9:4000", 401, 401, 401},
		{"proxy mode, no headers", harnessConfig{mode: auth.ModeProxy}, none, "10.9.0.1:4000", 401, 401, 401},
		{"proxy mode, bot token", harnessConfig{mode: auth.ModeProxy}, tok(func(h *apiHarness) string { return h.operator }), "203.0.113.9:4000", 200, allowed, 200},
		{"read-only operator", harnessConfig{mode: auth.ModeToken, readOnly: true}, tok(func(h *apiHarness) string { return h.operator }), "", 200, 403, 200},
		{"auth none", harnessConfig{mode: auth.ModeNone}, none, "", 200, allowed, 200},
		{"auth none, read-only", harnessConfig{mode: auth.ModeNone, readOnly: true}, none, "", 200, 403, 200},
	}
	for _, ic := range cases {
		t.Run(ic.name, func(t *testing.T) {
			h := newAPIHarness(t, ic.cfg)
			hdr := ic.header(h)
			with := func(extra map[string]string) map[string]string {
				m := map[string]string{}
				for k, v := range hdr {
					m[k] = v
				}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			type check struct {
				method, target string
				header         map[string]string
				want           int
			}
			jsonHeader := with(map[string]string{"Content-Type": "application/json"})
			start := check{http.MethodPost, "/api/v1/queues/orders-dlq/redrives", jsonHeader, ic.act}
			cancel := check{http.MethodPost, "/api/v1/queues/orders-dlq/redrives/cancel", jsonHeader, ic.act}
			if ic.act == allowed {
				start.want, cancel.want = http.StatusAccepted, http.StatusOK
			}
			checks := []check{
				start, cancel, // in this order: the cancel finds the task the start made
				{http.MethodGet, "/metrics", with(nil), ic.metrics},
				{http.MethodGet, "/healthz", with(nil), 200},
			}
			// Every other route of the API, so that one added later is in the matrix too: reads
			// get ic.read; an embed link is a read-only credential, so readers may make one.
			for _, r := range h.srv.echo.Routes() {
				redrive := r.Method == http.MethodPost && (strings.HasSuffix(r.Path, "/redrives") || strings.HasSuffix(r.Path, "/cancel"))
				if !isAPIPath(r.Path) || (r.Method != http.MethodGet && r.Method != http.MethodPost) || redrive {
					continue // the redrives are the start and cancel above, in that order
				}
				c := check{r.Method, strings.NewReplacer(":queue", "orders-dlq", ":messageId", "m-1", ":redriveId", "1").Replace(r.Path), with(nil), ic.read}
				if r.Method == http.MethodPost {
					c.header = with(map[string]string{"Content-Type": "application/json"})
				}
				if r.Path == "/api/v1/embed-links" && c.want == http.StatusOK {
					c.want = http.StatusBadRequest // authorised; the empty body is then refused
				}
				if r.Path == "/api/v1/queues/:queue/redrives/:redriveId" && c.want == http.StatusOK && ic.act != allowed {
					c.want = http.StatusNotFound // authorised; this caller's start was refused, so there is no redrive 1
				}
				if r.Path == "/api/v1/queues/:queue/archive/:messageId" && c.want == http.StatusOK {
					c.want = http.StatusNotFound // authorised; the archive is empty
				}
				if strings.HasSuffix(r.Path, "/discards") || strings.HasSuffix(r.Path, "/archive/restores") {
					// Actions, as a start is; an operator's empty body is then refused: no selection.
					c.want = ic.act
					if ic.act == allowed {
						c.want = http.StatusUnprocessableEntity
					}
				}
				if r.Path == "/api/v1/notifications/test" && c.want == http.StatusOK {
					c.want = http.StatusNotFound // authorised; the harness has no notification target
				}
				if r.Path == mcpPath {
					// An MCP client's first request; a GET is authorised, then refused: the
					// stateless endpoint opens no stream.
					c.header = with(map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
					if r.Method == http.MethodGet && c.want == http.StatusOK {
						c.want = http.StatusMethodNotAllowed
					}
				}
				checks = append(checks, c)
			}
			if len(checks) < 15 {
				t.Fatalf("only %d checks: the route walk is broken", len(checks))
			}
			for _, c := range checks {
				req := apiRequest{method: c.method, target: c.target, header: c.header, remote: ic.remote}
				if c.target == mcpPath && c.method == http.MethodPost {
					req.body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"matrix","version":"1"}}}`
				}
				if c.target == "/api/v1/events" {
					// A stream never ends by itself: end it once it has answered.
					ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
					defer cancel()
					req.ctx = ctx
				}
				rec := h.do(t, req)
				if rec.Code != c.want {
					t.Errorf("%s %s: status %d, want %d: %.200s", c.method, c.target, rec.Code, c.want, rec.Body)
					continue
				}
				if c.want >= 400 && strings.HasPrefix(c.target, "/api/") {
					code := errorCode(t, rec.Body.Bytes())
					if c.want == 403 && ic.cfg.readOnly && code != "read_only" {
						t.Errorf("%s: code %q, want read_only", c.target, code)
					}
				}
				if c.want == 401 && ic.cfg.mode == auth.ModeToken && rec.Header().Get("WWW-Authenticate") == "" {
					t.Errorf("%s: 401 without WWW-Authenticate", c.target)
				}
			}
		})
	}
}

func TestBrowserWithoutSessionGoesToLogin(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	rec := h.do(t, apiRequest{target: "/queues/orders-dlq?embed=1"})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login?next=%2Fqueues%2Forders-dlq%3Fembed%3D1" {
		t.Errorf("status %d, Location %q", rec.Code, rec.Header().Get("Location"))
	}
	rec = h.do(t, apiRequest{target: "/", header: map[string]string{"HX-Request": "true"}})
	if rec.Code != http.StatusUnauthorized || !strings.HasPrefix(rec.Header().Get("HX-Redirect"), "/login") {
		t.Errorf("HTMX: status %d, HX-Redirect %q", rec.Code, rec.Header().Get("HX-Redirect"))
	}
	// Probes and the login page need no credentials.
	for _, target := range []string{"/healthz", "/readyz", "/login"} {
		if rec := h.do(t, apiRequest{target: target}); rec.Code == http.StatusUnauthorized || rec.Code == http.StatusSeeOther {
			t.Errorf("%s: status %d", target, rec.Code)
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeNone})
	for _, target := range []string{"/api/v1/queues", "/api/v1/nope", "/", "/queues/nope", "/healthz", "/login"} {
		rec := h.do(t, apiRequest{target: target})
		csp := rec.Header().Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data:",
			"connect-src 'self'", "form-action 'self'", "base-uri 'none'", "frame-ancestors 'self'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %q", target, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") || strings.Contains(csp, "*") {
			t.Errorf("%s: CSP %q is not strict", target, csp)
		}
		if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Referrer-Policy") != "same-origin" {
			t.Errorf("%s: headers %v", target, rec.Header())
		}
		if rec.Header().Get("X-Frame-Options") != "" {
			t.Errorf("%s: X-Frame-Options set; frame-ancestors decides", target)
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Errorf("%s: no request id", target)
		}
	}
	// Data from the queues, in any form, is never kept by a cache; pages at least not by a shared one.
	for _, tt := range []struct{ target, want string }{
		{"/api/v1/queues", "no-store"},
		{"/api/v1/nope", "no-store"},
		{"/metrics", "no-store"},
		{"/healthz", "no-store"},
		{"/queues/orders-dlq/messages.csv", "no-store"},
		{"/queues/orders-dlq/messages.json", "no-store"},
		{"/ws?topic=overview", "private"}, // not an upgrade: an error page
		{"/", "private"},
		{"/queues/orders-dlq/messages/m-1", "private"},
		{"/queues/nope", "private"},
	} {
		if cc := h.do(t, apiRequest{target: tt.target}).Header().Get("Cache-Control"); !strings.Contains(cc, tt.want) {
			t.Errorf("%s: Cache-Control %q, want %s", tt.target, cc, tt.want)
		}
	}
	h = newAPIHarness(t, harnessConfig{mode: auth.ModeNone, frame: []string{"'self'", "https://portal.example.com"}})
	if csp := h.do(t, apiRequest{target: "/healthz"}).Header().Get("Content-Security-Policy"); !strings.HasSuffix(csp, "frame-ancestors 'self' https://portal.example.com") {
		t.Errorf("CSP = %q", csp)
	}
	if err := validFrameAncestors([]string{"https://a.example; script-src *"}); err == nil {
		t.Error("a frame ancestor with ';' accepted")
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken, rateLimit: 1, rateBurst: 2})
	codes := []int{}
	for range 3 {
		codes = append(codes, h.do(t, apiRequest{target: "/api/v1/queues", header: bearer(h.viewer)}).Code)
	}
	rec := h.do(t, apiRequest{target: "/api/v1/queues", header: bearer(h.viewer)})
	if codes[0] != 200 || codes[1] != 200 || rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("codes %v then %d (Retry-After %q)", codes, rec.Code, rec.Header().Get("Retry-After"))
	}
	if code := errorCode(t, rec.Body.Bytes()); code != "rate_limited" {
		t.Errorf("code %q", code)
	}
	// Another identity has its own bucket; time refills the first.
	if rec := h.do(t, apiRequest{target: "/api/v1/queues", header: bearer(h.operator)}); rec.Code != 200 {
		t.Errorf("operator: %d", rec.Code)
	}
	h.w.Clock.Advance(2 * time.Second)
	if rec := h.do(t, apiRequest{target: "/api/v1/queues", header: bearer(h.viewer)}); rec.Code != 200 {
		t.Errorf("viewer after 2 s: %d", rec.Code)
	}
}

// TestReadyz: /readyz answers 200 once a first discovery has ended, whatever AWS says since:
// an AWS outage shows on the pages, and must not take the dashboard out of its Service.
func TestReadyz(t *testing.T) {
	t.Parallel()
	w := actionstest.New(t)
	srv, err := New(Options{Views: w.Views, Actions: w.Actions(actions.Options{}), Bus: events.NewBus(), Now: w.Now, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(context.Background()) })
	get := func(target string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		return rec
	}
	if rec := get("/readyz"); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "the first discovery has not ended yet") {
		t.Fatalf("before a discovery: %d %s", rec.Code, rec.Body)
	}
	w.CreateQueue(t, "orders-dlq", "", nil)
	w.Watch(t, "orders-dlq")
	if rec := get("/readyz"); rec.Code != http.StatusOK {
		t.Fatalf("after a discovery: %d %s", rec.Code, rec.Body)
	}
	// Ten minutes without a cycle that read anything: still ready.
	w.Advance(10 * time.Minute)
	if rec := get("/readyz"); rec.Code != http.StatusOK {
		t.Errorf("during an outage: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/healthz"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"version":"test"`) {
		t.Errorf("healthz: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/api/v1/status"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"database":{"engine":"sqlite","ok":true}`) {
		t.Errorf("status with a sound database: %d %s", rec.Code, rec.Body)
	}
	// The database file goes while the server runs: SQLite goes on with the deleted file, and
	// readiness and the status page say so.
	for _, p := range []string{w.DBPath, w.DBPath + "-wal", w.DBPath + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	const gone = "the database file was deleted or replaced while toolq ran"
	if rec := get("/readyz"); rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), gone) {
		t.Errorf("readyz after the file went: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/api/v1/status"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"database":{"engine":"sqlite","ok":false,"problem":"`+gone) {
		t.Errorf("API status after the file went: %d %s", rec.Code, rec.Body)
	}
	if rec := get("/status"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), gone) {
		t.Errorf("status page after the file went: %d, says nothing of it", rec.Code)
	}
	if rec := get("/healthz"); rec.Code != http.StatusOK {
		t.Errorf("healthz after the file went: %d (the process lives: liveness holds)", rec.Code)
	}
}

func TestPanicIsA500WithoutDetail(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeNone})
	h.srv.echo.GET("/api/v1/test-panic", func(echo.Context) error { panic("secret internal state") })
	rec := h.do(t, apiRequest{target: "/api/v1/test-panic"})
	if rec.Code != http.StatusInternalServerError || errorCode(t, rec.Body.Bytes()) != "internal_error" || strings.Contains(rec.Body.String(), "secret") {
		t.Errorf("status %d: %s", rec.Code, rec.Body)
	}
}

func TestServerOptions(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	base := h.srv.opts
	base.Metrics = nil
	o := base
	o.ReadOnly = true // the actions service is writable
	if _, err := New(o); err == nil {
		t.Error("ReadOnly mismatch accepted")
	}
	for _, tt := range []struct {
		listen, force bool
		addr          string
	}{
		{false, false, "0.0.0.0:8080"},
		{false, false, "[::]:8080"},
		{false, false, ":8080"},
		{false, false, "192.168.1.20:8080"},
		{true, false, "127.0.0.1:8080"},
		{true, false, "[::1]:8080"},
		{true, false, "localhost:8080"},
		{true, true, "0.0.0.0:8080"},
		{true, true, "[::]:8080"},
	} {
		t.Run("auth none on "+tt.addr, func(t *testing.T) {
			o := base
			o.Auth, o.Listen, o.AllowInsecureNoAuth = nil, tt.addr, tt.force
			_, err := New(o)
			if (err == nil) != tt.listen {
				t.Errorf("New(auth none, %s, forced %v) = %v; want started %v", tt.addr, tt.force, err, tt.listen)
			}
		})
	}
}

func TestClientAddressInAudit(t *testing.T) {
	t.Parallel()
	proxyUser := map[string]string{auth.HeaderForwardedUser: "carol", auth.HeaderForwardedGroups: "sre"}
	tests := []struct {
		name   string
		remote string // the direct peer; 10.9.0.0/16 is the trusted proxy
		header map[string]string
		xff    string // X-Forwarded-For as it reaches toolq (the proxy appends the address it saw)
		actor  string
		want   string
	}{
		{"named by the trusted proxy", "10.9.0.1:4000", proxyUser, "198.51.100.7", "carol", "198.51.100.7"},
		{"through two trusted proxies", "10.9.0.1:4000", proxyUser, "198.51.100.7, 10.9.0.2", "carol", "198.51.100.7"},
		// Echo trusts private, loopback and link-local addresses unless told not to: a client
		// inside the network (10.20.0.5) would then be recorded as whatever it put first.
		{"client on a private network spoofing", "10.9.0.1:4000", proxyUser, "198.51.100.66, 10.20.0.5", "carol", "10.20.0.5"},
		{"client on loopback spoofing", "10.9.0.1:4000", proxyUser, "198.51.100.66, 127.0.0.1", "carol", "127.0.0.1"},
		{"client on a link-local address spoofing", "10.9.0.1:4000", proxyUser, "198.51.100.66, 169.254.1.1", "carol", "169.254.1.1"},
		// A client that sets X-Forwarded-For itself, straight to toolq, is recorded by its own address.
		{"untrusted peer", "203.0.113.9:4000", nil, "198.51.100.7", "ops-bot", "203.0.113.9"},
		{"untrusted peer on a private network", "192.168.1.20:4000", nil, "198.51.100.7", "ops-bot", "192.168.1.20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAPIHarness(t, harnessConfig{mode: auth.ModeProxy})
			hdr := map[string]string{"Content-Type": "application/json", "X-Forwarded-For": tt.xff}
			for k, v := range tt.header {
				hdr[k] = v
			}
			if tt.header == nil {
				hdr["Authorization"] = "Bearer " + h.operator
			}
			h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives/cancel", header: hdr, remote: tt.remote})
			entries, err := h.w.Store.ListAudit(context.Background(), store.AuditFilter{Limit: 1})
			if err != nil || len(entries) != 1 || entries[0].RemoteAddr != tt.want || entries[0].Actor != tt.actor {
				t.Fatalf("audit = %+v, %v; want %s from %s", entries, err, tt.actor, tt.want)
			}
		})
	}
}
