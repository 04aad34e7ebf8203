package server

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
)

// CSRF protection. Browser forms and HTMX requests carry a token that must equal the one in the
// toolq_csrf cookie (double submit); the cookie's value is signed with the server's key, over the
// credential of the request it was minted for (auth.Identity.Credential: the browser session, the
// proxy user, the anonymous operator of --auth none, or nobody on the sign-in form), so that a
// sibling site can plant neither a forged pair nor a genuine one minted for another session (its
// own). A cookie minted for another credential is replaced on the next page, whose forms then
// carry the new token: signing in starts a new pair. Under --auth none every visitor is the one
// local operator, so its pairs are interchangeable; the loopback Host check and the same-origin
// checks below stand between it and other sites.
//
// API requests authenticated by a Bearer header need nothing: a hostile page cannot set that
// header. API requests that ride on a cookie, on the proxy's session or on --auth none must be
// JSON (which a cross-site form cannot send without a CORS preflight, and toolq answers none)
// and must not come from another site.
const (
	csrfCookie = "toolq_csrf"
	csrfField  = "_csrf"
	csrfHeader = "X-CSRF-Token"
	csrfKey    = "csrf"
)

// csrf checks state-changing requests and makes the token available to the pages.
func (s *Server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		api := isAPIPath(req.URL.Path)
		binding := s.csrfBinding(c)
		cookieToken := s.csrfCookieToken(c, binding)
		if !api {
			if cookieToken == "" {
				cookieToken = s.newCSRFToken(binding)
				c.SetCookie(&http.Cookie{
					Name: csrfCookie, Value: cookieToken, Path: "/",
					HttpOnly: true, Secure: c.IsTLS(), SameSite: http.SameSiteLaxMode,
				})
			}
			c.Set(csrfKey, cookieToken)
		}
		switch req.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if identity(c).Via == auth.ViaBearer {
			return next(c)
		}
		if crossSite(req) {
			return newError(http.StatusForbidden, "cross_site", "cross-site requests are refused")
		}
		if api {
			mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
			if err != nil || mt != echo.MIMEApplicationJSON {
				return newError(http.StatusUnsupportedMediaType, "unsupported_media_type", "send Content-Type: application/json")
			}
			return next(c)
		}
		sent := req.Header.Get(csrfHeader)
		if sent == "" {
			sent = c.FormValue(csrfField)
		}
		if cookieToken == "" || subtle.ConstantTimeCompare([]byte(sent), []byte(cookieToken)) != 1 {
			return newError(http.StatusForbidden, "csrf_invalid", "the form has expired; reload the page and try again")
		}
		return next(c)
	}
}

// csrfToken returns the CSRF token a page must put in its forms (hidden field _csrf) and in
// HTMX's hx-headers (X-CSRF-Token).
func csrfToken(c echo.Context) string {
	t, _ := c.Get(csrfKey).(string)
	return t
}

// csrfPurpose separates the pairs' signatures from the key's other uses; v2 pairs are bound to
// a credential, and v1 pairs (a random value alone) are replaced on the next page.
const csrfPurpose = "csrf/v2"

// csrfBinding is the credential a request's CSRF pair must be minted for: the identity's, or on
// the public paths (sign-in, sign-out), which are not authenticated, the one their request
// carries (auth.PublicCredential).
func (s *Server) csrfBinding(c echo.Context) string {
	if id, ok := c.Get("identity").(auth.Identity); ok {
		return id.Credential
	}
	return s.auth.PublicCredential(c.Request())
}

// csrfMessage is what a pair's signature covers: the credential it is bound to and its random
// value.
func csrfMessage(binding string, random []byte) []byte {
	return append(append([]byte(binding), 0), random...)
}

// newCSRFToken returns a random value with the server's signature over it and binding.
func (s *Server) newCSRFToken(binding string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b) + "." + base64.RawURLEncoding.EncodeToString(s.auth.Sign(csrfPurpose, csrfMessage(binding, b)))
}

// csrfCookieToken returns the request's CSRF cookie when its signature holds for binding, else "".
func (s *Server) csrfCookieToken(c echo.Context, binding string) string {
	ck, err := c.Cookie(csrfCookie)
	if err != nil || len(ck.Value) > 200 {
		return ""
	}
	r, m, ok := strings.Cut(ck.Value, ".")
	if !ok {
		return ""
	}
	raw, err1 := base64.RawURLEncoding.DecodeString(r)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	if err1 != nil || err2 != nil || !s.auth.Verify(csrfPurpose, csrfMessage(binding, raw), mac) {
		return ""
	}
	return ck.Value
}

// crossSite reports whether a browser says the request comes from another origin. Sec-Fetch-Site
// "same-site" counts as foreign: another port on localhost is same-site but not same-origin.
// Clients that send neither header (curl, bots) are not browsers and pass.
func crossSite(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return false
	case "":
	default:
		return true
	}
	origin := r.Header.Get(echo.HeaderOrigin)
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return true // "null" and junk: opaque origins
	}
	return !strings.EqualFold(u.Host, r.Host)
}
