package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
)

// signInPair returns the CSRF cookie of the sign-in form, as GET /login mints it for a browser
// with no session: its value is the form's token.
func signInPair(t *testing.T, h *apiHarness) *http.Cookie {
	t.Helper()
	rec := h.do(t, apiRequest{target: "/login"})
	if c := cookieNamed(rec, csrfCookie); c != nil {
		return c
	}
	t.Fatal("GET /login set no CSRF cookie")
	return nil
}

// cookieNamed returns the cookie of that name an answer sets, nil when it sets none.
func cookieNamed(rec *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// browserSession signs in through the real login form and follows the redirect to the page
// asked for, as a browser does, and returns the session and CSRF cookies and the CSRF token
// that page's forms carry: the pair of the session, which the sign-in form's pair is not.
func browserSession(t *testing.T, h *apiHarness, token string) ([]*http.Cookie, string) {
	t.Helper()
	anonymous := signInPair(t, h)
	form := url.Values{"token": {token}, "next": {"/queues/orders-dlq"}, csrfField: {anonymous.Value}}
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/login", body: form.Encode(), cookies: []*http.Cookie{anonymous},
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://example.com", "Sec-Fetch-Site": "same-origin"}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/queues/orders-dlq" {
		t.Fatalf("login: %d, Location %q", rec.Code, rec.Header().Get("Location"))
	}
	session := cookieNamed(rec, auth.SessionCookie)
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteLaxMode {
		t.Fatalf("session cookie = %+v", session)
	}
	rec = h.do(t, apiRequest{target: "/queues/orders-dlq", cookies: []*http.Cookie{anonymous, session}})
	csrf := cookieNamed(rec, csrfCookie)
	if rec.Code != http.StatusOK || csrf == nil {
		t.Fatalf("the page after signing in: %d, CSRF cookie %v; want 200 and the session's own pair", rec.Code, csrf)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := doc.Find(`input[name="` + csrfField + `"]`).First().Attr("value"); v != csrf.Value {
		t.Fatalf("the page's CSRF field %q is not its cookie's %q", v, csrf.Value)
	}
	return []*http.Cookie{csrf, session}, csrf.Value
}

func TestLogin(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	cookies, _ := browserSession(t, h, h.operator)
	if rec := h.do(t, apiRequest{target: "/api/v1/queues", cookies: cookies}); rec.Code != http.StatusOK {
		t.Errorf("API with the session cookie: %d", rec.Code)
	}
	csrf := signInPair(t, h)
	tests := []struct {
		name, token, next, csrf string
		status                  int
		location                string
	}{
		{"bad token", "tq_wrong", "/audit", csrf.Value, 303, "/login?error=1&next=%2Faudit"},
		{"revoked token", h.revoked, "/", csrf.Value, 303, "/login?error=1&next=%2F"},
		{"open redirect", h.viewer, "//evil.example/", csrf.Value, 303, "/"},
		{"absolute next", h.viewer, "https://evil.example/", csrf.Value, 303, "/"},
		{"no CSRF token", h.viewer, "/", "", 403, ""},
		{"wrong CSRF token", h.viewer, "/", "forged", 403, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			form := url.Values{"token": {tt.token}, "next": {tt.next}, csrfField: {tt.csrf}}
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/login", body: form.Encode(), cookies: []*http.Cookie{csrf},
				header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
			if rec.Code != tt.status || rec.Header().Get("Location") != tt.location {
				t.Errorf("status %d, Location %q; want %d %q", rec.Code, rec.Header().Get("Location"), tt.status, tt.location)
			}
		})
	}
	// Signing out changes state: a link or a foreign form must not do it.
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for _, r := range []apiRequest{
		{method: http.MethodGet, target: "/logout", cookies: cookies},
		{method: http.MethodPost, target: "/logout", cookies: cookies, header: formHeader},
		{method: http.MethodPost, target: "/logout", body: csrfField + "=forged", cookies: cookies, header: formHeader},
	} {
		if rec := h.do(t, r); rec.Code < 400 || strings.Contains(rec.Header().Get("Set-Cookie"), auth.SessionCookie+"=;") {
			t.Errorf("%s /logout %q: %d, Set-Cookie %q; want refused", r.method, r.body, rec.Code, rec.Header().Get("Set-Cookie"))
		}
	}
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/logout", body: csrfField + "=" + url.QueryEscape(cookies[0].Value), cookies: cookies, header: formHeader})
	if rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), auth.SessionCookie+"=;") {
		t.Errorf("logout: %d %v", rec.Code, rec.Header())
	}
	// The session ended on the server: a copy of its cookie taken before the sign-out is refused.
	if rec := h.do(t, apiRequest{target: "/api/v1/queues", cookies: cookies}); rec.Code != http.StatusUnauthorized {
		t.Errorf("API with the signed-out session's cookie: %d, want 401", rec.Code)
	}
	if rec := h.do(t, apiRequest{target: "/queues/orders-dlq", cookies: cookies}); rec.Code != http.StatusSeeOther || !strings.HasPrefix(rec.Header().Get("Location"), "/login") {
		t.Errorf("page with the signed-out session's cookie: %d %q, want 303 to /login", rec.Code, rec.Header().Get("Location"))
	}
}

