package server

import (
	"compress/gzip"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestResponsesCompressed: pages, fragments, JSON, CSV and error pages go gzipped to a client
// that accepts gzip, and as they are to one that does not; what is encoded already is left alone.
func TestResponsesCompressed(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	gz := http.Header{"Accept-Encoding": {"gzip, deflate, br"}}
	tests := []struct {
		name     string
		req      request
		status   int
		want     string // in the decoded body
		encoding string // Content-Encoding
	}{
		{"overview page", request{path: "/", header: gz}, http.StatusOK, "<table", "gzip"},
		{"overview fragment", request{path: "/", htmx: true, header: gz}, http.StatusOK, `id="overview-rows"`, "gzip"},
		{"API JSON", request{path: "/api/v1/queues", header: gz}, http.StatusOK, `"web-search-dlq"`, "gzip"},
		{"queue page", request{path: "/queues/web-search-dlq", header: gz}, http.StatusOK, "m-plain", "gzip"},
		{"CSV export under 1 KiB, as it is", request{path: "/queues/web-search-dlq/messages.csv", header: gz}, http.StatusOK, "m-plain", ""},
		{"metrics, compressed by Prometheus once", request{path: "/metrics", header: gz}, http.StatusOK, "toolq_", "gzip"},
		{"error page", request{path: "/queues/no-such-queue", header: gz}, http.StatusNotFound, "</html>", "gzip"},
		{"no Accept-Encoding", request{path: "/"}, http.StatusOK, "<table", ""},
		{"gzip refused", request{path: "/", header: http.Header{"Accept-Encoding": {"gzip;q=0"}}}, http.StatusOK, "<table", ""},
		{"brotli alone", request{path: "/", header: http.Header{"Accept-Encoding": {"br"}}}, http.StatusOK, "<table", "br"},
		{"brotli alone, API JSON", request{path: "/api/v1/queues", header: http.Header{"Accept-Encoding": {"br;q=0.9, identity"}}}, http.StatusOK, `"web-search-dlq"`, "br"},
		{"brotli and gzip: gzip", request{path: "/", header: http.Header{"Accept-Encoding": {"br, gzip;q=0.5"}}}, http.StatusOK, "<table", "gzip"},
		{"brotli refused", request{path: "/", header: http.Header{"Accept-Encoding": {"br;q=0"}}}, http.StatusOK, "<table", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := pw.do(t, tt.req)
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if got := rec.Header().Get("Content-Encoding"); got != tt.encoding {
				t.Fatalf("Content-Encoding %q, want %q", got, tt.encoding)
			}
			if !strings.Contains(rec.Header().Get("Vary"), "Accept-Encoding") {
				t.Errorf("Vary %q does not name Accept-Encoding", rec.Header().Values("Vary"))
			}
			var body io.Reader = rec.Body
			switch tt.encoding {
			case "gzip":
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				body = zr
			case "br":
				body = brotli.NewReader(rec.Body)
			}
			b, err := io.ReadAll(body)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("decoded body lacks %q", tt.want)
			}
		})
	}
}
