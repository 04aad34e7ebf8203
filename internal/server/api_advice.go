package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/views"
)

// getAdvice answers GET /api/v1/advice?queue=&rule=: what the configuration advisor found,
// every rule it checks (those turned off marked) and what it could not check.
func (s *Server) getAdvice(c echo.Context) error {
	var q views.AdviceQuery
	rule, err := textParam(c, "rule", 64)
	if err != nil {
		return err
	}
	if rule != "" {
		if _, ok := views.AdviceRuleByID(rule); !ok {
			return newError(http.StatusBadRequest, "invalid_parameter", "rule must be one of the advisor's rule ids (GET /api/v1/advice lists them)")
		}
		q.Rule = rule
	}
	if raw := c.QueryParam("queue"); raw != "" {
		ref, err := validQueueRef(raw)
		if err != nil {
			return err
		}
		key, err := s.opts.Views.ResolveQueue(c.Request().Context(), ref)
		if err != nil {
			return err
		}
		q.QueueID = key.ID
	}
	list, err := s.opts.Views.Advice(c.Request().Context(), q)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}
