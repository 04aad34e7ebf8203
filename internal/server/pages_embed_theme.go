package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/templates"
)

// embedThemeCSS answers GET /embed-theme.css?colors=: the stylesheet an embedded page links to
// carry its portal's colours. The CSP allows no inline style, so the colours come as a
// stylesheet of this origin; only hex colours of the allowlisted variables get into it.
func (s *Server) embedThemeCSS(c echo.Context) error {
	colors, ok := templates.ParseEmbedColors(c.QueryParam("colors"))
	if !ok {
		return newError(http.StatusBadRequest, "bad_colors", "colors: want name:hex pairs of "+strings.Join(templates.EmbedColorNames, ", "))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=86400")
	return c.Blob(http.StatusOK, "text/css; charset=utf-8", []byte(templates.EmbedThemeCSS(colors)))
}
