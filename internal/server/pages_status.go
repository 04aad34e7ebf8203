package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/templates"
)

// statusPage answers GET /status: what toolq can and cannot read in AWS, region by region.
func (s *Server) statusPage(c echo.Context) error {
	st, err := s.opts.Views.Status(c.Request().Context())
	if err != nil {
		return err
	}
	p := templates.StatusProps{Page: s.page(c, "Status", "status", ""), Status: st}
	return render(c, http.StatusOK, templates.StatusPage(p))
}
