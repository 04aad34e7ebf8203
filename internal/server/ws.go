package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// subscription is what one page's websocket follows: a topic and the page's view of it. Equal
// subscriptions share one rendering.
type subscription = live.Subscription[pageView]

// pageView is a page's own view of its topic: the link context its fragments' links must carry
// (embed mode and token), and its query (the overview's q, sort and dir; a queue page's range),
// encoded so that equal views compare equal.
type pageView struct {
	Nav   templates.Nav
	Query string
}

// query returns the view's query parameters.
func (v pageView) query() url.Values {
	q, _ := url.ParseQuery(v.Query) // written by url.Values.Encode
	return q
}

// Close codes that end a connection whose credential has ended, for good: app.js says so
// ("signed out", "link expired") and nothing reconnects with a dead credential. (The hub's own,
// live.CloseServiceRestart and live.CloseTryAgainLater, make browsers reconnect.)
const (
	closeSignedOut = 4001 // the session was signed out or expired, or its token revoked
	closeLinkEnded = 4002 // the embed link expired, or the token that made it was revoked
)

// closeWait bounds writing the close frame of a connection the server ends at once.
const closeWait = 10 * time.Second

// wsWriteBuffers are the write buffers the websocket connections borrow
// (Upgrader.WriteBufferPool).
var wsWriteBuffers sync.Pool

// serveWebsocket answers GET /ws?topic=: the live updates of one page. The request went through
// the same authentication as the pages (an embed link's token included); the topic must be one
// the identity may see, and a browser's Origin must be this site or an allowed frame ancestor.
func (s *Server) serveWebsocket(c echo.Context) error {
	sub, err := s.websocketSubscription(c)
	if err != nil {
		return err
	}
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return newError(http.StatusBadRequest, "not_websocket", "this endpoint speaks websocket only")
	}
	release, ok := s.wsQuota.acquire(quotaKey(c))
	if !ok {
		return errTooManyWebsockets
	}
	credential := s.credentialOf(c) // before the upgrade, while the request is whole
	upgrader := websocket.Upgrader{
		ReadBufferSize:  1024,
		WriteBufferSize: 4096,
		// A connection borrows a write buffer only while it writes a message of its own (a
		// ping, a close): the pushes go out as prepared messages, written without one. Without
		// the pool each of a thousand connections would hold its 4 KB for its lifetime.
		WriteBufferPool: &wsWriteBuffers,
		// permessage-deflate: each push is compressed once for all the connections that
		// negotiated it (live.message), not once per connection.
		EnableCompression: true,
		CheckOrigin:       s.allowedOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			http.Error(w, http.StatusText(status), status) // no internal reason to the client
		},
	}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		release()
		s.log.Debug("websocket upgrade refused", "request_id", requestID(c), "err", err)
		return nil // the upgrader has answered
	}
	// An error means the hub is closing; the connection was told and closed.
	_ = s.hub.Serve(conn, sub, live.ConnOptions{Release: release, Credential: credential, Recheck: s.opts.WebsocketRecheck})
	return nil
}

// websocketSubscription parses and authorises the topic of a websocket request.
func (s *Server) websocketSubscription(c echo.Context) (subscription, error) {
	topic, err := live.ParseTopic(c.QueryParam("topic"))
	if err != nil {
		return subscription{}, newError(http.StatusBadRequest, "invalid_topic", "unknown topic")
	}
	sub := subscription{Topic: topic, View: pageView{Nav: navOf(c)}}
	id := identity(c)
	switch topic.Kind {
	case live.OverviewTopic:
		if id.Kind == auth.KindEmbed && id.Scope != auth.EmbedOverview {
			return sub, errOutOfScope
		}
		view, err := overviewView(c)
		if err != nil {
			return sub, err
		}
		sub.View.Query = view.View().Encode()
	case live.AuditTopic:
		if id.Kind == auth.KindEmbed { // no embed link opens the audit log
			return sub, errOutOfScope
		}
	case live.QueueTopic:
		if _, err := s.opts.Views.QueueKeyByID(c.Request().Context(), topic.QueueID); err != nil {
			if errors.Is(err, views.ErrNotFound) {
				return sub, newError(http.StatusNotFound, "queue_not_found", "no watched queue has that id")
			}
			return sub, err
		}
		if id.Kind == auth.KindEmbed && !s.scopeIsQueue(c, id.Scope, topic.QueueID) {
			return sub, errOutOfScope
		}
		sub.View.Query = templates.QueueProps{Range: templates.RangeByKey(c.QueryParam("range"))}.View().Encode()
	}
	return sub, nil
}

// errOutOfScope refuses an embed link a topic outside the page it opens.
var errOutOfScope = newError(http.StatusForbidden, "forbidden", "this embed link does not cover this topic")

// scopeIsQueue reports whether an embed scope is the page of the queue qid: only that page's
// link may follow its topic.
func (s *Server) scopeIsQueue(c echo.Context, scope string, qid int64) bool {
	ref, ok := auth.EmbedQueue(scope)
	if !ok {
		return false
	}
	q, err := s.opts.Views.ResolveQueue(c.Request().Context(), ref)
	return err == nil && q.ID == qid
}

// allowedOrigin accepts a websocket from this site, or from a site allowed to frame the pages
// (an embedded view opens its websocket from inside the portal's iframe, with its own origin
// being toolq's, but some browsers send the top frame's). A request without Origin is no browser.
func (s *Server) allowedOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) && strings.EqualFold(u.Scheme, s.siteScheme(r, u.Host)) {
		return true
	}
	for _, src := range s.opts.FrameAncestors {
		if sourceMatches(src, u) {
			return true
		}
	}
	return false
}

