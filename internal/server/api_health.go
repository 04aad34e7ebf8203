package server

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolq/toolq/internal/views"
)

// probe is the body of /healthz and /readyz.
type probe struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// healthz answers GET /healthz: the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, probe{Status: "ok", Version: s.opts.Version})
}

// readyz answers GET /readyz: 200 once the database answers and the collector's first discovery
// has ended, whatever AWS answered. AWS trouble is shown on the pages and the status endpoint;
// failing readiness for it would take the only replica out of its Service exactly when its
// "cannot see" banner matters.
func (s *Server) readyz(c echo.Context) error {
	if err := s.opts.Views.Ready(c.Request().Context()); err != nil {
		var nr *views.NotReadyError
		if !errors.As(err, &nr) {
			return err
		}
		return c.JSON(http.StatusServiceUnavailable, probe{Status: "unavailable", Reason: nr.Reason})
	}
	return c.JSON(http.StatusOK, probe{Status: "ready"})
}

// serveMetrics answers GET /metrics from the registry the wiring passed.
func (s *Server) serveMetrics(c echo.Context) error {
	h := promhttp.HandlerFor(s.opts.Metrics, promhttp.HandlerOpts{ErrorLog: nil})
	h.ServeHTTP(c.Response(), c.Request())
	return nil
}
