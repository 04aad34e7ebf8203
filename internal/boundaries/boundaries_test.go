package boundaries

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/toolq/toolq/"

// pkg is what `go list -json` says of one package of the module.
type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string // direct, non-test
	Deps       []string // transitive, non-test
}

// listPackages lists every package of the module.
func listPackages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "github.com/toolq/toolq/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

// local returns the module's own packages among paths, without the module prefix.
func local(paths []string) []string {
	var out []string
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := listPackages(t)
	must := func(name string) pkg {
		t.Helper()
		p, ok := pkgs[name]
		if !ok {
			t.Fatalf("no package %s", name)
		}
		return p
	}
	t.Run("the simulator and its traffic import nothing of toolq", func(t *testing.T) {
		for _, name := range []string{"sqsim", "traffic"} {
			if deps := local(must(name).Deps); len(deps) > 0 {
				t.Errorf("%s depends on %v", name, deps)
			}
		}
	})
	t.Run("actions resolve queues with the store, not the views", func(t *testing.T) {
		if slices.Contains(local(must("internal/actions").Imports), "internal/views") {
			t.Error("internal/actions imports internal/views")
		}
	})
	t.Run("the server reads through the views, never the store", func(t *testing.T) {
		if slices.Contains(local(must("internal/server").Imports), "internal/store") {
			t.Error("internal/server imports internal/store")
		}
	})
	t.Run("the templates render what the views give them, never the store's", func(t *testing.T) {
		// A page shows the snapshot's rows; a constant or a type of the store's in a template is
		// a second way to the data that the views do not see.
		for name, p := range pkgs {
			if (name == "web/templates" || strings.HasPrefix(name, "web/templates/")) && slices.Contains(local(p.Imports), "internal/store") {
				t.Errorf("%s imports internal/store", name)
			}
		}
	})
	t.Run("only the store imports the SQLite driver", func(t *testing.T) {
		for name, p := range pkgs {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, "modernc.org/sqlite") && name != "internal/store" {
					t.Errorf("%s imports %s", name, imp)
				}
			}
		}
	})
	t.Run("only tests check answers against the OpenAPI document", func(t *testing.T) {
		// internal/openapitest (and kin-openapi with it) is for tests: the binary never links it.
		for name, p := range pkgs {
			if slices.Contains(local(p.Imports), "internal/openapitest") {
				t.Errorf("%s imports internal/openapitest", name)
			}
		}
		if deps := must("cmd/dashboard").Deps; slices.Contains(deps, "github.com/getkin/kin-openapi/openapi3") {
			t.Error("the binary links kin-openapi")
		}
	})
	t.Run("only tests and their helpers take a store from storetest", func(t *testing.T) {
		// internal/store/storetest copies one migrated database for each test: the binary
		// always opens (and migrates) the database it is given.
		for name, p := range pkgs {
			if slices.Contains(local(p.Imports), "internal/store/storetest") && !strings.HasSuffix(name, "test") {
				t.Errorf("%s imports internal/store/storetest", name)
			}
		}
		if deps := must("cmd/dashboard").Deps; slices.Contains(deps, "github.com/toolq/toolq/internal/store/storetest") {
			t.Error("the binary links internal/store/storetest")
		}
	})
	t.Run("nothing imports upward", func(t *testing.T) {
		// Each package may import only these of toolq's (the data flows one way: AWS → collector
		// → store → views → pages and JSON; actions beside the views).
		allowed := map[string][]string{
			"internal/store":     {"internal/arn", "migrations"},
			"internal/awscalls":  {"internal/safetext", "internal/store"},
			"internal/collector": {"internal/arn", "internal/awscalls", "internal/events", "internal/safetext", "internal/store"},
			"internal/views":     {"internal/arn", "internal/awscalls", "internal/choices", "internal/events", "internal/safetext", "internal/store", "internal/tracelink"},
			"internal/actions":   {"internal/arn", "internal/auth", "internal/awscalls", "internal/choices", "internal/engine", "internal/events", "internal/safetext", "internal/store"},
			// The engine moves chosen messages: it reads what a message is through the reader the
			// collector gives it, not by importing the collector.
			"internal/engine": {"internal/arn", "internal/awscalls", "internal/events", "internal/safetext", "internal/store"},
			"internal/live":   {"internal/events"},
			"internal/notify": {"internal/arn", "internal/auth", "internal/choices", "internal/events", "internal/safetext", "internal/store", "internal/views"},
			"internal/auth":   {"internal/store"},
			// The hints of refused choices: plain text, for every layer that refuses one.
			"internal/choices": {},
			// The stdio bridge is a client of a running toolq, over HTTP only.
			"internal/mcpbridge": {},
			// Trace contexts are read as the ARNs are: a leaf, from what a message carries.
			"internal/tracelink": {},
		}
		for name, ok := range allowed {
			for _, imp := range local(must(name).Imports) {
				if !slices.Contains(ok, imp) {
					t.Errorf("%s imports %s", name, imp)
				}
			}
		}
	})
}

// sqlWords match the start of a SQL statement in a string literal.
var sqlWords = regexp.MustCompile(`(?i)^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|PRAGMA)\s`)

// TestViewsHoldNoSQL: the views turn store rows into what pages show; every query is the store's.
func TestViewsHoldNoSQL(t *testing.T) {
	p := listPackages(t)["internal/views"]
	if slices.Contains(p.Imports, "database/sql") {
		t.Error("internal/views imports database/sql")
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			if s, err := strconv.Unquote(lit.Value); err == nil && sqlWords.MatchString(s) {
				t.Errorf("%s: SQL in the views: %.60q", fset.Position(lit.Pos()), s)
			}
			return true
		})
	}
}

// TestEveryPackageSaysItsJob: each package's doc comment says what it is for.
func TestEveryPackageSaysItsJob(t *testing.T) {
	for name, p := range listPackages(t) {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset := token.NewFileSet()
		found := false
		for _, file := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, file), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if f.Doc != nil && strings.HasPrefix(f.Doc.Text(), "Package "+f.Name.Name+" ") || f.Doc != nil && f.Name.Name == "main" && strings.HasPrefix(f.Doc.Text(), "Command ") {
				found = true
			}
		}
		if !found {
			t.Errorf("%s has no package doc comment that starts with its name", name)
		}
	}
}
