package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// pageRoutes registers the browser pages, static files and the websocket (owner: page side).
func (s *Server) pageRoutes(e *echo.Echo) {}

// renderErrorPage answers a browser request that failed: a full page, or a fragment for an HTMX
// request. msg is already safe to show (owner: page side; the API side's error handler calls it).
func (s *Server) renderErrorPage(c echo.Context, status int, msg string) error {
	return c.String(status, http.StatusText(status)+": "+msg)
}
