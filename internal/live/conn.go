package live

import (
	"context"
	"time"

	"github.com/gorilla/websocket"
)

// Websocket timings, as in gorilla's chat example: a ping every pingPeriod keeps proxies from
// closing an idle connection, and a client that answers no ping within pongWait is gone.
const (
	writeWait      = 10 * time.Second
	pongWait       = 60 * time.Second
	pingPeriod     = pongWait * 9 / 10
	maxMessageSize = 4096 // pages send nothing; this bounds what a hostile client can make us read
)

// CredentialTimeout bounds one check of a connection's credential (a store read): an ended
// credential ends its connection within ConnOptions.Recheck plus this.
const CredentialTimeout = 5 * time.Second

// ConnOptions are what the server knows of one connection besides its subscription.
type ConnOptions struct {
	// Release gives back the connection's place in its identity's quota when it ends.
	Release func()
	// Credential checks again the credential the connection was opened with: the close code to
	// end it with, or 0 while the credential holds. Nil: never checked.
	Credential func(ctx context.Context) int
	// Recheck is how often Credential is called (default 15 s).
	Recheck time.Duration
}

// Serve attaches an upgraded connection to the hub for sub and serves it until it ends: a read
// pump (with a read limit and the pong deadline) and a write pump (the hub's messages, pings and
// the credential checks). It returns at once; an error means the hub is closed, and the
// connection has been told so (1012) and closed.
func (h *Hub[V]) Serve(conn *websocket.Conn, sub Subscription[V], o ConnOptions) error {
	if o.Release == nil {
		o.Release = func() {}
	}
	if o.Recheck <= 0 {
		o.Recheck = 15 * time.Second
	}
	c := h.newClient(sub)
	if err := h.attach(c, 2); err != nil {
		o.Release()
		_ = conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(CloseServiceRestart, "shutting down"), time.Now().Add(writeWait))
		_ = conn.Close()
		return err
	}
	go h.writePump(conn, c, o)
	go h.readPump(conn, c, o)
	return nil
}

// writePump sends the hub's messages and pings to one connection; it alone writes to it. It
// also checks the connection's credential every Recheck and ends the connection with the code
// the check gives when the credential has ended.
func (h *Hub[V]) writePump(conn *websocket.Conn, c *client[V], o ConnOptions) {
	ping := time.NewTicker(pingPeriod)
	recheck := time.NewTicker(o.Recheck)
	defer func() {
		ping.Stop()
		recheck.Stop()
		_ = conn.Close()
		h.conns.Done()
	}()
	closeWith := func(code int) {
		_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
		_ = conn.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""))
	}
	for {
		select {
		case <-recheck.C:
			if o.Credential == nil {
				continue
			}
			ctx, cancel := context.WithTimeout(h.ctx, CredentialTimeout) // cut short by Close
			code := o.Credential(ctx)
			cancel()
			if code != 0 {
				h.log.Info("live: credential ended", "topic", c.sub.Topic.String(), "close_code", code)
				closeWith(code)
				return
			}
		case msg, ok := <-c.send:
			if !ok {
				code := c.closeCode
				if code == 0 {
					code = websocket.CloseNormalClosure
				}
				closeWith(code)
				return
			}
			for _, pm := range msg.prepared {
				_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
				if err := conn.WritePreparedMessage(pm); err != nil {
					return
				}
			}
		case <-ping.C:
			_ = conn.SetWriteDeadline(time.Now().Add(writeWait))
			if err := conn.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		}
	}
}

// readPump reads (and ignores) what the browser sends, which keeps the pong handler and the close
// handshake working; when the connection ends it leaves the hub.
func (h *Hub[V]) readPump(conn *websocket.Conn, c *client[V], o ConnOptions) {
	defer func() {
		h.detach(c)
		_ = conn.Close()
		o.Release()
		h.conns.Done()
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
