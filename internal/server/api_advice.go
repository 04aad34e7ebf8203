package server

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/views"
)

// adviceRequest narrows what the advisor found (GET /api/v1/advice, the get_advice tool): to
// one queue (a name or ARN) and one rule (an id); empty: all.
type adviceRequest struct {
	Queue, Rule string
}

// advice checks the narrowing and reads what the configuration advisor found, every rule it
// checks (those turned off marked) and what it could not check.
func (s *Server) advice(ctx context.Context, r adviceRequest) (views.AdviceList, error) {
	var q views.AdviceQuery
	rule, err := validText("rule", r.Rule, 64)
	if err != nil {
		return views.AdviceList{}, err
	}
	if rule != "" {
		if _, ok := views.AdviceRuleByID(rule); !ok {
			return views.AdviceList{}, newError(http.StatusBadRequest, "invalid_parameter", "rule must be one of the advisor's rule ids; "+choices.Hint(rule, views.AdviceRuleIDs()))
		}
		q.Rule = rule
	}
	if r.Queue != "" {
		key, err := s.resolveQueue(ctx, r.Queue)
		if err != nil {
			return views.AdviceList{}, err
		}
		q.QueueID = key.ID
	}
	return s.opts.Views.Advice(ctx, q)
}

// getAdvice answers GET /api/v1/advice?queue=&rule=.
func (s *Server) getAdvice(c echo.Context) error {
	list, err := s.advice(c.Request().Context(), adviceRequest{Queue: c.QueryParam("queue"), Rule: c.QueryParam("rule")})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}
