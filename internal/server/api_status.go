package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// getStatus answers GET /api/v1/status: what toolq can and cannot see, region by region.
func (s *Server) getStatus(c echo.Context) error {
	st, err := s.opts.Views.Status(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, st)
}
