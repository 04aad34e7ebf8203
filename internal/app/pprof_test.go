package app

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPprofHandler(t *testing.T) {
	tests := []struct {
		name, host, path string
		status           int
	}{
		{"index", "127.0.0.1:6060", "/debug/pprof/", http.StatusOK},
		{"heap", "localhost:6060", "/debug/pprof/heap?debug=1", http.StatusOK},
		{"goroutines", "[::1]:6060", "/debug/pprof/goroutine?debug=1", http.StatusOK},
		{"the command line may hold --session-key", "127.0.0.1:6060", "/debug/pprof/cmdline", http.StatusNotFound},
		{"a re-bound name", "evil.example:6060", "/debug/pprof/heap", http.StatusForbidden},
	}
	h := pprofHandler()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			req.Host = tt.host
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.status {
				t.Errorf("status %d, want %d", rec.Code, tt.status)
			}
		})
	}
}

func TestPprofOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:6060", ":6060", "192.0.2.1:6060"} {
		if stop, err := listenPprof(addr, slog.New(slog.DiscardHandler)); err == nil {
			_ = stop(t.Context())
			t.Errorf("listenPprof(%q) accepted a non-loopback address", addr)
		}
	}
	stop, err := listenPprof("127.0.0.1:0", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := stop(t.Context()); err != nil {
		t.Error(err)
	}
}
