package server

import "github.com/labstack/echo/v4"

// apiRoutes registers /api/v1, /healthz, /readyz, /metrics and the middleware (owner: API side).
func (s *Server) apiRoutes(e *echo.Echo) {}

// csrfToken returns the CSRF token a page must put in its forms (owner: API side).
func csrfToken(c echo.Context) string { return "" }
