package server

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDocument describes /api/v1 in OpenAPI 3; a test keeps its paths equal to the routes.
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI answers GET /api/v1/openapi.json.
func (s *Server) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDocument)
}
