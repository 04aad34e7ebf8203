// Package static holds the browser assets (vendored htmx and htmx-ext-ws, the stylesheet and a
// little script), embedded in the binary and served under content-hashed names so that browsers
// may cache them for good. Each asset is also embedded compressed, brotli and gzip, made at
// build time (go generate runs ./precompress), and served in the form the browser prefers.
package static

//go:generate go run ./precompress

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed *.js *.css *.br *.gz
var files embed.FS

// Prefix is the URL path under which the assets are served.
const Prefix = "/static/"

// asset is one embedded file with its content hash and its compressed forms.
type asset struct {
	name string
	hash string
	body []byte
	br   []byte // brotli, at the highest quality
	gz   []byte // gzip, at the highest level
	mime string
}

// catalogue is computed once, at the first use: the files are embedded, so their hashes never
// change while the process runs, and no request ever writes to it.
var catalogue = sync.OnceValue(func() map[string]asset {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		panic("static: read embedded files: " + err.Error()) // a build error, not a runtime one
	}
	read := func(name string) []byte {
		b, err := files.ReadFile(name)
		if err != nil {
			panic("static: read " + name + ": " + err.Error() + " (run go generate ./web/static)")
		}
		return b
	}
	m := make(map[string]asset, len(entries))
	for _, e := range entries {
		name := e.Name()
		if ext := path.Ext(name); ext == ".br" || ext == ".gz" {
			continue
		}
		body := read(name)
		sum := sha256.Sum256(body)
		m[name] = asset{name: name, hash: hex.EncodeToString(sum[:6]), body: body,
			br: read(name + ".br"), gz: read(name + ".gz"), mime: mimeOf(name)}
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

// Handler serves Prefix + "<hash>/<name>", brotli or gzip when the browser accepts it. The current
// hash is cached for a year as immutable; a stale hash (a page rendered before a deploy) still
// gets the current file, but uncached.
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
		h.Add("Vary", "Accept-Encoding")
		body, tag := a.body, a.hash
		switch encoding(r.Header.Get("Accept-Encoding")) {
		case "br":
			body, tag = a.br, a.hash+"-br"
			h.Set("Content-Encoding", "br")
		case "gzip":
			body, tag = a.gz, a.hash+"-gz"
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("ETag", `"`+tag+`"`)
		http.ServeContent(w, r, a.name, time.Time{}, bytes.NewReader(body))
	})
}

// encoding returns the form of an asset that an Accept-Encoding header asks for: "br" or "gzip"
// (brotli first at equal weight, as it is the smaller), or "" for the file as it is. A coding
// with q=0 is refused; "*" stands for the codings the header does not name.
func encoding(accept string) string {
	q := map[string]float64{}
	wildcard := -1.0
	for part := range strings.SplitSeq(accept, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		weight := 1.0
		if k, v, ok := strings.Cut(strings.TrimSpace(params), "="); ok && strings.TrimSpace(k) == "q" {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				continue
			}
			weight = f
		}
		if coding == "*" {
			wildcard = weight
		} else if coding != "" {
			q[coding] = weight
		}
	}
	best, bestQ := "", 0.0
	for _, coding := range []string{"br", "gzip"} {
		w, named := q[coding]
		if !named {
			w = wildcard
		}
		if w > bestQ {
			best, bestQ = coding, w
		}
	}
	return best
}