// TestLoginIsThrottled: sign-in attempts are limited per client address and per token prefix
// (ten, then one every six seconds), whichever is hit first; a refused attempt is 429 with
// Retry-After and never reaches the token check, and the limit lifts with time.
func TestLoginIsThrottled(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	csrf := signInPair(t, h)
	token := csrf.Value
	login := func(tok, remote string) *httptest.ResponseRecorder {
		form := url.Values{"token": {tok}, "next": {"/"}, csrfField: {token}}
		return h.do(t, apiRequest{method: http.MethodPost, target: "/login", body: form.Encode(), cookies: []*http.Cookie{csrf}, remote: remote,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	}
	t.Run("per address", func(t *testing.T) {
		for i := range 10 {
			if rec := login(fmt.Sprintf("tq_guess%02d", i), "198.51.100.1:4000"); rec.Code != http.StatusSeeOther {
				t.Fatalf("attempt %d: %d, want 303 back to the form", i+1, rec.Code)
			}
		}
		rec := login(h.operator, "198.51.100.1:4000")
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "6" || !strings.Contains(rec.Body.String(), "Too many sign-in attempts") {
			t.Fatalf("11th attempt, a good token: %d Retry-After %q; want 429 before the token is checked", rec.Code, rec.Header().Get("Retry-After"))
		}
		if strings.Contains(rec.Header().Get("Set-Cookie"), auth.SessionCookie) {
			t.Error("a throttled attempt opened a session")
		}
		if rec := login("tq_other", "198.51.100.2:4000"); rec.Code != http.StatusSeeOther {
			t.Errorf("another address: %d, want 303", rec.Code)
		}
		h.w.Advance(6 * time.Second)
		if rec := login(h.operator, "198.51.100.1:4000"); rec.Code != http.StatusSeeOther || !strings.Contains(rec.Header().Get("Set-Cookie"), auth.SessionCookie) {
			t.Errorf("after 6 s: %d, want a session", rec.Code)
		}
	})
	t.Run("per token prefix", func(t *testing.T) {
		for i := range 10 {
			if rec := login(fmt.Sprintf("tq_ZZZZZ%02d", i), fmt.Sprintf("203.0.113.%d:4000", i)); rec.Code != http.StatusSeeOther {
				t.Fatalf("attempt %d: %d, want 303", i+1, rec.Code)
			}
		}
		if rec := login("tq_ZZZZZ99", "203.0.113.99:4000"); rec.Code != http.StatusTooManyRequests {
			t.Errorf("11th attempt at one prefix from an 11th address: %d, want 429", rec.Code)
		}
	})
}

// TestEveryBrowserChangeNeedsCSRF walks the router: every non-API route that changes state
// refuses a request without the CSRF token, so a route added later cannot forget it.
func TestEveryBrowserChangeNeedsCSRF(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	cookies, _ := browserSession(t, h, h.operator)
	checked := 0
	for _, r := range h.srv.echo.Routes() {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodConnect, http.MethodTrace, echo.RouteNotFound:
			continue
		}
		if isAPIPath(r.Path) {
			continue // the API's own rules are in TestCSRF
		}
		target := strings.NewReplacer(":queue", "orders-dlq", ":messageId", "m-1", "*", "x").Replace(r.Path)
		rec := h.do(t, apiRequest{method: r.Method, target: target, body: "confirm=1", cookies: cookies,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s %s without a CSRF token: %d, want 403", r.Method, r.Path, rec.Code)
		}
		checked++
	}
	if checked < 3 {
		t.Errorf("only %d state-changing browser routes found; the walk is broken", checked)
	}
	if n := h.w.Count(t, "orders-dlq"); n != 5 {
		t.Errorf("orders-dlq holds %d; a refused request moved messages", n)
	}
}

func TestCSRF(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	cookies, token := browserSession(t, h, h.operator)
	form := "confirm=0"
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	tests := []struct {
		name    string
		target  string
		body    string
		header  map[string]string
		cookies []*http.Cookie
		status  int // 0: anything but 403 and 415
		code    string
	}{
		{"form without token", "/queues/orders-dlq/redrive", form, formHeader, cookies, 403, "csrf_invalid"},
		{"form with a wrong token", "/queues/orders-dlq/redrive", form + "&_csrf=x", formHeader, cookies, 403, "csrf_invalid"},
		{"form with the token", "/queues/orders-dlq/redrive", form + "&_csrf=" + url.QueryEscape(token), formHeader, cookies, 0, ""},
		{"HTMX with the header", "/queues/orders-dlq/redrive", form, map[string]string{"Content-Type": "application/x-www-form-urlencoded", csrfHeader: token, "HX-Request": "true"}, cookies, 0, ""},
		{"form from another site", "/queues/orders-dlq/redrive", form + "&_csrf=" + url.QueryEscape(token), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Sec-Fetch-Site": "cross-site"}, cookies, 403, "cross_site"},
		{"API by cookie, cross-site", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, cookies, 403, "cross_site"},
		{"API by cookie, same-site other port", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, cookies, 403, "cross_site"},
		{"API by cookie, foreign Origin", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, cookies, 403, "cross_site"},
		{"API by cookie, null Origin", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Content-Type": "application/json", "Origin": "null"}, cookies, 403, "cross_site"},
		{"API by cookie, form encoded", "/api/v1/queues/orders-dlq/redrives/cancel", "a=b", formHeader, cookies, 415, "unsupported_media_type"},
		{"API by cookie, text/plain", "/api/v1/queues/orders-dlq/redrives/cancel", "{}", map[string]string{"Content-Type": "text/plain"}, cookies, 415, "unsupported_media_type"},
		{"API by cookie, same origin JSON", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-origin"}, cookies, 409, "no_task_running"},
		{"API by Bearer, any site", "/api/v1/queues/orders-dlq/redrives/cancel", "", map[string]string{"Authorization": "Bearer " + h.operator, "Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"}, nil, 409, "no_task_running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, apiRequest{method: http.MethodPost, target: tt.target, body: tt.body, header: tt.header, cookies: tt.cookies})
			switch {
			case tt.status == 0 && (rec.Code == 403 || rec.Code == 415 || rec.Code == 401):
				t.Errorf("status %d: %.200s", rec.Code, rec.Body)
			case tt.status != 0 && rec.Code != tt.status:
				t.Errorf("status %d, want %d: %.200s", rec.Code, tt.status, rec.Body)
			}
			if tt.code != "" && strings.HasPrefix(tt.target, "/api/") {
				if code := errorCode(t, rec.Body.Bytes()); code != tt.code {
					t.Errorf("code %q, want %q", code, tt.code)
				}
			}
		})
	}
}

func TestCSRFWithAuthNone(t *testing.T) {
	t.Parallel()
	// A hostile page in the operator's browser must not drive a loopback dashboard.
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeNone})
	for _, hdr := range []map[string]string{
		{"Content-Type": "application/x-www-form-urlencoded"},
		{"Content-Type": "text/plain"},
		{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"},
		{"Content-Type": "application/json", "Origin": "http://127.0.0.1:9999"},
	} {
		rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/orders-dlq/redrives", body: "{}", header: hdr})
		if rec.Code != http.StatusForbidden && rec.Code != http.StatusUnsupportedMediaType {
			t.Errorf("%v: status %d", hdr, rec.Code)
		}
	}
	if n := h.w.Count(t, "orders-dlq"); n != 5 {
		t.Errorf("orders-dlq holds %d; a refused request moved messages", n)
	}
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/queues/orders-dlq/redrive", body: "confirm=1",
		header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
	if rec.Code != http.StatusForbidden {
		t.Errorf("form without token under auth none: %d", rec.Code)
	}
}

// TestSignOutButton: a browser signed in with a session sees a sign-out form that posts the
// CSRF token; a bot's Bearer request, which has no session to end, does not.
func TestSignOutButton(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	cookies, token := browserSession(t, h, h.operator)
	rec := h.do(t, apiRequest{target: "/", cookies: cookies})
	if rec.Code != http.StatusOK {
		t.Fatalf("overview with a session: %d", rec.Code)
	}
	doc, err := goquery.NewDocumentFromReader(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	form := doc.Find(`form[action="/logout"][method="post"]`)
	if form.Length() != 1 {
		t.Fatalf("sign-out forms: %d, want 1", form.Length())
	}
	if v, _ := form.Find(`input[name="` + csrfField + `"]`).Attr("value"); v != token {
		t.Errorf("sign-out form's CSRF field = %q, want the session's token", v)
	}

	rec = h.do(t, apiRequest{target: "/", header: map[string]string{"Authorization": "Bearer " + h.operator}})
	if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `action="/logout"`) {
		t.Errorf("overview with a Bearer token: %d, sign-out shown: %v", rec.Code, strings.Contains(rec.Body.String(), `action="/logout"`))
	}
}

// TestCSRFPairIsTheSessions: a CSRF pair is bound to the credential it was minted for: one
// minted for a browser session is refused with another session's cookie (even of the same
// token), the sign-in form's pair is refused once signed in, and a proxy user's is refused for
// another proxy user; each is taken with its own.
func TestCSRFPairIsTheSessions(t *testing.T) {
	t.Parallel()
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	post := func(t *testing.T, h *apiHarness, pair *http.Cookie, credentials []*http.Cookie, header map[string]string, remote string) int {
		t.Helper()
		hdr := map[string]string{}
		for k, v := range formHeader {
			hdr[k] = v
		}
		for k, v := range header {
			hdr[k] = v
		}
		rec := h.do(t, apiRequest{method: http.MethodPost, target: "/queues/orders-dlq/redrive", body: "confirm=0&" + csrfField + "=" + url.QueryEscape(pair.Value),
			header: hdr, cookies: append([]*http.Cookie{pair}, credentials...), remote: remote})
		return rec.Code
	}

	t.Run("browser sessions", func(t *testing.T) {
		t.Parallel()
		h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
		a, _ := browserSession(t, h, h.operator)
		b, _ := browserSession(t, h, h.operator)
		anonymous := signInPair(t, h)
		tests := []struct {
			name      string
			pair      *http.Cookie
			session   *http.Cookie
			forbidden bool
		}{
			{"session A's pair with session A", a[0], a[1], false},
			{"session B's pair with session B", b[0], b[1], false},
			{"session A's pair with session B", a[0], b[1], true},
			{"session B's pair with session A", b[0], a[1], true},
			{"the sign-in form's pair with session A", anonymous, a[1], true},
		}
		for _, tt := range tests {
			if code := post(t, h, tt.pair, []*http.Cookie{tt.session}, nil, ""); (code == http.StatusForbidden) != tt.forbidden {
				t.Errorf("%s: %d; want forbidden %v", tt.name, code, tt.forbidden)
			}
		}
	})

	t.Run("proxy users", func(t *testing.T) {
		t.Parallel()
		h := newAPIHarness(t, harnessConfig{mode: auth.ModeProxy})
		const remote = "10.9.0.1:4000"
		user := func(name string) map[string]string {
			return map[string]string{auth.HeaderForwardedUser: name, auth.HeaderForwardedGroups: "sre"}
		}
		rec := h.do(t, apiRequest{target: "/queues/orders-dlq", header: user("alice"), remote: remote})
		alices := cookieNamed(rec, csrfCookie)
		if rec.Code != http.StatusOK || alices == nil {
			t.Fatalf("alice's page: %d, CSRF cookie %v", rec.Code, alices)
		}
		if code := post(t, h, alices, nil, user("bob"), remote); code != http.StatusForbidden {
			t.Errorf("alice's pair sent as bob: %d; want 403", code)
		}
		if code := post(t, h, alices, nil, user("alice"), remote); code == http.StatusForbidden {
			t.Errorf("alice's pair sent as alice: %d; want it taken", code)
		}
	})
}
