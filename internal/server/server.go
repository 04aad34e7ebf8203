// Package server is toolq's HTTP server: the REST API for bots, the pages for browsers and their
// websockets (served by internal/live), authentication, CSRF and the security headers.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// Options configure a Server. Views, Actions and Bus are required.
type Options struct {
	Views   *views.Service
	Actions *actions.Service
	Bus     *events.Bus
	Logger  *slog.Logger // default: discard

	// Auth authenticates requests. Default: auth "none" (every request is a local operator),
	// which Listen must then allow.
	Auth *auth.Authenticator
	// Listen is the address the server will listen on; auth "none" is refused beyond loopback
	// unless AllowInsecureNoAuth is set. Its host, PublicURL's and Auth's AllowedHosts are the
	// names requests may carry in their Host header, in every auth mode (see auth.Hosts). Empty
	// skips both checks (tests).
	Listen              string
	AllowInsecureNoAuth bool
	// ReadOnly must match the actions service's own ReadOnly (New refuses a mismatch): actions
	// refuse with 403 read_only, audited, and the pages show why buttons are off.
	ReadOnly bool
	// FrameAncestors is the CSP frame-ancestors allowlist; default 'self'.
	FrameAncestors []string
	// Notifier sends test notifications (the status page's button, the API); nil: none.
	Notifier Notifier
	// PublicURL is the address people reach the dashboard at (--public-url, checked with
	// ParsePublicURL): every link toolq writes starts with it. Empty: the request's own address.
	PublicURL string
	// Version and Commit label toolq_build_info and /healthz.
	Version string
	Commit  string
	Now     func() time.Time

	// ScrapeTimeout bounds the views reads of one /metrics scrape (default 5 s): a scrape that
	// takes longer says so in the *_metrics_error gauges rather than hanging Prometheus.
	ScrapeTimeout time.Duration
	// Metrics is the registry /metrics serves; the server adds its own collectors to it (queue
	// gauges, websocket clients, API requests). Default: a new registry.
	Metrics *prometheus.Registry
	// WebsocketRecheck is how often a live websocket checks again the credential it was opened
	// with (session cookie, embed link, Bearer token), so that a sign-out, a revoked token or an
	// expired link ends it (default 15s).
	WebsocketRecheck time.Duration
	// RateLimit is the sustained requests per second allowed to each identity on /api (default
	// 10; negative turns the limit off); RateBurst the burst above it (default 40).
	RateLimit float64
	RateBurst int
}

// Server serves the API, the pages and the websockets.
type Server struct {
	opts    Options
	echo    *echo.Echo
	log     *slog.Logger
	auth    *auth.Authenticator
	limiter *rateLimiter
	// loginByAddr and loginByPrefix throttle sign-in attempts (see loginAllowed).
	loginByAddr, loginByPrefix *rateLimiter
	metrics                    *serverMetrics
	// compress gzips what clients accept compressed (compressResponses).
	compress echo.MiddlewareFunc
	// hosts are the names requests may carry in their Host header (checkHost); nil when
	// Options.Listen is empty (tests).
	hosts *auth.Hosts

	// embedOrigins are the --frame-ancestors origins an embedded page posts its height to.
	embedOrigins []string

	hub *live.Hub[pageView] // the websockets of the live pages
	// overview is the newest snapshot's overview as rendered for the pages and their pushes.
	overview atomic.Pointer[overviewRendering]
	wsQuota  websocketQuota // live websockets per identity

	mcp http.Handler // the MCP endpoint's Streamable HTTP handler (mcp.go)
	// mcpTools are the names of the MCP tools, as addTool registered them.
	mcpTools []string

	streamsDone chan struct{} // closed by EndStreams: every event stream ends
	streamsOnce sync.Once
}

