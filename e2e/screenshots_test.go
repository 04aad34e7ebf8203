package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScreenshots writes the README's screenshots of the demo, docs/screenshots/overview.png,
// dlq.png and fifo.png at 1280 px wide, when TOOLQ_SCREENSHOTS=1:
//
//	TOOLQ_SCREENSHOTS=1 go test -run TestScreenshots ./e2e
//
// It runs a demo of its own with the default cadences, so that the pictures show what `make run`
// shows (the shared demo's one-second cadences would put a silly cost estimate on the overview),
// and waits for it to look lived-in: sparklines, a sampled DLQ. That takes a few minutes.
func TestScreenshots(t *testing.T) {
	if os.Getenv("TOOLQ_SCREENSHOTS") != "1" {
		t.Skip("set TOOLQ_SCREENSHOTS=1 to write docs/screenshots/*.png")
	}
	needBrowser(t)
	d, err := startDemo(suite.binary, filepath.Join(suite.dir, "screenshots"))
	if err != nil {
		t.Fatalf("start the demo: %v", err)
	}
	t.Cleanup(func() {
		if err := d.stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	dir := filepath.Join("..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := newTab(t)
	p.do("set the viewport", 10*time.Second, chromedp.EmulateViewport(1280, 900))

	p.open(d.page("/"))
	overviewRows(p, 60*time.Second, demoQueues...)
	// Sparklines need a few CloudWatch points, and the DLQs the traffic's poison pills.
	waitJS(p, 4*time.Minute, "sparklines and DLQ messages in the overview", `({
		sparks: document.querySelectorAll('tr[id^="queue-row-"] svg.spark').length,
		critical: document.querySelectorAll('tr.health-critical, tr.health-warning').length,
	})`, func(v struct{ Sparks, Critical int }) bool { return v.Sparks >= 4 && v.Critical >= 1 })
	shoot(p, filepath.Join(dir, "overview.png"))

	const dlq = "web-search-dlq"
	p.open(d.page("/queues/" + dlq))
	waitJS(p, 4*time.Minute, "sampled messages on the DLQ page",
		`document.querySelectorAll('#messages table.messages tbody tr').length`,
		func(n int) bool { return n >= 3 })
	// Taller, so that the sampled messages and the charts show below the stats and the redrive
	// panel.
	p.do("set a taller viewport", 10*time.Second, chromedp.EmulateViewport(1280, 2900))
	waitJS(p, time.Minute, "the DLQ's charts with their axes", `document.querySelectorAll('#chart-grid .y-axis').length`,
		func(n int) bool { return n >= 3 })
	shoot(p, filepath.Join(dir, "dlq.png"))

	// The FIFO queue: its blocked session, the messages near maxReceiveCount.
	p.do("set the viewport", 10*time.Second, chromedp.EmulateViewport(1280, 1800))
	p.open(d.page("/queues/tool-calls.fifo"))
	waitJS(p, 3*time.Minute, "a blocked session on the FIFO page", `document.querySelectorAll('#groups tr.blocked').length`,
		func(n int) bool { return n >= 1 })
	shoot(p, filepath.Join(dir, "fifo.png"))
}

// shoot writes a PNG of the viewport.
func shoot(p *tab, path string) {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Fatalf("screenshot %s: %v", path, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("wrote %s (%d bytes)", path, len(png))
}
