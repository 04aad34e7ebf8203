package server

import (
	"fmt"
	"net/http"
	"strings"

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
// encoded, such as /metrics when Prometheus compresses its own). The static assets are not its business: they are compressed at build
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
