package server

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/views"
)

// discardRequest is the body of POST /api/v1/queues/{queue}/discards.
type discardRequest struct {
	Selection *engine.Selection `json:"selection"`
}

// restoreRequest is the body of POST /api/v1/queues/{queue}/archive/restores.
type restoreRequest struct {
	Selection   *engine.Selection `json:"selection"`
	Destination string            `json:"destination"`
}

// startDiscard answers POST /api/v1/queues/{queue}/discards: 202 and the discard, a redrive of
// kind discard in the queue's redrive list.
func (s *Server) startDiscard(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	var body discardRequest
	// An empty body reaches the action, which checks the role first, then the selection.
	if err := decodeJSON(c, &body, true); err != nil {
		return err
	}
	task, err := s.opts.Actions.StartRedrive(c.Request().Context(), actor(c), actions.StartRedriveRequest{
		Queue: ref, Selection: body.Selection, Discard: true,
		IdempotencyKey: c.Request().Header.Get(headerIdempotencyKey),
	})
	return s.answerStart(c, task, err)
}

// startRestore answers POST /api/v1/queues/{queue}/archive/restores: 202 and the restore, a
// redrive of kind restore in the queue's redrive list.
func (s *Server) startRestore(c echo.Context) error {
	ref, err := queueParam(c)
	if err != nil {
		return err
	}
	var body restoreRequest
	if err := decodeJSON(c, &body, true); err != nil {
		return err
	}
	task, err := s.opts.Actions.StartRestore(c.Request().Context(), actor(c), actions.StartRestoreRequest{
		Queue: ref, Selection: body.Selection, Destination: body.Destination,
		IdempotencyKey: c.Request().Header.Get(headerIdempotencyKey),
	})
	return s.answerStart(c, task, err)
}

// archiveQuery reads an archive list's query: ?toolName, ?q, ?cursor, ?limit.
func archiveQuery(c echo.Context) (views.ArchiveQuery, error) {
	var aq views.ArchiveQuery
	var err error
	if aq.ToolName, err = validToolName("toolName", c.QueryParam("toolName")); err != nil {
		return aq, err
	}
	if aq.Search, err = validText("q", c.QueryParam("q"), maxSearch); err != nil {
		return aq, err
	}
	if aq.Cursor, err = validText("cursor", c.QueryParam("cursor"), 256); err != nil {
		return aq, err
	}
	limit, err := intParam(c, "limit", views.DefaultMessageLimit, 1, views.MaxMessageLimit)
	aq.Limit = int(limit)
	return aq, err
}

// listArchive answers GET /api/v1/queues/{queue}/archive: the queue's archived messages, newest
// first, a page at a time.
func (s *Server) listArchive(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	return s.archivePage(c, key.ID)
}

// listWholeArchive answers GET /api/v1/archive: every queue's archived messages.
func (s *Server) listWholeArchive(c echo.Context) error { return s.archivePage(c, 0) }

func (s *Server) archivePage(c echo.Context, queueID int64) error {
	aq, err := archiveQuery(c)
	if err != nil {
		return err
	}
	page, err := s.opts.Views.Archive(c.Request().Context(), queueID, aq)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, page)
}

// getArchived answers GET /api/v1/queues/{queue}/archive/{messageId}: the newest archived copy
// of a message of the queue.
func (s *Server) getArchived(c echo.Context) error {
	id, err := messageIDParam(c)
	if err != nil {
		return err
	}
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	m, err := s.opts.Views.ArchivedMessageByID(c.Request().Context(), key.ID, id)
	if errors.Is(err, views.ErrNotFound) {
		return newError(http.StatusNotFound, "message_not_found", "the archive holds no message of that id from this queue")
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, m)
}
