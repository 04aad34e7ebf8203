// Package server is toolq's HTTP server: the REST API for bots, the pages for browsers, the
// websocket hub that keeps pages live, authentication, CSRF and the security headers.
package server

// Ownership while the first version is built: the API side (api_*.go, auth middleware, CSRF,
// errors, metrics, openapi) and the page side (pages_*.go, hub.go, templates) are written by two
// people at once. Each side registers its routes in its own function below; both are called from
// routes(), the one place that lists every route.

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Options configure a Server. Views, Actions, Store and Bus are required.
type Options struct {
	Views   *views.Service
	Actions *actions.Service
	Store   *store.Store
	Bus     *events.Bus
	Logger  *slog.Logger // default: discard

	// Listen is the address the server will listen on; auth "none" is refused beyond loopback
	// unless AllowInsecureNoAuth is set.
	Listen              string
	AllowInsecureNoAuth bool
	ReadOnly            bool
	// FrameAncestors is the CSP frame-ancestors allowlist; default 'self'.
	FrameAncestors []string
	Version        string
	// ReadyAfter: /readyz fails when the last attribute cycle is older than this (default 2m).
	ReadyAfter time.Duration
	Now        func() time.Time
}

// Server serves the API, the pages and the websockets.
type Server struct {
	opts Options
	echo *echo.Echo
	log  *slog.Logger
}

// New builds a Server with every route registered.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, echo: echo.New(), log: opts.Logger}
	s.echo.HideBanner = true
	s.echo.HidePort = true
	s.routes()
	return s, nil
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Close ends what the server runs besides HTTP (the websocket hub and its connections), which
// http.Server.Shutdown does not close.
func (s *Server) Close(ctx context.Context) error { return nil }

// routes lists every route: the API side's and the page side's.
func (s *Server) routes() {
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
