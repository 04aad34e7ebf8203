package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/web/static"
)

// bodyLimit bounds every request body: the API takes small JSON objects and the pages small
// forms, so anything larger is a mistake or an attack.
const bodyLimit = "64K"

// useMiddleware installs the middleware every request goes through, outermost first.
func (s *Server) useMiddleware(e *echo.Echo) {
	e.Use(
		s.requestID,
		s.accessLog,
		s.compress,
		s.recoverPanics,
		s.securityHeaders,
		s.checkHost,
		middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: bodyLimit}),
		s.authenticate,
		s.rateLimit,
		s.csrf,
	)
}

// requestIDKey is the context key of the request id.
const requestIDKey = "request_id"

// requestID gives every request a fresh id, in the X-Request-Id response header and the logs.
// An incoming X-Request-Id is not trusted: it is client-chosen text.
func (s *Server) requestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		id := hex.EncodeToString(b)
		c.Set(requestIDKey, id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		return next(c)
	}
}

// requestID returns the request's id.
func requestID(c echo.Context) string {
	id, _ := c.Get(requestIDKey).(string)
	return id
}

// accessLog logs one line per request. Errors are answered here, through the error handler, so
// the line carries the status the client got. The query is not logged: it may hold an embed token.
func (s *Server) accessLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		id := identity(c)
		s.log.Info("http",
			"request_id", requestID(c),
			"method", req.Method,
			"path", req.URL.Path,
			"route", c.Path(),
			"status", res.Status,
			"bytes", res.Size,
			"duration_ms", time.Since(start).Milliseconds(),
			"remote", c.RealIP(),
			"actor", id.Name,
		)
		s.metrics.observeRequest(c.Path(), req.Method, res.Status)
		return nil
	}
}

// recoverPanics turns a panic in a handler into a 500 and a logged stack, never a crashed process
// or a stack trace shown to the client.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("panic in handler", "request_id", requestID(c), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("server: panic: %v", r)
		}()
		return next(c)
	}
}

// securityHeaders sets the headers every response carries. The CSP allows no inline script or
// style and no eval; frame-ancestors (not X-Frame-Options) decides who may embed the pages.
func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	csp := contentSecurityPolicy(s.opts.FrameAncestors)
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		if !strings.HasPrefix(c.Request().URL.Path, static.Prefix) {
			// Everything but the static files is per identity and holds data from the queues
			// (exports, metrics, errors alike): no cache, shared or private, may keep a copy.
			// Pages may loosen this for themselves (render).
			h.Set("Cache-Control", "no-store")
		}
		return next(c)
	}
}

// checkHost refuses, before authentication and in every auth mode, a request whose Host is not
// one of toolq's names (see auth.Hosts): that is a browser led there by DNS rebinding, whose page
// would otherwise be same-origin with the dashboard and could read it and start redrives with
// what the browser or the proxy in front adds. The probes answer any Host: a load balancer may
// probe with a name of its own, and they show nothing but that toolq runs.
func (s *Server) checkHost(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.hosts == nil || req.URL.Path == "/healthz" || req.URL.Path == "/readyz" || s.hosts.Allows(req.Host) {
			return next(c)
		}
		s.log.Info("refused a request for a host name toolq was not given", "request_id", requestID(c), "host", req.Host)
		return newError(http.StatusMisdirectedRequest, "misdirected_request",
			"this dashboard does not answer to that host name: reach it by its address, localhost, its --public-url, or a name given to --allowed-host")
	}
}

// contentSecurityPolicy returns the strict CSP with the frame-ancestors allowlist.
func contentSecurityPolicy(frameAncestors []string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; " +
		"frame-ancestors " + strings.Join(frameAncestors, " ")
}

// validFrameAncestors refuses --frame-ancestors values that would break out of the directive.
func validFrameAncestors(values []string) error {
	for _, v := range values {
		if v == "" || strings.ContainsAny(v, ";,\"") || strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			return fmt.Errorf("server: frame ancestor %q is not a CSP source", v)
		}
	}
	return nil
}

// isAPIPath reports whether path belongs to a machine's API: the JSON API, or the MCP endpoint,
// which is rate-limited, answers errors in JSON and takes cookie-borne POSTs only as JSON.
func isAPIPath(path string) bool {
	return path == "/api" || strings.HasPrefix(path, "/api/") || path == mcpPath
}

// publicPath reports whether a path is served without authentication: probes, the login and
// logout pages, and static assets (the login page needs its stylesheet).
func publicPath(path string) bool {
	switch path {
	case "/healthz", "/readyz", "/login", "/logout", "/favicon.ico", "/embed-theme.css":
		return true
	}
	return strings.HasPrefix(path, "/static/")
}

