package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/views"
)

// apiError is an error answered to a client as it is: Code is stable for bots, Message is safe
// to show.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

// newError returns an apiError to answer.
func newError(status int, code, msg string) *apiError {
	return &apiError{Status: status, Code: code, Message: msg}
}

// errorBody is the JSON shape of every API error.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// handleError is the one HTTP error handler: it logs with the request id and answers JSON for the
// API, a page (or fragment) for browsers, and never internal text.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	e := publicError(err)
	if e == errInternal && !s.databaseAnswers(c) {
		// The store failed because the database is down (PostgreSQL unreachable, the file
		// gone): an outage to wait out, not a bug of toolq's.
		e = errDatabaseUnavailable
	}
	attrs := []any{"request_id", requestID(c), "method", c.Request().Method, "path", c.Request().URL.Path,
		"status", e.Status, "code", e.Code, "err", err}
	if e.Status >= 500 {
		s.log.Error("request failed", attrs...)
	} else {
		s.log.Debug("request refused", attrs...)
	}
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		if c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", "1")
		}
	}
	var werr error
	switch {
	case c.Request().Method == http.MethodHead:
		werr = c.NoContent(e.Status)
	case wantsJSON(c):
		werr = c.JSON(e.Status, errorBody{Error: errorDetail{Code: e.Code, Message: e.Message}})
	default:
		werr = s.renderErrorPage(c, e.Status, e.Message)
	}
	if werr != nil {
		s.log.Warn("write error response", "request_id", requestID(c), "err", werr)
	}
}

// wantsJSON reports whether the request is a machine's: the API and the operational endpoints.
func wantsJSON(c echo.Context) bool {
	p := c.Request().URL.Path
	return isAPIPath(p) || p == "/metrics" || p == "/healthz" || p == "/readyz"
}

// publicError maps any error to what may be shown: the status, a stable code and a safe message.
// A refused choice (a dimension, a queue, a metric that names nothing) says what to choose
// instead: a client without the page's lists, an agent, has only the error to go on.
func publicError(err error) *apiError {
	e := publicErrorOf(err)
	var choice *choices.Error
	if errors.As(err, &choice) && e.Status < http.StatusInternalServerError {
		return &apiError{Status: e.Status, Code: e.Code, Message: e.Message + "; " + choice.Hint}
	}
	return e
}

// publicErrorOf is publicError without the hint of a refused choice.
func publicErrorOf(err error) *apiError {
	var ae *apiError
	var act *actions.Error
	var he *echo.HTTPError
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &act):
		return &apiError{Status: actionStatus(act.Kind), Code: act.Code, Message: act.Message}
	case errors.Is(err, views.ErrNotFound):
		return newError(http.StatusNotFound, "queue_not_found", "no watched queue has that name or ARN")
	case errors.Is(err, views.ErrAmbiguous):
		return newError(http.StatusConflict, "ambiguous_queue", "several watched queues have that name; use the queue's ARN")
	case errors.Is(err, views.ErrUnknownMetric):
		return newError(http.StatusBadRequest, "unknown_metric", "unknown metric name")
	case errors.Is(err, views.ErrUnknownDimension):
		return newError(http.StatusBadRequest, "unknown_dimension", "no dimension of that name is configured")
	case errors.Is(err, views.ErrBadCursor):
		return newError(http.StatusBadRequest, "bad_cursor", "the cursor is not valid; start again without it")
	case errors.Is(err, context.DeadlineExceeded):
		return newError(http.StatusGatewayTimeout, "timeout", "the request took too long")
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads this answer, but the log line should not say 500.
		return newError(http.StatusServiceUnavailable, "cancelled", "the request was cancelled")
	case errors.As(err, &mbe):
		return newError(http.StatusRequestEntityTooLarge, "body_too_large", "the request body is too large")
	case errors.As(err, &he):
		return fromHTTPError(he)
	}
	return errInternal
}

// errInternal is every failure that has no answer of its own: details only in the log.
var errInternal = newError(http.StatusInternalServerError, "internal_error", "internal error")

// errDatabaseUnavailable answers a request that failed while the database does not answer.
var errDatabaseUnavailable = newError(http.StatusServiceUnavailable, "database_unavailable",
	"toolq's database does not answer; nothing was changed; try again shortly")

// databaseWait bounds the look at the database after a failure.
const databaseWait = 2 * time.Second

// databaseAnswers reports whether the database answers now, within databaseWait; a request
// that ended meanwhile gets the benefit of the doubt (its answer is read by nobody).
func (s *Server) databaseAnswers(c echo.Context) bool {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), databaseWait)
	defer cancel()
	return s.opts.Views.DatabaseAnswers(ctx)
}

// actionStatus is the HTTP status of each kind of refused action: the one place they are mapped.
func actionStatus(kind actions.Kind) int {
	switch kind {
	case actions.Forbidden:
		return http.StatusForbidden
	case actions.Invalid:
		return http.StatusBadRequest
	case actions.NotFound:
		return http.StatusNotFound
	case actions.Conflict:
		return http.StatusConflict
	case actions.Upstream:
		return http.StatusBadGateway
	case actions.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnprocessableEntity
}

// fromHTTPError maps echo's errors (unknown route, wrong method, body limit) to the error shape
// with a fixed message per status: echo's own messages may carry internal detail.
func fromHTTPError(he *echo.HTTPError) *apiError {
	switch he.Code {
	case http.StatusNotFound:
		return newError(he.Code, "not_found", "not found")
	case http.StatusMethodNotAllowed:
		return newError(he.Code, "method_not_allowed", "method not allowed")
	case http.StatusRequestEntityTooLarge:
		return newError(he.Code, "body_too_large", "the request body is too large")
	case http.StatusUnauthorized:
		return newError(he.Code, "unauthorized", "authentication required")
	case http.StatusForbidden:
		return newError(he.Code, "forbidden", "forbidden")
	case http.StatusTooManyRequests:
		return newError(he.Code, "rate_limited", "too many requests; retry later")
	case http.StatusUnsupportedMediaType:
		return newError(he.Code, "unsupported_media_type", "send Content-Type: application/json")
	}
	if he.Code >= 400 && he.Code < 500 {
		return newError(he.Code, "bad_request", http.StatusText(he.Code))
	}
	return errInternal
}
