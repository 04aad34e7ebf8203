package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// getSummary answers GET /api/v1/summary: JSON, or with Accept: text/plain the text a chat bot
// posts as it is.
func (s *Server) getSummary(c echo.Context) error {
	sum, err := s.opts.Views.Summary(c.Request().Context())
	if err != nil {
		return err
	}
	if prefersText(c.Request().Header.Get(echo.HeaderAccept)) {
		return c.String(http.StatusOK, sum.Text())
	}
	if sum.Unhealthy == nil {
		sum.Unhealthy = []views.QueueSummary{}
	}
	if sum.DeadLetterQueues == nil {
		sum.DeadLetterQueues = []views.DLQDepth{}
	}
	if sum.RunningRedrives == nil {
		sum.RunningRedrives = []views.Redrive{}
	}
	return c.JSON(http.StatusOK, sum)
}

// prefersText reports whether an Accept header asks for text/plain rather than JSON.
func prefersText(accept string) bool {
	return strings.Contains(accept, "text/plain") && !strings.Contains(accept, "json")
}
