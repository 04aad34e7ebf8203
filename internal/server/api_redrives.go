package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/views"
)

// redriveList is GET /api/v1/queues/{queue}/redrives.
type redriveList struct {
	Redrives []views.Redrive `json:"redrives"`
}

// startRedriveRequest is the body of POST /api/v1/queues/{queue}/redrives; every field is
// optional (an empty body moves every message back to its original source at SQS's pace). A
// selection makes it a selective redrive of the messages it names.
type startRedriveRequest struct {
	Destination string            `json:"destination"`
	Selection   *engine.Selection `json:"selection"`
	// MaxMessagesPerSecond stays the JSON value as written, handed to the action as text: the
	// action refuses anything but a whole number from 1 to 500 (an explicit 0, 2.5, "fast") after
	// its role check, and audits it, as it does the form's field. Leaving the field out, or null,
	// lets SQS choose.
	MaxMessagesPerSecond json.RawMessage `json:"maxMessagesPerSecond"`
}

// rawRate is the text of a JSON rate for the action: empty when it was left out or null.
func rawRate(v json.RawMessage) string {
	if s := string(bytes.TrimSpace(v)); s != "null" {
		return s
	}
	return ""
}

// redrives reads a dead-letter queue's move tasks, newest first.
func (s *Server) redrives(ctx context.Context, ref string) (redriveList, error) {
	key, err := s.resolveQueue(ctx, ref)
	if err != nil {
		return redriveList{}, err
	}
	rs, err := s.opts.Views.Redrives(ctx, key.ID)
	if err != nil {
		return redriveList{}, err
	}
	if rs == nil {
		rs = []views.Redrive{}
	}
	return redriveList{Redrives: rs}, nil
}

// listRedrives answers GET /api/v1/queues/{queue}/redrives, newest first.
func (s *Server) listRedrives(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	list, err := s.redrives(c.Request().Context(), ref)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// getRedrive answers GET /api/v1/queues/{queue}/redrives/{redriveId}: one move task of the
// dead-letter queue, with what came back of it.
func (s *Server) getRedrive(c echo.Context) error {
	_, r, err := s.redriveOf(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, r)
}

// redriveOf reads the {queue} and {redriveId} of a request, the API's or a page's: the
// dead-letter queue and its redrive of that id; 404 redrive_not_found when it has none (rather
// than that the queue was not found).
func (s *Server) redriveOf(c echo.Context) (views.QueueKey, views.Redrive, error) {
	key, err := s.queueOf(c)
	if err != nil {
		return key, views.Redrive{}, err
	}
	id, err := redriveIDParam(c)
	if err != nil {
		return key, views.Redrive{}, err
	}
	r, err := s.opts.Views.RedriveByID(c.Request().Context(), key.ID, id)
	if errors.Is(err, views.ErrNotFound) {
		err = newError(http.StatusNotFound, "redrive_not_found", "this dead-letter queue has no redrive of that id")
	}
	return key, r, err
}

// headerIdempotencyKey names a start, so that a client that lost the answer can ask again;
// headerIdempotentReplayed marks the answer to such a repeat, which started nothing (as
// Stripe's API and others mark theirs).
const (
	headerIdempotencyKey     = "Idempotency-Key"
	headerIdempotentReplayed = "Idempotent-Replayed"
)

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
	ctx := c.Request().Context()
	task, err := s.opts.Actions.StartRedrive(ctx, actor(c), actions.StartRedriveRequest{
		Queue:        ref,
		Destination:  body.Destination,
		MaxPerSecond: rawRate(body.MaxMessagesPerSecond), // the action checks 1..500 and audits a refusal
		Selection:    body.Selection,
		// A repeat with the same key is answered as the first start was; the action checks it.
		IdempotencyKey: c.Request().Header.Get(headerIdempotencyKey),
	})
	return s.answerStart(c, task, err)
}

// answerStart answers a start of the API's (a redrive, a discard, a restore): 202 and the
// redrive, or the refusal; a repeat of an earlier start's idempotency key is marked as one,
// a refusal repeated too (the error handler keeps the header).
func (s *Server) answerStart(c echo.Context, task actions.StartedRedrive, err error) error {
	if task.Repeat {
		c.Response().Header().Set(headerIdempotentReplayed, "true")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, s.opts.Views.Redrive(task.MoveTask))
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
	return c.JSON(http.StatusOK, s.opts.Views.Redrive(task))
}
