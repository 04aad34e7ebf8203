package server

import (
	"context"
	"math"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// auditPerPage is how many audit entries one page lists.
const auditPerPage = 50

// auditPage answers GET /audit?before=: the audit log, newest first. The newest page is live.
func (s *Server) auditPage(c echo.Context) error {
	before, err := intParam(c, "before", 0, 0, math.MaxInt64)
	if err != nil {
		return err
	}
	topic := ""
	if before == 0 {
		topic = "audit"
	}
	p, err := s.auditProps(c.Request().Context(), before)
	if err != nil {
		return err
	}
	p.Page = s.page(c, "Audit log", "audit", topic)
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.AuditTable(p, false))
	}
	return render(c, http.StatusOK, templates.AuditPage(p))
}

// auditProps reads a page of the audit log: one entry more than shown tells whether there is an
// older page.
func (s *Server) auditProps(ctx context.Context, before int64) (templates.AuditProps, error) {
	entries, err := s.opts.Views.Audit(ctx, views.AuditQuery{BeforeID: before, Limit: auditPerPage + 1})
	if err != nil {
		return templates.AuditProps{}, err
	}
	p := templates.AuditProps{First: before == 0}
	if len(entries) > auditPerPage {
		entries = entries[:auditPerPage]
		p.Older = entries[len(entries)-1].ID
	}
	p.Entries = entries
	return p, nil
}

// auditPush renders the newest page of the audit log for the hub.
func (s *Server) auditPush(ctx context.Context, nav templates.Nav) ([]byte, error) {
	p, err := s.auditProps(ctx, 0)
	if err != nil {
		return nil, err
	}
	p.Nav = nav
	p.Now = s.opts.Now().UTC()
	return renderBytes(ctx, templates.AuditTable(p, true))
}
