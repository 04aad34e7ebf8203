package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// maxSeriesSpan caps a metrics query: CloudWatch keeps one-minute points for 15 days, and a
// wider span is a costly query for nothing.
const maxSeriesSpan = 15 * 24 * time.Hour

// queueList is GET /api/v1/queues.
type queueList struct {
	Queues []views.QueueSummary `json:"queues"`
}

// listQueues answers GET /api/v1/queues?health=warning,critical&dlq=true&misconfigured=true&account=&region=.
func (s *Server) listQueues(c echo.Context) error {
	var q views.QueueQuery
	var err error
	if q.Account, q.Region, err = scopeParams(c); err != nil {
		return err
	}
	if h := c.QueryParam("health"); h != "" {
		for _, status := range strings.Split(h, ",") {
			switch status := views.HealthStatus(strings.TrimSpace(status)); status {
			case views.HealthOK, views.HealthUnknown, views.HealthWarning, views.HealthCritical:
				q.Health = append(q.Health, status)
			default:
				return newError(http.StatusBadRequest, "invalid_parameter", "health must list ok, unknown, warning or critical")
			}
		}
	}
	dlq, err := boolParam(c, "dlq")
	if err != nil {
		return err
	}
	q.DLQOnly = dlq
	if q.Misconfigured, err = boolParam(c, "misconfigured"); err != nil {
		return err
	}
	queues, err := s.opts.Views.Queues(c.Request().Context(), q)
	if err != nil {
		return err
	}
	if queues == nil {
		queues = []views.QueueSummary{}
	}
	return c.JSON(http.StatusOK, queueList{Queues: queues})
}

// getQueue answers GET /api/v1/queues/{queue}.
func (s *Server) getQueue(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	q, err := s.opts.Views.Queue(c.Request().Context(), key.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, q)
}

// getQueueMetric answers GET /api/v1/queues/{queue}/metrics?name=&since=&until=: one metric over
// a span (default the last hour).
func (s *Server) getQueueMetric(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	name, err := textParam(c, "name", 64)
	if err != nil {
		return err
	}
	if name == "" {
		name = "ApproximateNumberOfMessagesVisible"
	}
	until, err := timeParam(c, "until", s.opts.Now())
	if err != nil {
		return err
	}
	since, err := timeParam(c, "since", until.Add(-time.Hour))
	if err != nil {
		return err
	}
	if !since.Before(until) {
		return newError(http.StatusBadRequest, "invalid_parameter", "since must be before until")
	}
	if until.Sub(since) > maxSeriesSpan {
		return newError(http.StatusBadRequest, "span_too_long", "the span may not exceed 15 days")
	}
	series, err := s.opts.Views.Series(c.Request().Context(), key.ID, name, since, until)
	if err != nil {
		return err
	}
	if series.Points == nil {
		series.Points = []views.Point{}
	}
	return c.JSON(http.StatusOK, series)
}

// getQueueGroups answers GET /api/v1/queues/{queue}/groups: the FIFO backlog per group.
func (s *Server) getQueueGroups(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	g, err := s.opts.Views.Groups(c.Request().Context(), key.ID)
	if err != nil {
		return err
	}
	if g.Groups == nil {
		g.Groups = []views.Group{}
	}
	return c.JSON(http.StatusOK, g)
}
