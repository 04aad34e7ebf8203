package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLayoutNamesEveryPackage checks that the README's repository layout names every directory
// that holds Go code, itself or through a parent it lists (web/templates/ids under
// web/templates/), so that a new package cannot go undocumented and a removed one cannot stay.
func TestLayoutNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, layout, ok := strings.Cut(string(readme), "## Repository layout")
	if !ok {
		t.Fatal("README.md has no Repository layout section")
	}
	if end := strings.Index(layout, "\n## "); end >= 0 {
		layout = layout[:end]
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z0-9_./-]+/)`").FindAllStringSubmatch(layout, -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	dirs := map[string]bool{}
	err = filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			rel, _ := filepath.Rel("..", filepath.Dir(path))
			dirs[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range dirs {
		covered := false
		for d := dir; d != "." && !covered; d = filepath.ToSlash(filepath.Dir(d)) {
			covered = listed[d]
		}
		if !covered {
			t.Errorf("README.md's repository layout does not name %s/", dir)
		}
	}
	for dir := range listed {
		if _, err := os.Stat(filepath.Join("..", dir)); err != nil {
			t.Errorf("README.md's repository layout names %s/, which does not exist", dir)
		}
	}
}
