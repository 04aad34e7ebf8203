package server

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// listMessages answers GET /api/v1/queues/{queue}/messages?toolName=&nearMax=&limit=&cursor=:
// a page of the queue's newest sample.
func (s *Server) listMessages(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	var q views.MessageQuery
	if q.ToolName, err = toolParam(c, "toolName"); err != nil {
		return err
	}
	if q.Cursor, err = textParam(c, "cursor", 256); err != nil {
		return err
	}
	if q.NearMaxOnly, err = boolParam(c, "nearMax"); err != nil {
		return err
	}
	limit, err := intParam(c, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	q.Limit = int(limit)
	page, err := s.opts.Views.Messages(c.Request().Context(), key.ID, q)
	if err != nil {
		return err
	}
	if page.Messages == nil {
		page.Messages = []views.Message{}
	}
	if page.Tools == nil {
		page.Tools = []views.ToolCount{}
	}
	return c.JSON(http.StatusOK, page)
}

// getMessage answers GET /api/v1/queues/{queue}/messages/{messageId}.
func (s *Server) getMessage(c echo.Context) error {
	id, err := messageIDParam(c)
	if err != nil {
		return err
	}
	// The queue is resolved first, so that a 404 says which of the two is missing.
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	m, err := s.opts.Views.Message(c.Request().Context(), key.ID, id)
	if errors.Is(err, views.ErrNotFound) {
		return newError(http.StatusNotFound, "message_not_found", "no message with that id in the queue's newest sample")
	}
	if err != nil {
		return err
	}
	if m.Attributes == nil {
		m.Attributes = []views.MessageAttribute{}
	}
	return c.JSON(http.StatusOK, m)
}
