// Package e2e_test drives the real dashboard binary in Debian's Chromium: `dashboard demo` runs
// as a subprocess (simulator, synthetic traffic, collector and web UI in one), the tests change
// the demo's queues through the simulator's public endpoint with the stock SQS client, and
// chromedp reads what a user would see.
//
// One demo and one browser serve every test of a run (starting them is the slow part on two
// cores); each test opens its own tabs in a fresh browser context, so cookies and CSRF tokens do
// not leak between tests, and works on its own queue where it changes state.
//
// Environment:
//   - CI: when set, a missing Chromium fails the run instead of skipping it.
//   - TOOLQ_E2E_CHROMIUM: the browser to drive (default /usr/bin/chromium).
//   - TOOLQ_E2E_BINARY: test this dashboard binary instead of building ./cmd/dashboard.
//   - TOOLQ_SCREENSHOTS=1: TestScreenshots writes docs/screenshots/*.png.
package e2e_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/pgtest"
)

// suite is the state shared by every test of the run: the binary, the demo and the browser.
// TestMain builds the binary; the demo and the browser start with the first test that needs
// them and stop in TestMain after the last.
var suite fixture

type fixture struct {
	dir    string // removed after the run
	binary string
	// unavailable says why the browser tests cannot run here (no Chromium, -short); empty when
	// they can.
	unavailable string
	buildErr    error

	demoOnce sync.Once
	demo     *demo
	demoErr  error
	// embedder is the page from another origin that the shared demo allows to frame it
	// (--frame-ancestors); refusal is checked from a second origin that is not in the list.
	embedder *embedPage

	// webSearchDLQ is held by the tests that redrive the shared demo's web-search-dlq, one at a
	// time: every test runs in parallel, and two redrives of one DLQ would read each other's.
	webSearchDLQ sync.Mutex

	browserOnce sync.Once
	browser     context.Context // a chromedp context whose browser has started
	stopBrowser context.CancelFunc
	browserErr  error
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(runSuite(m))
}

func runSuite(m *testing.M) int {
	dir, err := os.MkdirTemp("", "toolq-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	suite.dir = dir
	suite.unavailable = browserUnavailable()
	if suite.unavailable == "" || os.Getenv("CI") != "" {
		suite.binary, suite.buildErr = dashboardBinary(dir)
	}

	// pgtest.Main runs the tests and then stops the PostgreSQL server the replica tests started.
	code := pgtest.Main(m)

	// The demo must stop cleanly on SIGTERM, as `docker stop` and systemd send it: a hang, a
	// non-zero status or a race report fails the run even when every test passed.
	if err := suite.close(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		code = 1
	}
	return code
}

// browserUnavailable says why Chromium cannot be driven here, or "" when it can.
func browserUnavailable() string {
	if testing.Short() {
		return "browser tests skipped in -short mode"
	}
	path := chromiumPath()
	if _, err := exec.LookPath(path); err != nil {
		return fmt.Sprintf("no Chromium at %s (apt-get install chromium, or set TOOLQ_E2E_CHROMIUM): %v", path, err)
	}
	return ""
}

func chromiumPath() string {
	if p := os.Getenv("TOOLQ_E2E_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// dashboardBinary builds ./cmd/dashboard once for the run, with the race detector when the
// tests themselves run with it, so that a race in the product under real browser traffic fails
// the run (the demo then exits with status 66). As in the Makefile's TESTFLAGS, checkptr is off
// for modernc.org's packages (SQLite translated from C), where it checks none of toolq's code
// and slows every write of the demo's store. make test runs them without it (see the Makefile).
func dashboardBinary(dir string) (string, error) {
	if p := os.Getenv("TOOLQ_E2E_BINARY"); p != "" {
		return p, nil
	}
	bin := filepath.Join(dir, "dashboard")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race", "-gcflags=modernc.org/...=-d=checkptr=0")
	}
	args = append(args, "./cmd/dashboard")
	cmd := exec.Command("go", args...)
	cmd.Dir = ".." // the module root: this package is e2e/
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/dashboard: %w\n%s", err, out)
	}
	return bin, nil
}

// needBrowser starts the shared browser on first use. It skips the test when no browser can
// run here, except in CI, where that is a failure.
func needBrowser(t *testing.T) {
	t.Helper()
	if suite.unavailable != "" {
		if os.Getenv("CI") != "" && !testing.Short() {
			t.Fatalf("CI is set but the browser tests cannot run: %s", suite.unavailable)
		}
		t.Skip(suite.unavailable)
	}
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	suite.browserOnce.Do(func() {
		suite.browser, suite.stopBrowser, suite.browserErr = startBrowser(filepath.Join(suite.dir, "chromium-profile"))
	})
	if suite.browserErr != nil {
		t.Fatalf("start Chromium: %v", suite.browserErr)
	}
}

// needDemo returns the shared demo, started with the speed-up flags on first use, and the
// shared browser.
func needDemo(t *testing.T) *demo {
	t.Helper()
	needBrowser(t)
	suite.demoOnce.Do(func() {
		suite.embedder = newEmbedPage()
		suite.demo, suite.demoErr = startDemo(suite.binary, filepath.Join(suite.dir, "shared"),
			// The defaults are minutes apart, as AWS bills each call; seconds keep the suite short.
			"--attributes-interval", "1s",
			"--peek-dlq-interval", "2s",
			"--peek-source-interval", "5s",
			"--metrics-interval", "5s",
			"--frame-ancestors", "'self'",
			"--frame-ancestors", suite.embedder.origin(),
			"--auth", "none",
		)
	})
	if suite.demoErr != nil {
		t.Fatalf("start the demo: %v", suite.demoErr)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("demo log (last lines):\n%s", suite.demo.logTail(40))
			// A page dropped as too slow reconnects, and misses what was pushed meanwhile.
			if drops := suite.demo.logLines("live: dropping a slow websocket client"); len(drops) > 0 {
				t.Logf("the demo dropped slow pages:\n%s", strings.Join(drops, "\n"))
			}
		}
	})
	return suite.demo
}

// close stops the browser, then the demo (checking that it exits cleanly), then the embedding
// pages.
func (f *fixture) close() error {
	if f.stopBrowser != nil {
		f.stopBrowser()
	}
	var err error
	if f.demo != nil {
		err = f.demo.stop(30 * time.Second)
	}
	if f.embedder != nil {
		f.embedder.Close()
	}
	return err
}

// embedPage is an httptest server on its own port, hence its own origin, whose page frames the
// dashboard URL it is given in the query: /?src=<url>.
type embedPage struct {
	*httptest.Server
}

func newEmbedPage() *embedPage {
	return &embedPage{httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		src := r.URL.Query().Get("src")
		if src == "" {
			http.Error(w, "src missing", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><html><head><title>embedder</title></head><body>
<h1>A team wiki page</h1>
<script>window.toolqMessages = []; addEventListener("message", function (e) {
  window.toolqMessages.push({origin: e.origin, data: e.data});
  if (e.data && e.data.type === "toolq:height") { document.getElementById("toolq").height = e.data.height; } // as docs/ui.md's portal does
});</script>
<iframe id="toolq" src="%s" width="1000" height="600"></iframe>
</body></html>`, html.EscapeString(src))
	}))}
}

// origin is the page's origin, as a CSP source: http://127.0.0.1:PORT.
func (p *embedPage) origin() string { return p.URL }

// errDemoExited reports a demo that ended before it was stopped.
var errDemoExited = errors.New("the demo exited")
