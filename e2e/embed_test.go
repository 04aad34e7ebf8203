package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestEmbedding frames the dashboard from other origins: the one --frame-ancestors names gets
// the live queue table in its iframe, another gets Chromium's refusal.
func TestEmbedding(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	embedURL := d.page("/?embed=1")

	t.Run("allowed origin", func(t *testing.T) {
		p := newTab(t)
		p.open(suite.embedder.URL + "/?src=" + url.QueryEscape(embedURL))
		frame := waitChildFrame(p, 30*time.Second)
		if frame.URL != embedURL {
			t.Fatalf("iframe ended on %q (unreachable %q), want the dashboard %q", frame.URL, frame.UnreachableURL, embedURL)
		}
		rows := waitFrameJS(p, frame, 30*time.Second, "the queue table inside the iframe", overviewRowsJS, func(rows []overviewRow) bool {
			return len(rows) >= len(demoQueues)
		})
		t.Logf("iframe shows %d queue rows", len(rows))
		// Embedded, the page is the table and its freshness alone: no site navigation, no filter.
		if chrome := frameEval[bool](p, frame, `document.querySelector('nav[aria-label="Main"], #q') !== null`); chrome {
			t.Error("the embedded page shows the site's navigation or the filter")
		}

		// The embedded table is live too: its websocket comes from another origin's page.
		before := 0
		for _, r := range rows {
			if r["name"] == "notifications" {
				before = count(r["Delayed"])
			}
		}
		msgs := toolCalls("embed", "send_email", 5, false)
		for i := range msgs {
			msgs[i].DelaySeconds = 900
		}
		d.send(t, "notifications", msgs...)
		waitFrameJS(p, frame, 15*time.Second, "the embedded row of notifications to update", overviewRowsJS, func(rows []overviewRow) bool {
			for _, r := range rows {
				if r["name"] == "notifications" {
					return count(r["Delayed"]) >= before+len(msgs)
				}
			}
			return false
		})
	})

	t.Run("other origin", func(t *testing.T) {
		other := newEmbedPage()
		defer other.Close()
		p := newTab(t)
		p.open(other.URL + "/?src=" + url.QueryEscape(embedURL))
		frame := waitChildFrame(p, 30*time.Second)
		// Chromium blocks the response and commits its own error page in the frame.
		t.Logf("refused iframe: url %q, unreachable %q", frame.URL, frame.UnreachableURL)
		if !strings.HasPrefix(frame.URL, "chrome-error://") {
			t.Errorf("iframe of %s, which --frame-ancestors does not allow, is on %q; want Chromium's error page", other.URL, frame.URL)
		}
		if hasTable, err := frameEvalErr[bool](p, frame, `document.getElementById('overview-table') !== null`); err == nil && hasTable {
			t.Errorf("the dashboard's queue table loaded in an iframe of %s", other.URL)
		}
	})
}

// waitChildFrame waits until the page's first iframe has committed a document other than
// about:blank, and returns it.
func waitChildFrame(p *tab, timeout time.Duration) *cdp.Frame {
	p.t.Helper()
	var frame *cdp.Frame
	eventually(p.t, timeout, "the iframe to load", func() (bool, string, error) {
		tree, err := chromedp.Call(p.ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return false, "", err
		}
		if len(tree.FrameTree.ChildFrames) == 0 {
			return false, "no child frame", nil
		}
		frame = tree.FrameTree.ChildFrames[0].Frame
		return frame.URL != "" && frame.URL != "about:blank", frame.URL, nil
	})
	return frame
}

// frameEvalErr evaluates a JavaScript expression in an isolated world of frame (same DOM, its
// own globals) and decodes its JSON value into T.
func frameEvalErr[T any](p *tab, frame *cdp.Frame, expr string) (T, error) {
	var v T
	world, err := chromedp.Call(p.ctx, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame.ID, WorldName: "e2e"})
	if err != nil {
		return v, fmt.Errorf("isolated world in frame %s: %w", frame.URL, err)
	}
	res, err := chromedp.Call(p.ctx, runtime.Evaluate, runtime.EvaluateParams{
		Expression:    "JSON.stringify(" + expr + ")",
		ContextID:     world.ExecutionContextID,
		ReturnByValue: new(true),
	})
	if err != nil {
		return v, err
	}
	if res.ExceptionDetails != nil {
		return v, fmt.Errorf("evaluate in frame: %s", res.ExceptionDetails.Text)
	}
	var text string
	if err := json.Unmarshal(res.Result.Value, &text); err != nil {
		return v, fmt.Errorf("evaluate in frame: result %s: %w", res.Result.Value, err)
	}
	return v, json.Unmarshal([]byte(text), &v)
}

func frameEval[T any](p *tab, frame *cdp.Frame, expr string) T {
	p.t.Helper()
	v, err := frameEvalErr[T](p, frame, expr)
	if err != nil {
		p.t.Fatal(err)
	}
	return v
}

func waitFrameJS[T any](p *tab, frame *cdp.Frame, timeout time.Duration, what, expr string, done func(T) bool) T {
	p.t.Helper()
	var v T
	eventually(p.t, timeout, what, func() (bool, string, error) {
		var err error
		v, err = frameEvalErr[T](p, frame, expr)
		if err != nil {
			return false, "", err
		}
		b, _ := json.Marshal(v)
		return done(v), string(b), nil
	})
	return v
}
