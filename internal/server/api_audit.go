package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// auditPage is GET /api/v1/audit. NextBefore, when set, fetches the next (older) page as
// ?before=NextBefore.
type auditPage struct {
	Entries    []views.AuditEntry `json:"entries"`
	NextBefore *int64             `json:"nextBefore"`
}

// listAudit answers GET /api/v1/audit?queue=&limit=&before=, newest first.
func (s *Server) listAudit(c echo.Context) error {
	var f views.AuditQuery
	var err error
	if f.Queue, err = textParam(c, "queue", 256); err != nil {
		return err
	}
	limit, err := intParam(c, "limit", 50, 1, 500)
	if err != nil {
		return err
	}
	f.Limit = int(limit)
	if f.BeforeID, err = intParam(c, "before", 0, 1, 1<<62); err != nil {
		return err
	}
	entries, err := s.opts.Views.Audit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	page := auditPage{Entries: entries}
	if page.Entries == nil {
		page.Entries = []views.AuditEntry{}
	}
	if n := len(entries); n == f.Limit && n > 0 {
		next := entries[n-1].ID
		page.NextBefore = &next
	}
	return c.JSON(http.StatusOK, page)
}
