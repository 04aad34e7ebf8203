package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
)

// testRecheck is how often the websockets of these tests check their credential: the server's
// 15 s, shortened so that a test waits milliseconds for what a browser waits seconds for.
const testRecheck = 20 * time.Millisecond

// dialAs opens a websocket to the test server with a credential's cookies or headers, as a
// browser on the server's own origin would.
func dialAs(t *testing.T, srv *httptest.Server, query string, header http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	h := header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Set("Origin", srv.URL)
	conn, res, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws?"+query, h)
	if err == nil {
		t.Cleanup(func() { conn.Close() })
	}
	return conn, res, err
}

// closeCode reads pushes until the server closes the connection, and returns the close code.
// The deadline only bounds a broken test.
func closeCode(t *testing.T, conn *websocket.Conn) int {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, _, err := conn.ReadMessage()
		if err == nil {
			continue
		}
		var ce *websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("the connection ended without a close frame: %v", err)
		}
		return ce.Code
	}
}

// cookieHeader is the Cookie header of a browser holding cookies.
func cookieHeader(cookies []*http.Cookie) http.Header {
	h := http.Header{}
	for _, c := range cookies {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	return h
}

// TestWebsocketEndsWithItsCredential: a websocket checks the credential it was opened with
// while it lives, so that revoking the token, signing out or the expiry of the session or the
// embed link closes it (with a code the page understands and does not retry), and a page
// reconnecting with the dead credential is told the same at once. Connections whose credential
// holds stay open.
func TestWebsocketEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	type credential struct {
		query  string
		header http.Header
	}
	session := func(t *testing.T, h *apiHarness) (credential, func()) {
		cookies, csrf := browserSession(t, h, h.viewer)
		logout := func() {
			form := url.Values{csrfField: {csrf}}
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/logout", body: form.Encode(), cookies: cookies,
				header: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}})
			if rec.Code != http.StatusSeeOther {
				t.Fatalf("logout: status %d", rec.Code)
			}
		}
		return credential{query: "topic=overview", header: cookieHeader(cookies)}, logout
	}
	embedLink := func(t *testing.T, h *apiHarness) (credential, func()) {
		rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links", body: `{"path":"/?embed=1","ttlSeconds":60}`, header: jsonPost(h.viewer)})
		var link struct{ Path string }
		if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil || rec.Code != http.StatusCreated {
			t.Fatalf("embed link: status %d: %s", rec.Code, rec.Body)
		}
		u, _ := url.Parse(link.Path)
		q := u.Query()
		q.Set("topic", topicOverview)
		return credential{query: q.Encode()}, nil
	}
	bearerToken := func(t *testing.T, h *apiHarness) (credential, func()) {
		return credential{query: "topic=overview", header: http.Header{"Authorization": {"Bearer " + h.viewer}}}, nil
	}
	revoke := func(t *testing.T, h *apiHarness) {
		if err := auth.RevokeToken(t.Context(), h.w.Store, "status-bot"); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		open func(*testing.T, *apiHarness) (credential, func())
		end  func(t *testing.T, h *apiHarness, logout func())
		code int
	}{
		{"session, token revoked", session, func(t *testing.T, h *apiHarness, _ func()) { revoke(t, h) }, closeSignedOut},
		{"session, signed out", session, func(t *testing.T, h *apiHarness, logout func()) { logout() }, closeSignedOut},
		{"session, expired", session, func(t *testing.T, h *apiHarness, _ func()) { h.w.Clock.Advance(13 * time.Hour) }, closeSignedOut},
		{"embed link, expired", embedLink, func(t *testing.T, h *apiHarness, _ func()) { h.w.Clock.Advance(61 * time.Second) }, closeLinkEnded},
		{"embed link, its token revoked", embedLink, func(t *testing.T, h *apiHarness, _ func()) { revoke(t, h) }, closeLinkEnded},
		{"bearer token, revoked", bearerToken, func(t *testing.T, h *apiHarness, _ func()) { revoke(t, h) }, closeSignedOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken, websocketRecheck: testRecheck})
			srv := httptest.NewServer(h.srv.Handler())
			t.Cleanup(srv.Close)
			// Another identity's connection, opened first, whose credential holds throughout.
			other, _, err := dialAs(t, srv, "topic=overview", http.Header{"Authorization": {"Bearer " + h.operator}})
			if err != nil {
				t.Fatal(err)
			}
			nextWith(t, other, "#overview-rows")

			cred, logout := tt.open(t, h)
			conn, _, err := dialAs(t, srv, cred.query, cred.header)
			if err != nil {
				t.Fatalf("open with a live credential: %v", err)
			}
			nextWith(t, conn, "#overview-rows")
			tt.end(t, h, logout)
			if code := closeCode(t, conn); code != tt.code {
				t.Errorf("close code %d, want %d", code, tt.code)
			}

			// The page reconnects (after a restart, say) with the dead credential: it is told at
			// once, rather than refused in a way a browser retries forever.
			again, _, err := dialAs(t, srv, cred.query, cred.header)
			if err != nil {
				t.Fatalf("reconnect with the dead credential: %v", err)
			}
			if code := closeCode(t, again); code != tt.code {
				t.Errorf("reconnect: close code %d, want %d", code, tt.code)
			}

			// The live connection has been checked as often, and still gets its pushes (what
			// changed, which is the freshness alone here).
			h.bus.Publish(events.Event{Kind: events.QueuesChanged, At: h.w.Now()})
			nextWith(t, other, "#freshness")
		})
	}

	t.Run("within 30 s by default", func(t *testing.T) {
		h := newAPIHarness(t, harnessConfig{})
		if d := h.srv.opts.WebsocketRecheck + live.CredentialTimeout; d > 30*time.Second {
			t.Errorf("a check every %s, each up to %s: an ended credential may live %s", h.srv.opts.WebsocketRecheck, live.CredentialTimeout, d)
		}
	})
}