// siteScheme is the scheme browsers reach this dashboard with under a host: --public-url's when
// it names that host (a TLS-terminating proxy in front), else the connection's own. Another
// scheme is another origin: https://host for an http listener is not this site.
func (s *Server) siteScheme(r *http.Request, host string) string {
	if pub, err := url.Parse(s.opts.PublicURL); err == nil && s.opts.PublicURL != "" && strings.EqualFold(pub.Host, host) {
		return pub.Scheme
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// sourceMatches reports whether a CSP source expression (as in frame-ancestors) matches an
// origin: "https://portal.example.com", "portal.example.com", "https://*.example.com", "https:"
// or "*". Keywords such as 'self' and 'none' match nothing here ('self' is checked by host).
func sourceMatches(src string, origin *url.URL) bool {
	if strings.HasPrefix(src, "'") {
		return false
	}
	if src == "*" {
		return true
	}
	scheme, host := "", src
	if i := strings.Index(src, "://"); i >= 0 {
		scheme, host = src[:i], src[i+3:]
	} else if strings.HasSuffix(src, ":") {
		return strings.EqualFold(strings.TrimSuffix(src, ":"), origin.Scheme)
	}
	if scheme != "" && !strings.EqualFold(scheme, origin.Scheme) {
		return false
	}
	host = strings.TrimSuffix(host, "/")
	if wildcard, ok := strings.CutPrefix(host, "*."); ok {
		h := strings.ToLower(origin.Host)
		return strings.HasSuffix(h, "."+strings.ToLower(wildcard))
	}
	return strings.EqualFold(host, origin.Host)
}

// credentialOf returns the check of the request's credential: the request is authenticated
// again as it came (its cookies, Authorization header and embed link), with the server's clock,
// so that signing out, revoking the token or the link's expiry ends the connection.
func (s *Server) credentialOf(c echo.Context) func(ctx context.Context) int {
	r := c.Request()
	saved := &http.Request{Method: http.MethodGet, URL: new(url.URL), Header: r.Header.Clone(), Host: r.Host, RemoteAddr: r.RemoteAddr}
	*saved.URL = *r.URL
	code := credentialEndCode(identity(c))
	return func(ctx context.Context) int {
		_, err := s.auth.Authenticate(saved.WithContext(ctx))
		switch {
		case err == nil:
			return 0
		case errors.Is(err, auth.ErrNoCredentials), errors.Is(err, auth.ErrInvalidCredentials), errors.Is(err, auth.ErrUntrustedProxy),
			errors.Is(err, auth.ErrNoRole), errors.Is(err, auth.ErrOutOfScope):
			return code
		}
		// The store failed (or the server is stopping), not the credential: keep the
		// connection and check again later.
		if ctx.Err() == nil {
			s.log.Warn("websocket: check the credential", "err", err)
		}
		return 0
	}
}

// credentialEndCode is the close code that tells a page its credential ended.
func credentialEndCode(id auth.Identity) int {
	if id.Kind == auth.KindEmbed {
		return closeLinkEnded
	}
	return closeSignedOut
}

// closeEndedWebsocket answers a websocket handshake whose credential is missing or no longer
// valid (a page reconnecting after a restart, after its session or link ended meanwhile): the
// handshake is accepted and the connection closed at once with closeSignedOut or closeLinkEnded,
// which the page understands and does not retry. A refused handshake (401) would look to the
// browser like a network failure, and htmx-ext-ws would retry it forever.
func (s *Server) closeEndedWebsocket(c echo.Context) error {
	code := closeSignedOut
	if c.QueryParam(auth.EmbedParam) != "" {
		code = closeLinkEnded
	}
	upgrader := websocket.Upgrader{
		CheckOrigin: s.allowedOrigin,
		Error: func(w http.ResponseWriter, r *http.Request, status int, reason error) {
			http.Error(w, http.StatusText(status), status)
		},
	}
	conn, err := upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader has answered
	}
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(closeWait))
	return conn.Close()
}

// hubPush renders what a subscription shows, for the hub's workers. The overview's push carries
// what changed since memo, the previous push of the same view; the other pages' are small and
// pushed whole.
func (s *Server) hubPush(ctx context.Context, sub subscription, changes live.Changes, memo any) (live.Push, error) {
	var msg []byte
	var err error
	switch sub.Topic.Kind {
	case live.OverviewTopic:
		return s.overviewPush(ctx, sub.View, changes, memo)
	case live.AuditTopic:
		msg, err = s.auditPush(ctx, sub.View.Nav)
	case live.QueueTopic:
		msg, err = s.queuePush(ctx, sub.Topic.QueueID, sub.View, changes)
	default:
		err = fmt.Errorf("hub: unknown topic %v", sub.Topic)
	}
	if err != nil {
		return live.Push{}, err
	}
	return live.Whole(msg), nil
}

// hubFreshness renders the freshness line every page shows, for the hub.
func (s *Server) hubFreshness(ctx context.Context) ([]byte, error) {
	f, err := s.opts.Views.Freshness(ctx)
	if err != nil {
		return nil, err
	}
	return renderBytes(ctx, templates.Freshness(f, s.staleAfter(), true))
}

// startHub starts the websocket hub and subscribes it to the bus.
func (s *Server) startHub() {
	s.hub = live.New(live.Options[pageView]{Render: s.hubPush, Freshness: s.hubFreshness, Logger: s.log})
	s.hub.Follow(s.opts.Bus)
}
