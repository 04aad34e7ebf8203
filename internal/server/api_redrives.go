package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// redriveList is GET /api/v1/queues/{queue}/redrives.
type redriveList struct {
	Redrives []views.Redrive `json:"redrives"`
}

// startRedriveRequest is the body of POST /api/v1/queues/{queue}/redrives; both fields are
// optional (an empty body moves every message back to its original source at SQS's pace).
type startRedriveRequest struct {
	Destination string `json:"destination"`
	// MaxMessagesPerSecond is a pointer so that an explicit 0 is refused rather than read as
	// "let SQS choose", which is what leaving the field out means.
	MaxMessagesPerSecond *int `json:"maxMessagesPerSecond"`
}

// listRedrives answers GET /api/v1/queues/{queue}/redrives, newest first.
func (s *Server) listRedrives(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	rs, err := s.opts.Views.Redrives(c.Request().Context(), ref)
	if err != nil {
		return err
	}
	if rs == nil {
		rs = []views.Redrive{}
	}
	return c.JSON(http.StatusOK, redriveList{Redrives: rs})
}

// startRedrive answers POST /api/v1/queues/{queue}/redrives: 202 and the started move task.
func (s *Server) startRedrive(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	var body startRedriveRequest
	if err := decodeJSON(c, &body, true); err != nil {
		return err
	}
	rate := 0
	if body.MaxMessagesPerSecond != nil {
		if rate = *body.MaxMessagesPerSecond; rate == 0 {
			return newError(http.StatusBadRequest, "invalid_rate", "maxMessagesPerSecond must be from 1 to 500; leave it out to let SQS choose")
		}
	}
	ctx := c.Request().Context()
	task, err := s.opts.Actions.StartRedrive(ctx, actor(c), actions.StartRedriveRequest{
		Queue:        ref,
		Destination:  body.Destination,
		MaxPerSecond: rate,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, s.redriveView(ctx, ref, task))
}

// cancelRedrive answers POST /api/v1/queues/{queue}/redrives/cancel: 200 and the task.
func (s *Server) cancelRedrive(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	var body struct{}
	if err := decodeJSON(c, &body, true); err != nil {
		return err
	}
	ctx := c.Request().Context()
	task, err := s.opts.Actions.CancelRedrive(ctx, actor(c), ref)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.redriveView(ctx, ref, task))
}

// redriveView returns the task an action just stored as the views show it. The action has
// happened by now, so a failure to read it back must not turn into an error a bot would retry:
// it falls back to the task's own fields.
func (s *Server) redriveView(ctx context.Context, ref string, t store.MoveTask) views.Redrive {
	rs, err := s.opts.Views.Redrives(ctx, ref)
	if err == nil {
		for _, r := range rs {
			if r.SourceARN == t.SourceARN && r.StartedAt.Equal(t.StartedAt) {
				return r
			}
		}
	}
	s.log.Warn("read back move task", "queue", ref, "err", err)
	r := views.Redrive{
		TaskHandle:     t.TaskHandle,
		Status:         t.Status,
		SourceARN:      t.SourceARN,
		DestinationARN: t.DestinationARN,
		Moved:          t.Moved,
		ToMove:         t.ToMove,
		FailureReason:  t.FailureReason,
		StartedAt:      t.StartedAt,
		UpdatedAt:      t.UpdatedAt,
		Running:        t.Running(),
	}
	if t.MaxPerSecond > 0 {
		r.MaxMessagesPerSecond = &t.MaxPerSecond
	}
	return r
}
