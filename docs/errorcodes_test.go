package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// errorCodeCalls are the functions whose second argument is an error code a client sees: the
// server's API errors and the actions' refusals (which the server answers with their code).
var errorCodeCalls = map[string]bool{"newError": true, "refuse": true}

// TestEveryErrorCodeIsDocumented reads the server's and the actions' sources for every error
// code they can answer and checks that docs/api.md (its "Error codes" table and the sections it
// points to) or docs/mcp.md names each one, in backquotes as a client would search for it. A code
// added without its documentation fails here.
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	var docs strings.Builder
	for _, f := range []string{"api.md", "mcp.md"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs.Write(b)
	}
	codes := map[string]string{} // code → where it is answered
	for _, dir := range []string{"../internal/server", "../internal/actions"} {
		for code, at := range errorCodesIn(t, dir) {
			codes[code] = at
		}
	}
	if len(codes) < 20 {
		t.Fatalf("found only %d error codes in the sources: the scan is broken", len(codes))
	}
	var missing []string
	for code, at := range codes {
		if !strings.Contains(docs.String(), "`"+code+"`") {
			missing = append(missing, code+" ("+at+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("error code %s is not documented in docs/api.md or docs/mcp.md", m)
	}
}

// errorCodesIn returns the string literals passed as the code of errorCodeCalls in the
// package's non-test files, with the position of one call.
func errorCodesIn(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) < 2 {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || !errorCodeCalls[id.Name] {
				return true
			}
			lit, ok := call.Args[1].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if code, err := strconv.Unquote(lit.Value); err == nil {
				out[code] = fset.Position(lit.Pos()).String()
			}
			return true
		})
	}
	return out
}
