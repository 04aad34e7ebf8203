package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/web/templates"
)

// render answers with a component as HTML, with the request's context and the given status. It
// renders into a buffer first, so that a failure half-way becomes a clean error page rather than
// a truncated one.
func render(c echo.Context, status int, component templ.Component) error {
	var buf bytes.Buffer
	if err := component.Render(c.Request().Context(), &buf); err != nil {
		return fmt.Errorf("render: %w", err)
	}
	h := c.Response().Header()
	// The same URL answers a page or a fragment depending on HX-Request; pages are per user.
	h.Add("Vary", "HX-Request")
	h.Set("Cache-Control", "no-cache, private")
	return c.HTMLBlob(status, buf.Bytes()) // written (or copied by the compressor) before it returns
}

// renderBytes renders a component once for the hub, which sends the same bytes to every
// subscriber.
func renderBytes(ctx context.Context, component templ.Component) ([]byte, error) {
	var buf bytes.Buffer
	if err := component.Render(ctx, &buf); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	return buf.Bytes(), nil
}

// isHTMX reports whether the request wants a fragment: an HTMX request, but not a boosted
// navigation nor a history restore, which both want the whole page.
func isHTMX(c echo.Context) bool {
	h := c.Request().Header
	return h.Get("HX-Request") == "true" && h.Get("HX-Boosted") != "true" && h.Get("HX-History-Restore-Request") != "true"
}

// navOf returns what links must carry along from this request: embed mode and its token.
func navOf(c echo.Context) templates.Nav {
	n := templates.Nav{
		Embed:      c.QueryParam("embed") == "1",
		EmbedToken: c.QueryParam(auth.EmbedParam),
	}
	if n.Embed {
		n.Theme = templates.ParseEmbedTheme(c.QueryParam("theme"))
		n.Colors, _ = templates.ParseEmbedColors(c.QueryParam("colors"))
	}
	return n
}

// page returns what the layout needs for this request. A failure to read the freshness does not
// fail the page: the layout then says no data was collected, which the page's own data will
// contradict or confirm.
func (s *Server) page(c echo.Context, title, section, topic string) templates.Page {
	id := identity(c)
	p := templates.Page{
		Title:   title,
		Nav:     navOf(c),
		Topic:   topic,
		CSRF:    csrfToken(c),
		Now:     s.opts.Now().UTC(),
		Role:    string(id.Role),
		Section: section,
	}
	if p.Nav.Embed {
		p.EmbedOrigins = s.embedOrigins
	}
	switch id.Kind {
	case auth.KindToken, auth.KindProxy:
		p.User = id.Name
	}
	// Only a browser session can be ended from the page; a proxy's user signs out at the proxy.
	p.SignOut = id.Via == auth.ViaSession
	fr, err := s.opts.Views.Freshness(c.Request().Context())
	if err != nil {
		s.log.Warn("page: read freshness", "request_id", requestID(c), "err", err)
	}
	p.Freshness = fr
	p.StaleAfter = s.staleAfter()
	return p
}

// staleAfter is the age past which data is stale, which pages count up to on their own.
func (s *Server) staleAfter() time.Duration { return s.opts.Views.Thresholds().StaleAfter }

// renderErrorPage answers a browser request that failed: a full page, or for an HTMX request a
// fragment shown in the page's alert area. msg is already safe to show.
func (s *Server) renderErrorPage(c echo.Context, status int, msg string) error {
	p := templates.ErrorProps{Status: status, Message: msg}
	if isHTMX(c) {
		h := c.Response().Header()
		h.Set("HX-Retarget", "#flash")
		h.Set("HX-Reswap", "innerHTML")
		p.Nav = navOf(c)
		return render(c, status, templates.ErrorContent(p))
	}
	p.Page = s.page(c, http.StatusText(status), "", "")
	return render(c, status, templates.ErrorPage(p))
}
