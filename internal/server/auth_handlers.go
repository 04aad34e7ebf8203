package server

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/web/templates"
)

// login answers POST /login (token mode): a valid token sets the session cookie and goes to the
// page asked for; anything else goes back to the login page with an error.
func (s *Server) login(c echo.Context) error {
	next := safeNext(c.FormValue("next"))
	if s.auth.Mode() != auth.ModeToken {
		return c.Redirect(http.StatusSeeOther, next)
	}
	token := c.FormValue("token")
	if wait, ok := s.loginAllowed(c.RealIP(), token); !ok {
		s.log.Warn("login throttled", "request_id", requestID(c), "remote", c.RealIP())
		secs := max(int(math.Ceil(wait.Seconds())), 1)
		c.Response().Header().Set("Retry-After", strconv.Itoa(secs))
		p := s.loginProps(c, next)
		p.WaitSeconds = secs
		return render(c, http.StatusTooManyRequests, templates.LoginPage(p))
	}
	cookie, id, err := s.auth.Login(c.Request().Context(), token, c.IsTLS())
	if errors.Is(err, auth.ErrInvalidCredentials) {
		s.log.Info("login refused", "request_id", requestID(c), "remote", c.RealIP())
		return c.Redirect(http.StatusSeeOther, "/login?error=1&next="+url.QueryEscape(next))
	}
	if err != nil {
		return err
	}
	s.log.Info("login", "request_id", requestID(c), "actor", id.Name, "role", id.Role, "remote", c.RealIP())
	c.SetCookie(cookie)
	return c.Redirect(http.StatusSeeOther, next)
}

// Sign-in attempts allowed per client address and per token prefix: a burst of loginBurst,
// then one every loginEvery. A person mistyping a token is not slowed; a script trying tokens
// (about a thousand a second without it) gets ten a minute, from one address or spread over
// many against tokens that start alike.
const (
	loginEvery = 6 * time.Second
	loginBurst = 10
	// loginPrefixLen is how much of a submitted token names its bucket: "tq_" and five of its
	// 52 characters.
	loginPrefixLen = 8
)

// loginAllowed reports whether a sign-in from addr with token may be tried now, and if not how
// long to wait. Every attempt counts, a success too: the limit is far above a person's needs.
func (s *Server) loginAllowed(addr, token string) (time.Duration, bool) {
	now := s.opts.Now()
	ok, wait := s.loginByAddr.allow(addr, now)
	if !ok {
		return wait, false
	}
	ok, wait = s.loginByPrefix.allow(safetext.Truncate(strings.TrimSpace(token), loginPrefixLen), now)
	return wait, ok
}

