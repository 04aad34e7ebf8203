// Package static holds the browser assets (vendored htmx and htmx-ext-ws, the stylesheet and a
// little script), embedded in the binary and served under content-hashed names so that browsers
// may cache them for good.
package static

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed *.js *.css
var files embed.FS

// Prefix is the URL path under which the assets are served.
const Prefix = "/static/"

// asset is one embedded file with its content hash.
type asset struct {
	name string
	hash string
	body []byte
	mime string
}

// catalogue is computed once, at the first use: the files are embedded, so their hashes never
// change while the process runs, and no request ever writes to it.
var catalogue = sync.OnceValue(func() map[string]asset {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic("static: read embedded files: " + err.Error()) // a build error, not a runtime one
	}
	m := make(map[string]asset, len(entries))
	for _, e := range entries {
		body, err := files.ReadFile(e.Name())
		if err != nil {
			panic("static: read " + e.Name() + ": " + err.Error())
		}
		sum := sha256.Sum256(body)
		m[e.Name()] = asset{name: e.Name(), hash: hex.EncodeToString(sum[:6]), body: body, mime: mimeOf(e.Name())}
	}
	return m
})

func mimeOf(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	}
	return "application/octet-stream"
}

// URL returns the cache-busting URL of an embedded asset, e.g. "/static/3f2a9c01b2d4/app.css".
// It panics on a name that is not embedded: templates name assets by constant, so that is a
// programming error caught by any test that renders a page.
func URL(name string) string {
	a, ok := catalogue()[name]
	if !ok {
		panic("static: no asset " + name)
	}
	return Prefix + a.hash + "/" + a.name
}

// Handler serves Prefix + "<hash>/<name>". The current hash is cached for a year as immutable; a
// stale hash (a page rendered before a deploy) still gets the current file, but uncached.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.TrimPrefix(r.URL.Path, Prefix)
		hash, name, ok := strings.Cut(rest, "/")
		a, found := catalogue()[name]
		if !ok || !found || strings.Contains(name, "/") {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.mime)
		h.Set("X-Content-Type-Options", "nosniff")
		if hash == a.hash {
			h.Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			h.Set("Cache-Control", "no-cache")
		}
		h.Set("ETag", `"`+a.hash+`"`)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(a.body))
	})
}
