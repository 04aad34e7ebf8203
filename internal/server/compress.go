package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/andybalholm/brotli"

	"github.com/klauspost/compress/gzhttp"
	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/web/static"
)

// compressLevel is the gzip level of dynamic responses. The overview of 1,000 queues is about a
// megabyte of HTML that compresses some 40-fold; level 1 of klauspost's gzip is the fastest, at
// a size near level 5's (docs/performance.md, Compression).
const compressLevel = 1

// compressResponses gzips the pages, fragments, JSON and CSV exports for the clients that accept
// it (gzhttp: Accept-Encoding with q-values, Vary, ETags, nothing under 1 KiB, nothing already
// encoded, such as /metrics when Prometheus compresses its own), and compresses them with brotli
// for a client that asks for brotli alone. The static assets are not its business: they are compressed at build
// time, brotli and gzip, and served as they are (web/static). Websockets compress their own frames (permessage-deflate), and event streams
// are left alone, since a compressor buffers what a stream must send at once.
func compressResponses() (echo.MiddlewareFunc, error) {
	wrap, err := gzhttp.NewWrapper(
		gzhttp.CompressionLevel(compressLevel),
		gzhttp.EnableZstd(false),
		gzhttp.ExceptContentTypes([]string{"text/event-stream"}),
	)
	if err != nil {
		return nil, fmt.Errorf("server: compression: %w", err)
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if isWebsocket(r) || strings.HasPrefix(r.URL.Path, static.Prefix) {
				return next(c)
			}
			res := c.Response()
			plain := res.Writer
			if wantsBrotliAlone(r) {
				return serveBrotli(c, next)
			}
			// The error handler answers inside the compressor, which closes once the handler
			// returns: an error answered later, by the access log, would write to a closed one.
			wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				res.Writer = w
				c.SetRequest(r)
				if err := next(c); err != nil {
					c.Error(err)
				}
			})).ServeHTTP(plain, r)
			res.Writer = plain
			return nil
		}
	}, nil
}

// wantsBrotliAlone reports whether a client asks for brotli but not for gzip (gzhttp answers
// those that take gzip): Accept-Encoding names br with a weight above 0, and neither gzip nor *.
func wantsBrotliAlone(r *http.Request) bool {
	br := false
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(params), "q="), 64)
		if params == "" || err != nil {
			q = 1
		}
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "br":
			br = br || q > 0
		case "gzip", "*":
			if q > 0 {
				return false
			}
		}
	}
	return br
}

// brotliLevel is the brotli quality of dynamic responses: the overview of 1,000 queues (1 MB of
// HTML) is 31 KB in 4.6 ms at quality 2, 22 KB in 15 ms at 4 (46 KB in 1.3 ms with gzip at level 1).
const brotliLevel = 2

// serveBrotli answers with the response brotli-compressed, unless it is an event stream (which
// must go out as it is written) or already encoded.
func serveBrotli(c echo.Context, next echo.HandlerFunc) error {
	res := c.Response()
	plain := res.Writer
	bw := &brotliWriter{ResponseWriter: plain}
	plain.Header().Add("Vary", "Accept-Encoding")
	res.Writer = bw
	defer func() { res.Writer = plain }()
	if err := next(c); err != nil {
		c.Error(err) // inside the compressor, which closes below
	}
	return bw.Close()
}

// brotliWriter compresses what the handler writes, deciding at the headers whether to.
type brotliWriter struct {
	http.ResponseWriter
	bw      *brotli.Writer // nil: as it is
	decided bool
}

func (w *brotliWriter) WriteHeader(code int) {
	if !w.decided {
		w.decided = true
		h := w.Header()
		if code != http.StatusNoContent && code != http.StatusNotModified && h.Get("Content-Encoding") == "" &&
			!strings.HasPrefix(h.Get("Content-Type"), "text/event-stream") {
			h.Set("Content-Encoding", "br")
			h.Del("Content-Length")
			w.bw = brotli.NewWriterLevel(w.ResponseWriter, brotliLevel)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *brotliWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.bw != nil {
		return w.bw.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// Flush sends what was written so far: an event stream's, as it is.
func (w *brotliWriter) Flush() {
	if w.bw != nil {
		_ = w.bw.Flush()
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Close ends the compressed stream.
func (w *brotliWriter) Close() error {
	if w.bw != nil {
		return w.bw.Close()
	}
	return nil
}
