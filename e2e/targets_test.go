package e2e_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// smallTargetsJS lists the disclosure summaries of the page smaller than 24 × 24 CSS px, the
// least target size of WCAG 2.5.8 that Lighthouse checks, with their size.
const smallTargetsJS = `[...document.querySelectorAll('summary')].map(s => {
	const r = s.getBoundingClientRect();
	return {text: s.textContent.trim(), width: r.width, height: r.height};
}).filter(s => s.width < 24 || s.height < 24)`

// TestSummariesAreBigEnoughToTap: the overview's cost footer opens its per-loop and per-account
// tables from <summary> elements in small text; each is at least 24 × 24 CSS px, at a desktop's
// width and at a phone's.
func TestSummariesAreBigEnoughToTap(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	for _, width := range []int64{1280, 390} {
		p := newTab(t)
		p.do("set the viewport", 10*time.Second, chromedp.EmulateViewport(width, 900))
		p.open(d.page("/"))
		waitJS(p, 60*time.Second, "the cost footer's summaries", `document.querySelectorAll('.cost summary').length`,
			func(n int) bool { return n > 0 })
		type target struct {
			Text          string
			Width, Height float64
		}
		if small := mustEval[[]target](p, smallTargetsJS); len(small) > 0 {
			t.Errorf("at %d px, summaries smaller than 24 × 24 px: %+v", width, small)
		}
	}
}