// authenticate establishes the request's identity (c.Get("identity")). Failures answer 401
// (API: JSON; browsers in token mode: a redirect to the login page) or 403.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if publicPath(c.Request().URL.Path) {
			return next(c)
		}
		id, err := s.auth.Authenticate(c.Request())
		if err != nil {
			return s.authFailure(c, err)
		}
		c.Set("identity", id)
		return next(c)
	}
}

// authFailure answers a request whose credentials were refused.
func (s *Server) authFailure(c echo.Context, err error) error {
	switch {
	case errors.Is(err, auth.ErrNoRole):
		return newError(http.StatusForbidden, "forbidden", "your groups give you no role in toolq")
	case errors.Is(err, auth.ErrOutOfScope):
		return newError(http.StatusForbidden, "forbidden", "this embed link does not cover this request")
	case errors.Is(err, auth.ErrNoCredentials), errors.Is(err, auth.ErrInvalidCredentials), errors.Is(err, auth.ErrUntrustedProxy):
	default:
		return err // the store failed: a 500, not the client's fault
	}
	req := c.Request()
	if req.URL.Path == "/ws" && isWebsocket(req) && !errors.Is(err, auth.ErrUntrustedProxy) {
		return s.closeEndedWebsocket(c)
	}
	if !wantsJSON(c) && s.auth.Mode() == auth.ModeToken && req.Method == http.MethodGet && !isWebsocket(req) {
		if _, cerr := req.Cookie(auth.SessionCookie); cerr == nil {
			c.SetCookie(s.auth.LogoutCookie(c.IsTLS())) // expired or revoked: stop sending it
		}
		target := "/login?next=" + url.QueryEscape(req.URL.RequestURI())
		if req.Header.Get("HX-Request") == "true" {
			c.Response().Header().Set("HX-Redirect", target)
			return c.NoContent(http.StatusUnauthorized)
		}
		return c.Redirect(http.StatusSeeOther, target)
	}
	if s.auth.Mode() == auth.ModeToken || req.Header.Get("Authorization") != "" {
		c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="toolq"`)
	}
	msg := "authentication required"
	if errors.Is(err, auth.ErrInvalidCredentials) {
		msg = "the credentials are invalid, expired or revoked"
	}
	return newError(http.StatusUnauthorized, "unauthorized", msg)
}

// isWebsocket reports whether r asks for a websocket upgrade.
func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// rateKey is whose bucket a request draws on: its identity's. Without authentication (--auth
// none, on loopback) everyone is "anonymous" and every local client has the same address, so
// each connection has its own bucket: the agents on one machine, each with its HTTP client and
// its connection (the stdio bridge, an IDE's agent, a script), do not get 429 from each other. A
// client that opens a connection a request spreads its requests over many buckets; on loopback
// that client is the operator's own.
func rateKey(c echo.Context) string {
	id := identity(c)
	if id.Kind == auth.KindNone || id.Kind == "" {
		return "conn:" + c.Request().RemoteAddr
	}
	return string(id.Kind) + ":" + id.Name
}

// rateLimiter keeps one token bucket per identity on the API, so that one runaway bot cannot
// starve the others or the collector's database writes.
type rateLimiter struct {
	limit rate.Limit
	burst int
	mu    sync.Mutex
	byKey map[string]*rate.Limiter
}

// maxLimiters bounds the limiter map: past it the map starts afresh, which at worst gives every
// client a fresh burst (identities are few; this only guards against many proxy users).
const maxLimiters = 10000

func newRateLimiter(perSecond float64, burst int) *rateLimiter {
	if perSecond < 0 {
		return nil
	}
	return &rateLimiter{limit: rate.Limit(perSecond), burst: burst, byKey: make(map[string]*rate.Limiter)}
}

// allow reports whether key may make a request now, and if not how long it should wait.
func (l *rateLimiter) allow(key string, now time.Time) (bool, time.Duration) {
	l.mu.Lock()
	lim, ok := l.byKey[key]
	if !ok {
		if len(l.byKey) >= maxLimiters {
			l.byKey = make(map[string]*rate.Limiter)
		}
		lim = rate.NewLimiter(l.limit, l.burst)
		l.byKey[key] = lim
	}
	l.mu.Unlock()
	if lim.AllowN(now, 1) {
		return true, 0
	}
	r := lim.ReserveN(now, 1)
	defer r.CancelAt(now)
	if !r.OK() {
		return false, time.Second
	}
	return false, r.DelayFrom(now)
}

// rateLimit answers 429 with Retry-After to an identity over its API rate. Pages are not
// limited: a browser loads assets and fragments in bursts.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.limiter == nil || !isAPIPath(c.Request().URL.Path) {
			return next(c)
		}
		ok, wait := s.limiter.allow(rateKey(c), s.opts.Now())
		if !ok {
			secs := int(math.Ceil(wait.Seconds()))
			if secs < 1 {
				secs = 1
			}
			c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
			return newError(http.StatusTooManyRequests, "rate_limited", "too many requests; retry after "+strconv.Itoa(secs)+" s")
		}
		return next(c)
	}
}