// New builds a Server with every route registered.
func New(opts Options) (*Server, error) {
	if opts.Views == nil || opts.Actions == nil || opts.Bus == nil {
		return nil, errors.New("server: Views, Actions and Bus are required")
	}
	if opts.ReadOnly != opts.Actions.ReadOnly() {
		return nil, errors.New("server: ReadOnly differs from the actions service's; build both from the one --read-only flag")
	}
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.FrameAncestors) == 0 {
		opts.FrameAncestors = []string{"'self'"}
	}
	opts.RateLimit = cmp.Or(opts.RateLimit, 10) // negative stays: no limit
	opts.RateBurst = cmp.Or(max(opts.RateBurst, 0), 40)
	opts.WebsocketRecheck = cmp.Or(max(opts.WebsocketRecheck, 0), 15*time.Second)
	opts.Metrics = cmp.Or(opts.Metrics, prometheus.NewRegistry())
	opts.ScrapeTimeout = cmp.Or(max(opts.ScrapeTimeout, 0), defaultScrapeTimeout)
	if opts.Auth == nil {
		a, err := auth.New(auth.Config{Mode: auth.ModeNone, Logger: opts.Logger})
		if err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
		opts.Auth = a
	}
	if opts.Listen != "" {
		if err := auth.CheckListen(opts.Auth.Mode(), opts.Listen, opts.AllowInsecureNoAuth); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	if err := validFrameAncestors(opts.FrameAncestors); err != nil {
		return nil, err
	}
	publicURL, err := ParsePublicURL(opts.PublicURL)
	if err != nil {
		return nil, err
	}
	opts.PublicURL = publicURL
	for _, name := range opts.Views.Dimensions() {
		if slices.Contains(messageParams, name) {
			return nil, fmt.Errorf("server: dimension %q has the name of a query parameter of the message lists; call it otherwise", name)
		}
	}
	s := &Server{
		embedOrigins: templates.EmbedOrigins(opts.FrameAncestors),
		opts:         opts,
		echo:         echo.New(),
		log:          opts.Logger,
		auth:         opts.Auth,
		limiter:      newRateLimiter(opts.RateLimit, opts.RateBurst),
		streamsDone:  make(chan struct{}),
		// Sign-in attempts are throttled whatever RateLimit says: they guess at credentials.
		loginByAddr:   newRateLimiter(float64(time.Second)/float64(loginEvery), loginBurst),
		loginByPrefix: newRateLimiter(float64(time.Second)/float64(loginEvery), loginBurst),
	}
	if opts.Listen != "" {
		if s.hosts, err = auth.NewHosts(opts.Listen, opts.PublicURL, opts.Auth.AllowedHosts()); err != nil {
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	m, err := newServerMetrics(s)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	if s.compress, err = compressResponses(); err != nil {
		return nil, err
	}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.echo.HTTPErrorHandler = s.handleError
	s.echo.IPExtractor = clientIPExtractor(s.auth)
	s.startHub()
	s.mcp = newMCPHandler(s.mcpServer(), s.log)
	s.routes()
	return s, nil
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Close ends what the server runs besides HTTP (the websocket hub and its connections, the event
// streams), which http.Server.Shutdown does not close.
func (s *Server) Close(ctx context.Context) error {
	s.EndStreams()
	return s.hub.Close(ctx)
}

// routes lists every route: the middleware, the API's routes and the pages'.
func (s *Server) routes() {
	s.useMiddleware(s.echo)
	s.apiRoutes(s.echo)
	s.pageRoutes(s.echo)
}

// identity returns who made the request (set by the auth middleware).
func identity(c echo.Context) auth.Identity {
	if id, ok := c.Get("identity").(auth.Identity); ok {
		return id
	}
	return auth.Identity{}
}

// clientIPExtractor returns how the audit log and the rate limiter learn the client's address:
// the direct peer, or in proxy mode the client a trusted proxy names in X-Forwarded-For (never a
// header an arbitrary client set).
func clientIPExtractor(a *auth.Authenticator) echo.IPExtractor {
	direct := echo.ExtractIPDirect()
	if a.Mode() != auth.ModeProxy {
		return direct
	}
	// Only the proxies are trusted to name a client: echo would also trust loopback, link-local
	// and private addresses, so a client inside the network could claim any address by
	// starting X-Forwarded-For with it.
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, p := range a.TrustedProxies() {
		if _, n, err := net.ParseCIDR(p.String()); err == nil {
			opts = append(opts, echo.TrustIPRange(n))
		}
	}
	forwarded := echo.ExtractIPFromXFFHeader(opts...)
	return func(r *http.Request) string {
		if a.TrustedPeer(r.RemoteAddr) {
			return forwarded(r)
		}
		return direct(r)
	}
}
