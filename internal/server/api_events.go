package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// Notifier is what the server asks of the notifier: a test notification, and when it started
// (the targets recorded since are the running dashboard's).
type Notifier interface {
	SendTest(ctx context.Context, r notify.TestRequest) ([]string, error)
	StartedAt() time.Time
}

// streamHeartbeat is how often an idle event stream gets a comment (proxies close silent
// connections) and checks its credential again, as the websockets do.
const streamHeartbeat = 15 * time.Second

// streamRetry is the reconnection delay the stream suggests to EventSource clients.
const streamRetry = 5 * time.Second

// EndStreams ends every event stream: http.Server.Shutdown waits for active requests, and a
// stream never ends by itself. Register it with http.Server.RegisterOnShutdown.
func (s *Server) EndStreams() { s.streamsOnce.Do(func() { close(s.streamsDone) }) }

// streamEvents answers GET /api/v1/events: the alerts as Server-Sent Events, from the one after
// Last-Event-ID (header, or ?lastEventId= for clients that cannot set it), or from now; filtered
// like a notification target (?queuePrefix=&kinds=&minSeverity=).
func (s *Server) streamEvents(c echo.Context) error {
	q := c.QueryParams()
	filter, err := notify.ParseFilter(url.Values{"queue-prefix": q["queuePrefix"], "kinds": q["kinds"], "min-severity": q["minSeverity"]})
	if err != nil {
		return newError(http.StatusBadRequest, "invalid_parameter", "kinds must name alert kinds and minSeverity info, warning or critical")
	}
	ctx := c.Request().Context()
	last, err := s.lastEventID(c)
	if err != nil {
		return err
	}
	// A stream is a live connection like a websocket, and counts against the same quota.
	release, ok := s.wsQuota.acquire(quotaKey(c))
	if !ok {
		return errTooManyWebsockets
	}
	defer release()
	res := c.Response()
	// A stream outlives the server's read timeout, which would otherwise end its context.
	rc := http.NewResponseController(res)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	h := res.Header()
	h.Set(echo.HeaderContentType, "text/event-stream")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	res.WriteHeader(http.StatusOK)
	fmt.Fprintf(res, "retry: %d\n: toolq alerts after %d\n\n", streamRetry.Milliseconds(), last)
	res.Flush()

	changes, stop := s.opts.Bus.Subscribe(16)
	defer stop()
	beat := time.NewTicker(streamHeartbeat)
	defer beat.Stop()
	base := s.baseURL(c)
	for {
		if last, ok = s.writeAlertsAfter(ctx, res, last, filter, base); !ok {
			return nil // the response has begun: end the stream, the client resumes
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.streamsDone:
			return nil
		case ev, ok := <-changes:
			if !ok {
				return nil
			}
			if ev.Kind != events.AlertsRaised {
				continue
			}
		case <-beat.C:
			if _, err := s.auth.Authenticate(c.Request()); err != nil {
				fmt.Fprint(res, "event: end\ndata: {\"reason\":\"the credential ended\"}\n\n")
				res.Flush()
				return nil
			}
			if _, err := fmt.Fprint(res, ": ping\n\n"); err != nil {
				return nil
			}
			res.Flush()
		}
	}
}

// writeAlertsAfter writes the alerts after last that the filter matches, page by page, and
// returns the newest alert read; false when the stream must end (a failed read or write).
func (s *Server) writeAlertsAfter(ctx context.Context, res *echo.Response, last int64, filter notify.Filter, base string) (int64, bool) {
	for {
		alerts, err := s.opts.Views.AlertsAfter(ctx, last, views.MaxAlertPage)
		if err != nil {
			return last, false
		}
		for _, a := range alerts {
			last = a.ID
			if !filter.Match(a) {
				continue
			}
			a.URL = base + a.Path
			js, err := json.Marshal(a)
			if err != nil {
				return last, false
			}
			if _, err := fmt.Fprintf(res, "id: %d\nevent: %s\ndata: %s\n\n", a.ID, a.Kind, js); err != nil {
				return last, false
			}
		}
		res.Flush()
		if len(alerts) < views.MaxAlertPage {
			return last, true
		}
	}
}

// lastEventID reads where a stream resumes: Last-Event-ID, ?lastEventId=, or the newest alert.
func (s *Server) lastEventID(c echo.Context) (int64, error) {
	v := strings.TrimSpace(c.Request().Header.Get("Last-Event-ID"))
	if v == "" {
		v = c.QueryParam("lastEventId")
	}
	if v == "" {
		return s.opts.Views.LatestAlertID(c.Request().Context())
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, newError(http.StatusBadRequest, "invalid_parameter", "Last-Event-ID must be the id of an event of this stream")
	}
	return n, nil
}

// notificationsStart is when the running dashboard's targets were recorded; the far future
// without a notifier, which lists none.
func (s *Server) notificationsStart() time.Time {
	if s.opts.Notifier == nil {
		return time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return s.opts.Notifier.StartedAt()
}

// getNotifications answers GET /api/v1/notifications: the targets, what each was sent, and the
// newest delivery attempts.
func (s *Server) getNotifications(c echo.Context) error {
	n, err := s.opts.Views.Notifications(c.Request().Context(), s.notificationsStart())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, n)
}

// testNotificationRequest is the body of POST /api/v1/notifications/test.
type testNotificationRequest struct {
	Target string `json:"target"`
}

// sendTestNotification answers POST /api/v1/notifications/test (operator): a test message to the
// target, or to every target; 202 with the targets it was queued for.
func (s *Server) sendTestNotification(c echo.Context) error {
	var body testNotificationRequest
	if err := decodeJSON(c, &body, true); err != nil {
		return err
	}
	queued, err := s.sendTest(c, body.Target)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string][]string{"queued": queued})
}

// sendTest hands a test request to the notifier, from the API and the status page alike.
func (s *Server) sendTest(c echo.Context, target string) ([]string, error) {
	if len(target) > 64 {
		return nil, newError(http.StatusBadRequest, "invalid_parameter", "target is too long")
	}
	if s.opts.Notifier == nil {
		return nil, errNoTarget
	}
	id := identity(c)
	queued, err := s.opts.Notifier.SendTest(c.Request().Context(), notify.TestRequest{Target: target, By: id.Name, ByKind: id.Kind, ByTokenID: id.TokenID, Role: id.Role, RemoteAddr: c.RealIP()})
	switch {
	case errors.Is(err, notify.ErrForbidden):
		return nil, newError(http.StatusForbidden, "forbidden", "only operators may send test notifications")
	case errors.Is(err, notify.ErrNoTarget):
		return nil, fmt.Errorf("%w: %w", errNoTarget, err) // with the targets' names
	}
	return queued, err
}

var errNoTarget = newError(http.StatusNotFound, "target_not_found", "no notification target has that name (see --notify)")
