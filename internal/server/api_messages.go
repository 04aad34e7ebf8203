package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// messagesRequest is a page of a queue's newest sample as a client asked for it (GET
// /api/v1/queues/{queue}/messages, the list_dlq_messages tool): the queue's name or ARN, the
// query, and the page's size (0: the default, else 1 to 500).
type messagesRequest struct {
	Queue  string
	Filter messageFilter
	Limit  int64
}

// sampledMessages checks a message list's query and reads that page of the queue's newest sample,
// filtered, searched and grouped.
func (s *Server) sampledMessages(ctx context.Context, r messagesRequest) (views.MessagePage, error) {
	key, err := s.resolveQueue(ctx, r.Queue)
	if err != nil {
		return views.MessagePage{}, err
	}
	q, err := validMessageFilter("toolName", r.Filter)
	if err != nil {
		return views.MessagePage{}, err
	}
	limit, err := r.Limit, nil
	if limit != 0 {
		limit, err = validRange("limit", limit, 1, views.MaxMessageLimit)
	}
	if err != nil {
		return views.MessagePage{}, err
	}
	q.Limit = int(limit)
	page, err := s.opts.Views.Messages(ctx, key.ID, q)
	if err != nil {
		return views.MessagePage{}, err
	}
	if page.Messages == nil {
		page.Messages = []views.Message{}
	}
	if page.Tools == nil {
		page.Tools = []views.ToolCount{}
	}
	return page, nil
}

// listMessages answers GET /api/v1/queues/{queue}/messages?toolName=&q=&groupBy=&<dimension>=
// &nearMax=&limit=&cursor=.
func (s *Server) listMessages(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	r := messagesRequest{Queue: ref, Filter: s.messageFilterParams(c, "toolName")}
	if r.Filter.NearMax, err = boolParam(c, "nearMax"); err != nil {
		return err
	}
	if r.Limit, err = intParam(c, "limit", views.DefaultMessageLimit, 1, views.MaxMessageLimit); err != nil {
		return err
	}
	page, err := s.sampledMessages(c.Request().Context(), r)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// message reads one sampled message of a queue, with its full (capped) body.
func (s *Server) message(ctx context.Context, ref, messageID string) (views.Message, error) {
	id, err := validMessageID(messageID)
	if err != nil {
		return views.Message{}, err
	}
	// The queue is resolved first, so that a 404 says which of the two is missing.
	key, err := s.resolveQueue(ctx, ref)
	if err != nil {
		return views.Message{}, err
	}
	m, err := s.opts.Views.Message(ctx, key.ID, id)
	if errors.Is(err, views.ErrNotFound) {
		return views.Message{}, newError(http.StatusNotFound, "message_not_found", "no message with that id in the queue's newest sample")
	}
	if err != nil {
		return views.Message{}, err
	}
	if m.Attributes == nil {
		m.Attributes = []views.MessageAttribute{}
	}
	return m, nil
}

// getMessage answers GET /api/v1/queues/{queue}/messages/{messageId}.
func (s *Server) getMessage(c echo.Context) error {
	id, err := messageIDParam(c)
	if err != nil {
		return err
	}
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	m, err := s.message(c.Request().Context(), ref, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}
