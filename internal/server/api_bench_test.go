package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolq/toolq/internal/auth"
)

// BenchmarkAPIListQueues measures GET /api/v1/queues through the whole middleware chain with a
// Bearer token: request id, headers, body limit, token lookup in SQLite, rate limit, views.
func BenchmarkAPIListQueues(b *testing.B) {
	h := newAPIHarness(b, harnessConfig{mode: auth.ModeToken})
	req := httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil)
	req.Header.Set("Authorization", "Bearer "+h.viewer)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
	}
}

// BenchmarkAPIHealthz measures the middleware chain alone on a public endpoint.
func BenchmarkAPIHealthz(b *testing.B) {
	h := newAPIHarness(b, harnessConfig{mode: auth.ModeToken})
	req := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(rec, req)
	}
}
