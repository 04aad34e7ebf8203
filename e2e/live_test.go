package e2e_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// freshnessJS reads the freshness line as the user sees it: the age it shows, in seconds (-1
// when it shows none), whether it is marked stale, the server's threshold it carries, and
// whether the page knows its websocket is down.
const freshnessJS = `(() => {
	const line = document.getElementById('freshness');
	const age = line?.querySelector('time.age')?.textContent.trim() ?? '';
	return {
		age: age,
		stale: !!line?.classList.contains('stale'),
		staleAfter: line?.getAttribute('data-stale-after') ?? '',
		down: document.documentElement.classList.contains('ws-down'),
	};
})()`

type freshnessLine struct {
	Age        string `json:"age"`
	Stale      bool   `json:"stale"`
	StaleAfter string `json:"staleAfter"`
	Down       bool   `json:"down"`
}

// seconds reads an age the freshness line shows ("7 s", "2 min"); -1 for anything else.
func (f freshnessLine) seconds() int {
	n, unit, ok := strings.Cut(f.Age, " ")
	v, err := strconv.Atoi(n)
	if !ok || err != nil {
		return -1
	}
	switch unit {
	case "s":
		return v
	case "min":
		return v * 60
	}
	return -1
}

// TestFreshnessCountsWhileTheServerIsDown: the header's "updated N s ago" keeps counting in the
// browser once no push comes any more (the dashboard stopped), and the line turns stale when
// the age passes the server's threshold, which the page carries. It runs a demo of its own,
// since it stops it.
func TestFreshnessCountsWhileTheServerIsDown(t *testing.T) {
	t.Parallel()
	needBrowser(t)
	// Attributes every second: the demo's data is stale after 3 s (three missed cycles).
	d, err := startDemo(suite.binary, filepath.Join(suite.dir, "freshness"), "--attributes-interval", "1s", "--auth", "none")
	if err != nil {
		t.Fatalf("start a demo: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = d.stop(30 * time.Second)
		}
	})
	p := newTab(t)
	p.open(d.page("/"))
	live := waitJS(p, 30*time.Second, "a fresh freshness line with the server's threshold", freshnessJS, func(f freshnessLine) bool {
		return !f.Down && !f.Stale && f.seconds() >= 0 && f.StaleAfter != ""
	})
	staleAfter, err := strconv.ParseFloat(live.StaleAfter, 64)
	if err != nil || staleAfter != 3 {
		t.Fatalf("data-stale-after = %q, want 3 (three 1-s attribute cycles)", live.StaleAfter)
	}

	stopped = true
	if err := d.stop(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitJS(p, 15*time.Second, "the page to see its websocket down", freshnessJS, func(f freshnessLine) bool { return f.Down })

	// The age counts on without the server; stale appears only past the threshold.
	last := -1
	waitJS(p, 20*time.Second, "the age to count past the threshold and the line to turn stale", freshnessJS, func(f freshnessLine) bool {
		s := f.seconds()
		if s < last {
			t.Errorf("the age went back from %d s to %q", last, f.Age)
		}
		last = s
		if f.Stale && float64(s) < staleAfter {
			t.Errorf("stale at %q, before the threshold of %v s", f.Age, staleAfter)
		}
		return f.Stale && float64(s) > staleAfter+1
	})
}

// TestFocusSurvivesPushes: the overview's pushes replace the rows that changed or moved (or the
// whole table body) every few seconds; a keyboard user on a row's link, or typing in the filter,
// keeps their place. Each case makes the push it waits for: the overview sorted by delayed
// messages, it sends a queue more delayed messages than any other holds (due in 15 minutes, so
// no consumer takes them while the tests run), and that queue's row moves to the top. (A row
// whose values drift, as a queue with traffic does, may change a cell at a time for a minute,
// and a cell's push leaves its row in place.)
func TestFocusSurvivesPushes(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	tests := []struct {
		name  string
		path  string
		focus string // JavaScript that focuses the element and returns what identifies it
		check string // JavaScript that returns the same of document.activeElement
		queue string // the queue sent delayed messages, whose row moves
		n     int    // how many: more than any queue holds before
	}{
		{
			name:  "a row's link",
			path:  "/?sort=delayed&dir=desc",
			focus: `(() => { const a = [...document.querySelectorAll('#overview-rows tr th a')].find(a => a.textContent === 'web-search'); a.focus(); return a.getAttribute('href'); })()`,
			check: `document.activeElement?.tagName === 'A' ? document.activeElement.getAttribute('href') : String(document.activeElement?.tagName)`,
			// The other tests send notifications 55 delayed messages at most.
			queue: "web-search", n: 200,
		},
		{
			name:  "the filter, with a selection",
			path:  "/?q=s&sort=delayed&dir=desc",
			focus: `(() => { const q = document.getElementById('q'); q.value = 'web-search'; q.focus(); q.setSelectionRange(4, 7); return 'q 4-7'; })()`,
			check: `(() => { const e = document.activeElement; return e?.id === 'q' ? 'q ' + e.selectionStart + '-' + e.selectionEnd : String(e?.tagName); })()`,
			queue: "exports", n: 400, // more than web-search got above
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTab(t)
			p.open(d.page(tt.path))
			waitJS(p, 30*time.Second, "the overview's websocket", `document.querySelector('#overview-rows tr th a') !== null && !document.documentElement.classList.contains('ws-down') && document.getElementById('overview-table').hasAttribute('ws-connect')`,
				func(ok bool) bool { return ok })
			want := mustEval[string](p, tt.focus)
			mustEval[bool](p, `(window.__toolqRow = [...document.querySelectorAll('#overview-rows tr')].find(tr => tr.querySelector('th a')?.textContent === `+jsString(tt.queue)+`)) !== undefined`)
			msgs := toolCalls("focus-"+tt.queue, "web_search", tt.n, false)
			for i := range msgs {
				msgs[i].DelaySeconds = 900
			}
			d.send(t, tt.queue, msgs...)
			waitJS(p, 30*time.Second, "a push to move "+tt.queue+"'s row to the top", `!document.body.contains(window.__toolqRow)`,
				func(replaced bool) bool { return replaced })
			if got := mustEval[string](p, tt.check); got != want {
				t.Errorf("after a push the focus is on %q, want %q", got, want)
			}
		})
	}
}
