package server

import (
	"context"
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

// queuesRequest is a queue list's filters as a client sent them (GET /api/v1/queues, the
// list_queues tool): the statuses to keep, dead-letter queues only, misconfigured ones only, one
// account (a configured name or an id), one region.
type queuesRequest struct {
	Health                 []string
	DLQOnly, Misconfigured bool
	Account, Region        string
}

// queues checks a queue list's filters and lists the queues they keep, unhealthy first.
func (s *Server) queues(ctx context.Context, r queuesRequest) (queueList, error) {
	q := views.QueueQuery{DLQOnly: r.DLQOnly, Misconfigured: r.Misconfigured}
	var err error
	if q.Account, q.Region, err = validScope(r.Account, r.Region); err != nil {
		return queueList{}, err
	}
	for _, status := range r.Health {
		switch status := views.HealthStatus(strings.TrimSpace(status)); status {
		case views.HealthOK, views.HealthUnknown, views.HealthWarning, views.HealthCritical:
			q.Health = append(q.Health, status)
		default:
			return queueList{}, newError(http.StatusBadRequest, "invalid_parameter", "health must list ok, unknown, warning or critical")
		}
	}
	queues, err := s.opts.Views.Queues(ctx, q)
	if err != nil {
		return queueList{}, err
	}
	if queues == nil {
		queues = []views.QueueSummary{}
	}
	return queueList{Queues: queues}, nil
}

// listQueues answers GET /api/v1/queues?health=warning,critical&dlq=true&misconfigured=true&account=&region=.
func (s *Server) listQueues(c echo.Context) error {
	r := queuesRequest{Account: c.QueryParam("account"), Region: c.QueryParam("region")}
	if h := c.QueryParam("health"); h != "" {
		r.Health = strings.Split(h, ",")
	}
	var err error
	if r.DLQOnly, err = boolParam(c, "dlq"); err != nil {
		return err
	}
	if r.Misconfigured, err = boolParam(c, "misconfigured"); err != nil {
		return err
	}
	list, err := s.queues(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// queueDetail reads one queue, named by its name or ARN: its summary, attributes, what
// surrounds it.
func (s *Server) queueDetail(ctx context.Context, ref string) (views.QueueDetail, error) {
	key, err := s.resolveQueue(ctx, ref)
	if err != nil {
		return views.QueueDetail{}, err
	}
	return s.opts.Views.Queue(ctx, key.ID)
}

// getQueue answers GET /api/v1/queues/{queue}.
func (s *Server) getQueue(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	q, err := s.queueDetail(c.Request().Context(), ref)
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
