// Command precompress writes the brotli (.br) and gzip (.gz) forms of the browser assets beside
// them, at the highest levels, for web/static to embed and serve as they are: compressing them
// once, at build time, costs no request anything. `go generate ./web/static` runs it; the static
// package's tests fail when a compressed form no longer matches its source.
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"

	"github.com/andybalholm/brotli"
)

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "precompress:", err)
		os.Exit(1)
	}
}

// run compresses every asset of dir (*.js and *.css).
func run(dir string) error {
	var names []string
	for _, pattern := range []string{"*.js", "*.css"} {
		m, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return err
		}
		names = append(names, m...)
	}
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var br bytes.Buffer
		w := brotli.NewWriterLevel(&br, brotli.BestCompression)
		if _, err := w.Write(src); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		var gz bytes.Buffer
		// No name and no time in the header: the output depends on the source alone.
		zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
		if err != nil {
			return err
		}
		if _, err := zw.Write(src); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		if err := os.WriteFile(name+".br", br.Bytes(), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(name+".gz", gz.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
