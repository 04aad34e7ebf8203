package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/tracelink"
	"github.com/toolq/toolq/internal/views"
)

// apiHarness is the real router (server.New) on a real store, views and actions over the
// simulator, with tokens for each role.
type apiHarness struct {
	w        *actionstest.World
	srv      *Server
	registry *prometheus.Registry
	auth     *auth.Authenticator
	bus      *events.Bus

	operator, viewer, revoked string // plain tokens
}

// harnessConfig varies a harness.
type harnessConfig struct {
	mode      auth.Mode
	readOnly  bool
	rateLimit float64
	rateBurst int
	frame     []string
	// listen and allowInsecure are passed to Options: empty listen skips the listener checks.
	listen        string
	allowInsecure bool
	// sessionKey signs sessions and embed links; default random. A test that must sign a link
	// the authenticator refuses to make sets it.
	sessionKey []byte
	// websocketRecheck is how often websockets check their credential again; default the
	// server's.
	websocketRecheck time.Duration
	// publicURL is --public-url; allowedHosts is --allowed-host.
	publicURL    string
	allowedHosts []string
	// scrapeTimeout is Options.ScrapeTimeout; default the server's.
	scrapeTimeout time.Duration
	// db is the store's database (a postgres:// URL from pgtest.DB); default a SQLite file.
	db string
}

// harnessDimensions are the dimensions of the harness's tool calls.
var harnessDimensions = []string{"mcpServer", "error"}

// harnessTraceURL is the harnesses' --trace-url.
func harnessTraceURL(t testing.TB) tracelink.Template {
	t.Helper()
	tmpl, err := tracelink.ParseTemplate("https://grafana.example/explore?traceId={traceId}")
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// trustedProxy is the proxy network of the proxy-mode harness.
const trustedProxy = "10.9.0.0/16"

// newAPIHarness builds the world: orders → orders-dlq (standard, 5 messages in the DLQ, a
// sampled message with hostile content), calls.fifo → calls-dlq.fifo, and tokens.
func newAPIHarness(t testing.TB, cfg harnessConfig) *apiHarness {
	t.Helper()
	ctx := context.Background()
	w := actionstest.New(t)
	if cfg.db != "" {
		w = actionstest.NewOn(t, cfg.db)
	}
	w.CreateQueue(t, "orders-dlq", "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.CreateQueue(t, "orders", "orders-dlq", nil)
	w.CreateQueue(t, "calls-dlq.fifo", "", nil)
	w.CreateQueue(t, "calls.fifo", "calls-dlq.fifo", nil)
	w.DeadLetter(t, "orders", 5)
	w.Watch(t, "orders-dlq", "orders", "calls-dlq.fifo", "calls.fifo")

	dlq, err := w.Store.GetQueueByARN(ctx, w.ARN("orders-dlq"))
	if err != nil {
		t.Fatalf("GetQueueByARN: %v", err)
	}
	now := w.Now()
	if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: now, Seen: 2, ApproxVisible: 5, Receives: 1, MessagesTaken: 2},
		[]store.SampledMessage{
			{QueueID: dlq.ID, MessageID: "m-1", ReceiveCount: 1, SentAt: now.Add(-time.Minute), Body: `{"toolName":"create_document","toolArgs":{"html":"<script>alert(1)</script>"}}`, BodySize: 80, ToolName: "create_document", DeadLetterSourceARN: w.ARN("orders"),
				Attributes: []store.MessageAttribute{{Name: "x", DataType: "String", Value: `"><img src=x onerror=alert(1)>`}},
				Dimensions: map[string]string{"mcpServer": "docs-legacy", "error": "connection_refused"}},
			{QueueID: dlq.ID, MessageID: "m-2", ReceiveCount: 1, SentAt: now.Add(-time.Minute), Body: "not json \u202e", BodySize: 12, DeadLetterSourceARN: w.ARN("orders"),
				Dimensions: map[string]string{"mcpServer": `<img src=x onerror=alert(2)>`}},
		}, nil); err != nil {
		t.Fatalf("SaveSample: %v", err)
	}

	// The views know the harness's dimensions, as app.New tells them the collector's.
	w.Views = views.New(views.Options{Store: w.Store, Now: w.Clock.Now, Dimensions: harnessDimensions, ErrorDimension: "error",
		TraceURL: harnessTraceURL(t)})
	h := &apiHarness{w: w, registry: prometheus.NewRegistry()}
	if cfg.mode == "" {
		cfg.mode = auth.ModeToken
	}
	proxies, _ := auth.ParseProxies([]string{trustedProxy})
	h.auth, err = auth.New(auth.Config{Mode: cfg.mode, Store: w.Store, TrustedProxies: proxies,
		ProxyOperatorGroups: []string{"sre"}, ProxyDefaultRole: auth.RoleViewer, SessionKey: cfg.sessionKey, Now: w.Now,
		AllowedHosts: cfg.allowedHosts})
	if err != nil {
		t.Fatalf("auth.New: %v", err)
	}
	for _, tk := range []struct {
		name string
		role auth.Role
		dst  *string
	}{{"ops-bot", auth.RoleOperator, &h.operator}, {"status-bot", auth.RoleViewer, &h.viewer}, {"old-bot", auth.RoleOperator, &h.revoked}} {
		if *tk.dst, err = auth.CreateToken(ctx, w.Store, tk.name, tk.role); err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
	}
	if err := auth.RevokeToken(ctx, w.Store, "old-bot"); err != nil {
		t.Fatal(err)
	}
	act := w.Actions(actions.Options{ReadOnly: cfg.readOnly, Registerer: h.registry, Confirmations: h.auth,
		Dimensions: harnessDimensions, ErrorDimension: "error"})
	if cfg.rateLimit == 0 {
		cfg.rateLimit = -1 // off unless a test is about it
	}
	h.bus = events.NewBus()
	h.srv, err = New(Options{
		Views: w.Views, Actions: act, Bus: h.bus, Auth: h.auth,
		ReadOnly: cfg.readOnly, Now: w.Now, Metrics: h.registry, FrameAncestors: cfg.frame,
		RateLimit: cfg.rateLimit, RateBurst: cfg.rateBurst, Version: "test",
		Listen: cfg.listen, AllowInsecureNoAuth: cfg.allowInsecure, WebsocketRecheck: cfg.websocketRecheck,
		PublicURL: cfg.publicURL, ScrapeTimeout: cfg.scrapeTimeout,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { h.srv.Close(context.Background()) })
	return h
}

// apiRequest is one request to the harness.
type apiRequest struct {
	method, target, body string
	header               map[string]string
	cookies              []*http.Cookie
	remote               string
	host                 string // the Host header; default example.com
	// ctx ends the request (an event stream never ends by itself); default none.
	ctx context.Context
}

// do sends r through the real router, and checks an API answer against the OpenAPI document.
func (h *apiHarness) do(t *testing.T, r apiRequest) *httptest.ResponseRecorder {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var body io.Reader
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	req := httptest.NewRequest(r.method, r.target, body)
	if r.ctx != nil {
		req = req.WithContext(r.ctx)
	}
	if r.remote != "" {
		req.RemoteAddr = r.remote
	}
	if r.host != "" {
		req.Host = r.host
	}
	for k, v := range r.header {
		req.Header.Set(k, v)
	}
	for _, c := range r.cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(rec, req)
	checkContract(t, req, rec)
	return rec
}

// bearer returns the Authorization header of a token.
func bearer(token string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + token}
}

// jsonPost returns headers of a JSON POST with a token.
func jsonPost(token string) map[string]string {
	h := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	return h
}
