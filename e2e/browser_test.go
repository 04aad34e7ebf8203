package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// startBrowser starts headless Chromium with a fresh profile in profileDir. The flags that turn
// background networking off matter here: on a closed network Chromium's own connections are
// refused, and on any network they are noise in a test.
func startBrowser(profileDir string) (context.Context, context.CancelFunc, error) {
	output := &syncBuffer{}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath()),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(profileDir),
		chromedp.WindowSize(1280, 900),
		chromedp.CombinedOutput(output),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// The first Do binds the browser's life to this context, so it has no timeout: the
	// browser lives until TestMain stops it.
	browserCtx, cancelBrowser := chromedp.NewContext(allocCtx)
	stop := func() {
		cancelBrowser()
		cancelAlloc()
	}
	if err := chromedp.Do(browserCtx); err != nil {
		stop()
		return nil, nil, fmt.Errorf("%w\nchromium output:\n%s", err, output.String())
	}
	return browserCtx, stop, nil
}

// syncBuffer collects Chromium's output for the message of a failed start.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// tab is one browser tab in a browser context of its own (cookies, CSRF tokens and storage are
// the test's alone). It answers every JavaScript dialog and remembers it: a dialog in these
// pages can only come from injected script, so each test fails on one.
type tab struct {
	t   *testing.T
	ctx context.Context

	acts int // actions taken with act, which names each in the page

	mu         sync.Mutex
	dialogs    []string // messages of the dialogs that opened
	exceptions []string // uncaught exceptions and console errors, logged on failure
}

// newTab opens a tab; the test's cleanup closes it and fails the test if a dialog opened.
func newTab(t *testing.T) *tab {
	t.Helper()
	ctx, cancel := chromedp.NewContext(suite.browser, chromedp.WithNewBrowserContext())
	p := &tab{t: t, ctx: ctx}
	t.Cleanup(func() {
		cancel()
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.dialogs) > 0 {
			t.Errorf("JavaScript dialogs opened: %q", p.dialogs)
		}
		if t.Failed() && len(p.exceptions) > 0 {
			t.Logf("browser console errors:\n%s", strings.Join(p.exceptions, "\n"))
		}
	})
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatalf("open a tab: %v", err)
	}
	// The tests run in parallel, each in its own tab, and a headless browser gives focus to one
	// window at a time: every tab acts as the focused one, so that focus, :focus-within and
	// keyboard steps behave in each as they would in the window a person looks at.
	if _, err := chromedp.Call(ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatalf("emulate a focused tab: %v", err)
	}
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			p.mu.Lock()
			p.dialogs = append(p.dialogs, string(ev.Type)+": "+ev.Message)
			p.mu.Unlock()
			// An open dialog blocks the page, and every later action with it.
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	console := chromedp.Console(ctx)
	go func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() || m.Type == chromedp.ConsoleError {
				p.mu.Lock()
				p.exceptions = append(p.exceptions, fmt.Sprintf("%s:%d %s", m.URL, m.Line+1, m))
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// dialogCount is how many JavaScript dialogs have opened in the tab.
func (p *tab) dialogCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.dialogs)
}

// open navigates to url and fails the test unless the page answers 200.
func (p *tab) open(url string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(url))
	if err != nil {
		p.t.Fatalf("open %s: %v", url, err)
	}
	if resp.Status != 200 {
		p.t.Fatalf("open %s: status %d", url, resp.Status)
	}
}

// do runs steps with a bounded wait, failing the test on error.
func (p *tab) do(what string, timeout time.Duration, steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.t.Fatalf("%s: %v", what, err)
	}
}

// click clicks the first element that matches a CSS selector once it is visible. A live push
// may swap the element out between its lookup and the click (Chromium then no longer knows the
// node): the click is tried again on the element that replaced it. That error comes before any
// mouse event is sent, so the element is never clicked twice.
func (p *tab) click(selector string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	for {
		err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
		if err == nil {
			return
		}
		if !nodeSwapped(err) || ctx.Err() != nil {
			p.t.Fatalf("click %s: %v", selector, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeSwapped tells the errors of an element that left the document under an action.
func nodeSwapped(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") || strings.Contains(msg, "Node is detached") ||
		strings.Contains(msg, "No node with given id")
}

// eval evaluates a JavaScript expression in the page and decodes its value into T.
func eval[T any](p *tab, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// mustEval is eval that fails the test on error.
func mustEval[T any](p *tab, expr string) T {
	p.t.Helper()
	v, err := eval[T](p, expr)
	if err != nil {
		p.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript expression returns a JSON value for which done is true, and
// returns that value. detail shows in the failure message.
func waitJS[T any](p *tab, timeout time.Duration, what, expr string, done func(T) bool) T {
	p.t.Helper()
	var v T
	eventually(p.t, timeout, what, func() (bool, string, error) {
		var err error
		v, err = eval[T](p, expr)
		if err != nil {
			return false, "", err
		}
		b, _ := json.Marshal(v)
		return done(v), string(b), nil
	})
	return v
}

// waitSelector waits until a CSS selector matches an element in the page.
func (p *tab) waitSelector(timeout time.Duration, selector string) {
	p.t.Helper()
	waitJS(p, timeout, "element "+selector, fmt.Sprintf("document.querySelector(%s) !== null", jsString(selector)),
		func(found bool) bool { return found })
}

// act waits until the page is in the state an action needs and takes it there, in one turn of
// the page's event loop, so that no live push can swap an element out between the check and the
// act (as between a chromedp lookup and its use). action is the body of a JavaScript function
// that returns false while the page is not ready and otherwise acts and returns true. A page busy
// with pushes may answer an evaluation after eval's bound, and the action then still runs: the
// page remembers the actions it took, so that the next try does not take one twice.
func (p *tab) act(timeout time.Duration, what, action string) {
	p.t.Helper()
	p.acts++
	expr := fmt.Sprintf(`(() => {
		const taken = (window.__e2eActs ??= new Set());
		if (taken.has(%[1]d)) return true;
		if (!(() => { %[2]s })()) return false;
		taken.add(%[1]d);
		return true;
	})()`, p.acts, action)
	waitJS(p, timeout, what, expr, func(done bool) bool { return done })
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