// logout answers POST /logout (a form with the CSRF token): the session ends on the server, so
// that no copy of its cookie works any more (its websockets close at their next check), and the
// cookie is cleared.
func (s *Server) logout(c echo.Context) error {
	if cookie, err := c.Cookie(auth.SessionCookie); err == nil && cookie.Value != "" {
		if err := s.auth.Logout(c.Request().Context(), cookie.Value); err != nil {
			return err // the session is still open: say so rather than pretend
		}
		s.log.Info("logout", "request_id", requestID(c), "remote", c.RealIP())
	}
	c.SetCookie(s.auth.LogoutCookie(c.IsTLS()))
	if s.auth.Mode() == auth.ModeToken {
		return c.Redirect(http.StatusSeeOther, "/login")
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

// safeNext keeps a post-login redirect on this site: a local path, never "//host" or a scheme,
// which would make the login form an open redirector.
func safeNext(next string) string {
	if next == "" || len(next) > 2048 || !strings.HasPrefix(next, "/") ||
		strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\") || strings.ContainsAny(next, "\r\n\t") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Path == "/login" {
		return "/"
	}
	return next
}

// embedLinkRequest is the body of POST /api/v1/embed-links.
type embedLinkRequest struct {
	Path       string `json:"path"`
	TTLSeconds int64  `json:"ttlSeconds"`
}

// embedLink is the answer of POST /api/v1/embed-links.
type embedLink struct {
	URL       string    `json:"url"`  // absolute: --public-url, or the request's scheme and host
	Path      string    `json:"path"` // the same, relative: for a dashboard behind another name
	ExpiresAt time.Time `json:"expiresAt"`
}

// defaultEmbedTTL is an embed link's life when the request does not say.
const defaultEmbedTTL = time.Hour

// createEmbedLink answers POST /api/v1/embed-links: a signed, expiring, read-only link to an
// embedded view for a portal's iframe: the overview ("/?embed=1") or one queue's card
// ("/queues/NAME?embed=1"), with the parameters it is asked with.
func (s *Server) createEmbedLink(c echo.Context) error {
	var body embedLinkRequest
	if err := decodeJSON(c, &body, false); err != nil {
		return err
	}
	view, free, err := s.embedView(c, body.Path)
	if err != nil {
		return err
	}
	ttl := defaultEmbedTTL
	if body.TTLSeconds != 0 {
		ttl = time.Duration(body.TTLSeconds) * time.Second
	}
	who := identity(c)
	if limit := auth.MaxEmbedTTLFor(who.Role); body.TTLSeconds < 0 || ttl < time.Minute || ttl > limit {
		return newError(http.StatusBadRequest, "invalid_ttl", fmt.Sprintf("ttlSeconds must be from 60 to %d (%s) for a %s",
			int64(limit/time.Second), humanTTL(limit), cmp.Or(string(who.Role), "caller without a role")))
	}
	token, expires, err := s.auth.EmbedTokenFor(who, view.Scope(), ttl)
	if err != nil {
		return err
	}
	q := url.Values{auth.EmbedParam: {token}}
	for k, v := range view.Fixed {
		q[k] = v
	}
	for k, v := range free {
		q[k] = v
	}
	rel := (&url.URL{Path: view.Path, RawQuery: q.Encode()}).String()
	s.log.Info("embed link created", "request_id", requestID(c), "actor", identity(c).Name, "scope", view.Scope(), "expires", expires)
	return c.JSON(http.StatusCreated, embedLink{
		URL:       s.baseURL(c) + rel,
		Path:      rel,
		ExpiresAt: expires.UTC(),
	})
}

// humanTTL names an embed link's longest life: "30 days", "24 hours".
func humanTTL(d time.Duration) string {
	if d%(24*time.Hour) == 0 && d > 24*time.Hour {
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	}
	return strconv.Itoa(int(d/time.Hour)) + " hours"
}

// errInvalidEmbedPath refuses a path no embed link can open.
var errInvalidEmbedPath = newError(http.StatusBadRequest, "invalid_path",
	`path must be "/?embed=1" or "/queues/NAME?embed=1", with theme (light or dark) and colors if wanted, `+
		`and on the overview q, misconfigured=1, account, region, sort, dir and scale=shared`)

// embedView checks the view an embed link is asked for and returns the view to sign and the
// parameters its reader may change: the overview or a watched queue's card, embed=1, and only
// the parameters that page reads, by auth's one rule (auth.ParseEmbedView), so that no link is
// made that the authenticator would not open, or would open more than. Each value is read as
// the page reads it: a fixed parameter the page would read otherwise than given (a theme it does
// not know, misconfigured=yes) is refused, since the link would show other than asked, and the
// free ones are written as the page writes them in its links.
func (s *Server) embedView(c echo.Context, target string) (auth.EmbedView, url.Values, error) {
	view, free, err := auth.ParseEmbedView(target)
	if err != nil {
		return auth.EmbedView{}, nil, errInvalidEmbedPath
	}
	if theme, ok := view.Fixed["theme"]; ok && templates.ParseEmbedTheme(theme[0]) != theme[0] {
		return auth.EmbedView{}, nil, errInvalidEmbedPath
	}
	if colors, ok := view.Fixed["colors"]; ok {
		canonical, valid := templates.ParseEmbedColors(colors[0])
		if !valid || canonical == "" {
			return auth.EmbedView{}, nil, errInvalidEmbedPath
		}
		view.Fixed.Set("colors", canonical)
	}
	if view.Path == auth.EmbedOverview {
		// The overview's own parse of its query, as the page and its websocket read it.
		all := url.Values{}
		for k, v := range view.Fixed {
			all[k] = v
		}
		for k, v := range free {
			all[k] = v
		}
		r, err := http.NewRequestWithContext(c.Request().Context(), http.MethodGet, "/?"+all.Encode(), nil)
		if err != nil {
			return auth.EmbedView{}, nil, errInvalidEmbedPath
		}
		p, err := overviewView(s.echo.NewContext(r, nil))
		if err != nil {
			return auth.EmbedView{}, nil, errInvalidEmbedPath
		}
		read := p.View()
		fixed, _, _ := auth.EmbedParams(auth.EmbedOverview)
		look := auth.EmbedLookParams()
		for _, k := range fixed {
			if given, ok := view.Fixed[k]; ok && !slices.Contains(look, k) && read.Get(k) != given[0] {
				return auth.EmbedView{}, nil, errInvalidEmbedPath
			}
		}
		free = url.Values{}
		for k, v := range read {
			if !slices.Contains(fixed, k) {
				free[k] = v
			}
		}
		return view, free, nil
	}
	ref, _ := auth.EmbedQueue(view.Path)
	if !arn.ValidQueueRef(ref) {
		return auth.EmbedView{}, nil, errInvalidEmbedPath
	}
	// A link to a queue nobody watches would open a 404; an ambiguous name, a queue the link
	// could not follow on its websocket.
	if _, err := s.opts.Views.ResolveQueue(c.Request().Context(), ref); err != nil {
		return auth.EmbedView{}, nil, err
	}
	view.Path = auth.EmbedQueueScope(ref)
	return view, free, nil
}
