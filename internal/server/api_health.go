package server

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/toolq/toolq/internal/store"
)

// probe is the body of /healthz and /readyz.
type probe struct {
	Status     string     `json:"status"`
	Version    string     `json:"version,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	LastCycle  *time.Time `json:"lastCycle,omitempty"`
	AgeSeconds *float64   `json:"ageSeconds,omitempty"`
}

// healthz answers GET /healthz: the process is up.
func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, probe{Status: "ok", Version: s.opts.Version})
}

// readyz answers GET /readyz: the database answers and the collector's attribute loop finished
// a cycle within ReadyAfter, so what the pages show is current.
func (s *Server) readyz(c echo.Context) error {
	ctx := c.Request().Context()
	if err := s.opts.Store.Ping(ctx); err != nil {
		s.log.Warn("readyz: database", "err", err)
		return c.JSON(http.StatusServiceUnavailable, probe{Status: "unavailable", Reason: "the database does not answer"})
	}
	run, err := s.opts.Store.LatestRun(ctx, store.RunAttributes)
	if errors.Is(err, store.ErrNotFound) {
		return c.JSON(http.StatusServiceUnavailable, probe{Status: "unavailable", Reason: "no collector cycle has collected anything yet"})
	}
	if err != nil {
		s.log.Warn("readyz: latest run", "err", err)
		return c.JSON(http.StatusServiceUnavailable, probe{Status: "unavailable", Reason: "the database does not answer"})
	}
	age := s.opts.Now().Sub(run.FinishedAt)
	secs := age.Seconds()
	p := probe{Status: "ready", LastCycle: &run.FinishedAt, AgeSeconds: &secs}
	if age > s.opts.ReadyAfter {
		p.Status = "unavailable"
		p.Reason = fmt.Sprintf("the last collector cycle finished %.0f s ago", secs)
		return c.JSON(http.StatusServiceUnavailable, p)
	}
	return c.JSON(http.StatusOK, p)
}

// serveMetrics answers GET /metrics from the registry the wiring passed.
func (s *Server) serveMetrics(c echo.Context) error {
	h := promhttp.HandlerFor(s.opts.Metrics, promhttp.HandlerOpts{ErrorLog: nil})
	h.ServeHTTP(c.Response(), c.Request())
	return nil
}
