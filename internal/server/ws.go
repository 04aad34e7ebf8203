package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// Websocket timings, as in gorilla's chat example: a ping every pingPeriod keeps proxies from
// closing an idle connection, and a client that answers no ping within pongWait is gone.
const (
	writeWait      = 10 * time.Second
	pongWait       = 60 * time.Second
	pingPeriod     = pongWait * 9 / 10
	maxMessageSize = 4096 // pages send nothing; this bounds what a hostile client can make us read
)

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
		CheckOrigin:     s.allowedOrigin,
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
	cl := s.hub.newClient(sub)
	cl.release = release
	cl.credential = credential
	if err := s.hub.attach(cl, 2); err != nil {
		release()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(closeServiceRestart, "shutting down"), time.Now().Add(writeWait))
		_ = conn.Close()
		return nil
	}
	go s.writePump(conn, cl)
	go s.readPump(conn, cl)
	return nil
}

// websocketSubscription parses and authorises the topic of a websocket request.
func (s *Server) websocketSubscription(c echo.Context) (subscription, error) {
	topic := c.QueryParam("topic")
	sub := subscription{Topic: topic, Nav: navOf(c)}
	id := identity(c)
	switch {
	case topic == topicOverview:
		if id.Kind == auth.KindEmbed && id.Scope != auth.EmbedOverview {
			return sub, errOutOfScope
		}
		q, err := textParam(c, "q", 200)
		if err != nil {
			return sub, err
		}
		sortKey, dir := sortParams(c)
		sub.View = templates.OverviewProps{Query: q, Sort: sortKey, Dir: dir}.View()
	case topic == topicAudit:
		if id.Kind == auth.KindEmbed { // no embed link opens the audit log
			return sub, errOutOfScope
		}
	case strings.HasPrefix(topic, topicQueue):
		qid, err := strconv.ParseInt(strings.TrimPrefix(topic, topicQueue), 10, 64)
		if err != nil || qid <= 0 {
			return sub, newError(http.StatusBadRequest, "invalid_topic", "unknown topic")
		}
		ctx := c.Request().Context()
		if _, err := s.opts.Views.QueueKeyByID(ctx, qid); err != nil {
			if errors.Is(err, views.ErrNotFound) {
				return sub, newError(http.StatusNotFound, "queue_not_found", "no watched queue has that id")
			}
			return sub, err
		}
		if id.Kind == auth.KindEmbed && !s.scopeIsQueue(c, id.Scope, qid) {
			return sub, errOutOfScope
		}
		sub.View = templates.QueueProps{Range: templates.RangeByKey(c.QueryParam("range"))}.View()
	default:
		return sub, newError(http.StatusBadRequest, "invalid_topic", "unknown topic")
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
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	for _, src := range s.opts.FrameAncestors {
		if sourceMatches(src, u) {
			return true
		}
	}
	return false
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

// credentialCheck checks again the credential a websocket was opened with: the close code to
// end the connection with, or 0 while the credential holds.
type credentialCheck func(ctx context.Context) int

// credentialTimeout bounds one check of a websocket's credential (a store read).
const credentialTimeout = 5 * time.Second

// credentialOf returns the check of the request's credential: the request is authenticated
// again as it came (its cookies, Authorization header and embed link), with the server's clock,
// so that signing out, revoking the token or the link's expiry ends the connection.
func (s *Server) credentialOf(c echo.Context) credentialCheck {
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
	_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(writeWait))
	return conn.Close()
}

// writePump sends the hub's messages and pings to one connection; it alone writes to it. It
// also checks the connection's credential every WebsocketRecheck and ends the connection when
// the credential has ended.
func (s *Server) writePump(conn *websocket.Conn, c *client) {
	ticker := time.NewTicker(pingPeriod)
	recheck := time.NewTicker(s.opts.WebsocketRecheck)
	defer func() {
		ticker.Stop()
		recheck.Stop()
		_ = conn.Close()
		s.hub.pumpDone()
	}()
	for {
		select {
		case <-recheck.C:
			if c.credential == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(s.hub.ctx, credentialTimeout) // cut short by shutdown
			code := c.credential(ctx)
			cancel()
			if code != 0 {
				s.log.Info("websocket: credential ended", "topic", c.sub.Topic, "close_code", code)
				_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""))
				return
			}
		case msg, ok := <-c.send:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if !ok {
				code := c.closeCode
				if code == 0 {
					code = websocket.CloseNormalClosure
				}
				_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""))
				return
			}
			if err := conn.WriteMessage(websocket.TextMessage, msg); err != nil {
				return
			}
		case <-ticker.C:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// readPump reads (and ignores) what the browser sends, which keeps the pong handler and the close
// handshake working; when the connection ends it leaves the hub.
func (s *Server) readPump(conn *websocket.Conn, c *client) {
	defer func() {
		s.hub.detach(c)
		_ = conn.Close()
		c.release()
		s.hub.pumpDone()
	}()
	conn.SetReadLimit(maxMessageSize)
	_ = conn.SetReadDeadline(time.Now().Add(pongWait))
	conn.SetPongHandler(func(string) error { return conn.SetReadDeadline(time.Now().Add(pongWait)) })
	for {
		if _, _, err := conn.ReadMessage(); err != nil {
			return
		}
	}
}

// WebsocketClients returns how many websockets are connected, for /metrics.
func (s *Server) WebsocketClients() int { return s.hub.clientCount() }

// hubRender renders what a subscription's topic shows, for the hub.
func (s *Server) hubRender(ctx context.Context, sub subscription, kinds kindSet) ([]byte, error) {
	switch {
	case sub.Topic == topicOverview:
		return s.overviewPush(ctx, sub)
	case sub.Topic == topicAudit:
		return s.auditPush(ctx, sub.Nav)
	case strings.HasPrefix(sub.Topic, topicQueue):
		qid, err := strconv.ParseInt(strings.TrimPrefix(sub.Topic, topicQueue), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("hub: topic %q: %w", sub.Topic, err)
		}
		return s.queuePush(ctx, qid, sub, kinds)
	}
	return nil, fmt.Errorf("hub: unknown topic %q", sub.Topic)
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
	s.hub = newHub(hubOptions{Render: s.hubRender, Freshness: s.hubFreshness, Logger: s.log})
	s.hub.follow(s.opts.Bus)
	if s.opts.WebsocketClients == nil {
		s.opts.WebsocketClients = s.WebsocketClients
	}
}
