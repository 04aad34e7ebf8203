package static

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/andybalholm/brotli"
)

// TestCompressedFormsMatchSources: every asset's brotli and gzip forms decode to the asset as it
// is now; when one does not, its source changed without `go generate ./web/static`.
func TestCompressedFormsMatchSources(t *testing.T) {
	for name, a := range catalogue() {
		for _, form := range []struct {
			ext  string
			data []byte
			open func(io.Reader) (io.Reader, error)
		}{
			{".br", a.br, func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil }},
			{".gz", a.gz, func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		} {
			r, err := form.open(bytes.NewReader(form.data))
			if err != nil {
				t.Fatalf("%s%s: %v", name, form.ext, err)
			}
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, a.body) {
				t.Errorf("%s%s does not decode to %s (%v): run go generate ./web/static", name, form.ext, name, err)
			}
			if len(form.data) >= len(a.body) {
				t.Errorf("%s%s is %d bytes, no smaller than the %d of the source", name, form.ext, len(form.data), len(a.body))
			}
		}
	}
}

func TestHandlerServesThePreferredForm(t *testing.T) {
	a := catalogue()["htmx.min.js"]
	tests := []struct {
		accept   string
		encoding string
		body     []byte
	}{
		{"", "", a.body},
		{"gzip, deflate, br, zstd", "br", a.br},
		{"gzip", "gzip", a.gz},
		{"br;q=0, gzip", "gzip", a.gz},
		{"br;q=0.5, gzip;q=0.8", "gzip", a.gz},
		{"*", "br", a.br},
		{"*;q=0", "", a.body},
		{"identity", "", a.body},
		{"GZIP;q=1.0", "gzip", a.gz},
	}
	for _, tt := range tests {
		t.Run(tt.accept, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, URL("htmx.min.js"), nil)
			if tt.accept != "" {
				req.Header.Set("Accept-Encoding", tt.accept)
			}
			rec := httptest.NewRecorder()
			Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				t.Fatalf("status %d", rec.Code)
			}
			h := rec.Header()
			if h.Get("Content-Encoding") != tt.encoding || !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Errorf("Content-Encoding %q and %d bytes, want %q and %d", h.Get("Content-Encoding"), rec.Body.Len(), tt.encoding, len(tt.body))
			}
			if h.Get("Vary") != "Accept-Encoding" || h.Get("Cache-Control") != "public, max-age=31536000, immutable" {
				t.Errorf("Vary %q, Cache-Control %q", h.Get("Vary"), h.Get("Cache-Control"))
			}
			if h.Get("Content-Type") != "text/javascript; charset=utf-8" {
				t.Errorf("Content-Type %q", h.Get("Content-Type"))
			}
		})
	}
}

// TestETagPerForm: a revalidation answers 304 for the form it was given, not for another.
func TestETagPerForm(t *testing.T) {
	get := func(accept, etag string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, URL("app.css"), nil)
		req.Header.Set("Accept-Encoding", accept)
		if etag != "" {
			req.Header.Set("If-None-Match", etag)
		}
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, req)
		return rec
	}
	br := get("br", "").Header().Get("ETag")
	gz := get("gzip", "").Header().Get("ETag")
	if br == gz || br == "" {
		t.Fatalf("ETags br %q, gzip %q: want two different ones", br, gz)
	}
	if rec := get("br", br); rec.Code != http.StatusNotModified {
		t.Errorf("brotli revalidated with its ETag: %d, want 304", rec.Code)
	}
	if rec := get("gzip", br); rec.Code != http.StatusOK {
		t.Errorf("gzip revalidated with brotli's ETag: %d, want 200", rec.Code)
	}
}
