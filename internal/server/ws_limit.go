package server

import (
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
)

// maxWebsocketsPerIdentity bounds the live connections of one identity, websockets and event
// streams together: a person has a few tabs open, a portal a few iframes, a bot a stream or two;
// thousands from one client are an attack on memory (each connection holds goroutines and a
// send buffer) and on rendering (each view is rendered) or the store (each stream reads it).
const maxWebsocketsPerIdentity = 32

// websocketQuota counts the live websockets and event streams of each identity.
type websocketQuota struct {
	mu   sync.Mutex
	open map[string]int
}

// quotaKey names who a websocket belongs to: the token or proxy user, or, where many people
// share one identity (auth off, embed links), the client's address.
func quotaKey(c echo.Context) string {
	id := identity(c)
	switch id.Kind {
	case auth.KindToken, auth.KindProxy:
		return string(id.Kind) + ":" + id.Name
	}
	return "addr:" + c.RealIP()
}

// acquire takes one connection of key's quota; it reports false when the quota is used up. The
// returned release gives it back, once however often it is called.
func (q *websocketQuota) acquire(key string) (release func(), ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.open == nil {
		q.open = make(map[string]int)
	}
	if q.open[key] >= maxWebsocketsPerIdentity {
		return nil, false
	}
	q.open[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			q.mu.Lock()
			defer q.mu.Unlock()
			if q.open[key]--; q.open[key] <= 0 {
				delete(q.open, key)
			}
		})
	}, true
}

// errTooManyWebsockets answers a websocket request beyond the quota.
var errTooManyWebsockets = newError(http.StatusTooManyRequests, "too_many_websockets",
	"too many live connections for this identity; close some tabs")
