package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// historyJS reads the redrive panel's past move tasks, newest first, each as its cells' text
// (started, status, moved, destination, rate limit, failure).
const historyJS = `[...document.querySelectorAll('#redrive-panel table.history tbody tr')]
	.map(tr => [...tr.children].map(c => c.textContent.replace(/\s+/g, ' ').trim()))`

// progressJS reads the running task's progress block: its text and whether it has a <progress>.
const progressJS = `(() => {
	const el = document.getElementById('redrive-progress');
	return el ? {text: el.textContent.replace(/\s+/g, ' ').trim(), bar: el.querySelector('progress') !== null} : null;
})()`

type progressBlock struct {
	Text string `json:"text"`
	Bar  bool   `json:"bar"`
}

// TestRedriveFromDeadLetterQueuePage starts a redrive from a DLQ's page as an operator would
// (review, confirm), follows it to COMPLETED, then starts a slow one and cancels it.
//
// The test fills web-search-dlq itself rather than waiting for the traffic's poison pills, and
// sends the messages back to web-search explicitly: messages sent straight to a DLQ have no
// source to return to.
func TestRedriveFromDeadLetterQueuePage(t *testing.T) {
	t.Parallel()
	suite.webSearchDLQ.Lock() // the other test that redrives it waits
	defer suite.webSearchDLQ.Unlock()
	d := needDemo(t)
	const dlq, source = "web-search-dlq", "web-search"
	t.Cleanup(func() {
		if t.Failed() { // a move task that stops short: were its messages in flight?
			d.logDepths(t, dlq, source)
		}
	})
	d.send(t, dlq, toolCalls("redrive-done", "web_search", 30, false)...)

	p := newTab(t)
	p.open(d.page("/queues/" + dlq))

	// 10 a second: the task runs for seconds, long enough for the page to show it running.
	startRedrive(p, source, "10")
	waitRunning(p)
	done := waitTaskEnd(p, 90*time.Second, "10/s")
	if done[1] != "COMPLETED" {
		t.Fatalf("first move task ended %q, want COMPLETED (row %q)", done[1], done)
	}
	if moved, of, ok := movedOf(done[2]); !ok || moved != of || moved < 30 {
		t.Errorf("first move task: moved %q, want all of at least the 30 messages sent", done[2])
	}
	// The move shows on the DLQ's charts: a band from its start to its end, with what it moved.
	waitJS(p, 30*time.Second, "a redrive marker on the DLQ's charts", `({
		bands: document.querySelectorAll('#chart-grid svg rect.mark-band').length,
		notes: [...document.querySelectorAll('#chart-grid .chart-marks li')].map(l => l.textContent),
	})`, func(v struct {
		Bands int
		Notes []string
	}) bool {
		for _, n := range v.Notes {
			if v.Bands > 0 && strings.Contains(n, "moved") && strings.Contains(n, "completed") {
				return true
			}
		}
		return false
	})

	// The second task moves one message a second, so it is still running when cancelled.
	d.send(t, dlq, toolCalls("redrive-cancel", "web_search", 30, false)...)
	startRedrive(p, source, "1")
	waitRunning(p)
	clickWhenShown(p, "cancel the move task", `#redrive-panel form[action$="/redrive/cancel"] button[type=submit]`)
	cancelled := waitTaskEnd(p, 60*time.Second, "1/s")
	if cancelled[1] != "CANCELLED" {
		t.Fatalf("second move task ended %q, want CANCELLED (row %q)", cancelled[1], cancelled)
	}
	if moved, of, ok := movedOf(cancelled[2]); !ok || moved >= of {
		t.Errorf("cancelled move task: moved %q, want fewer than all", cancelled[2])
	}
	// With nothing running, the start form is offered again.
	p.waitSelector(30*time.Second, `form.redrive-start fieldset:not([disabled])`)
}

// dlqPageWait bounds each wait on the state of a dead-letter queue's page. Such a page swaps its
// sections at every push, every second or two with the suite's intervals, and beside the other
// browser tests on two cores its main thread was seen busy for seconds at a time: one evaluation
// took 6 s to answer, and a form filled with chromedp (ten round trips, each behind the page's
// work) over 10 s. Each wait returns as soon as the page shows what it waits for.
const dlqPageWait = 2 * time.Minute

// startRedrive fills the start form of the DLQ page open in p (destination by queue name, rate
// per second), reviews and confirms.
func startRedrive(p *tab, destination, rate string) {
	p.t.Helper()
	value := waitJS(p, dlqPageWait, "the redrive form's destinations", fmt.Sprintf(`(() => {
		const opt = [...document.querySelectorAll('#redrive-destination option')]
			.find(o => o.value === %[1]s || o.textContent.trim() === %[1]s);
		return opt ? opt.value : '<none>';
	})()`, jsString(destination)), func(string) bool { return true })
	if value == "<none>" {
		options := mustEval[[]string](p, `[...document.querySelectorAll('#redrive-destination option')].map(o => o.textContent.trim())`)
		p.t.Fatalf("destination %q is not offered; options: %q", destination, options)
	}
	// The form is enabled once no task runs (the panel is swapped in place when a task ends); it
	// is filled and sent in one turn, so that a push fetching the panel again cannot swap in a
	// blank form between the two.
	p.act(dlqPageWait, "fill and send the redrive form", fmt.Sprintf(`
		const form = document.querySelector('form.redrive-start');
		if (!form || form.querySelector('fieldset').disabled) return false;
		form.querySelector('#redrive-destination').value = %s;
		form.querySelector('#redrive-rate').value = %s;
		form.querySelector('button[type=submit]').click();
		return true;`, jsString(value), jsString(rate)))

	// The confirmation says where the messages go and that it cannot be undone.
	confirm := waitJS(p, dlqPageWait, "the redrive's confirmation",
		`document.querySelector('#redrive-panel .confirm')?.textContent.replace(/\s+/g, ' ') ?? ''`,
		func(text string) bool { return text != "" })
	for _, want := range []string{destination, rate + " per second", "cannot be undone"} {
		if !strings.Contains(confirm, want) {
			p.t.Errorf("the confirmation does not mention %q: %q", want, confirm)
		}
	}
	clickWhenShown(p, "confirm the redrive", `#redrive-panel .confirm button.danger`)
}

// clickWhenShown clicks the element that matches a CSS selector once the page shows it, in the
// turn that finds it (see act).
func clickWhenShown(p *tab, what, selector string) {
	p.t.Helper()
	p.act(dlqPageWait, what, fmt.Sprintf(`
		const el = document.querySelector(%s);
		if (!el || el.disabled) return false;
		el.click();
		return true;`, jsString(selector)))
}

// waitRunning waits until the panel shows a running task's progress bar.
func waitRunning(p *tab) {
	p.t.Helper()
	waitJS(p, dlqPageWait, "the running move task's progress", progressJS, func(b *progressBlock) bool {
		return b != nil && b.Bar && strings.Contains(b.Text, "RUNNING")
	})
}

// waitTaskEnd waits until the newest past task, whose rate limit is rate, has ended, and returns
// its row.
func waitTaskEnd(p *tab, timeout time.Duration, rate string) []string {
	p.t.Helper()
	rows := waitJS(p, timeout, "the "+rate+" move task to end", historyJS, func(rows [][]string) bool {
		if len(rows) == 0 || len(rows[0]) < 5 || rows[0][4] != rate {
			return false
		}
		switch rows[0][1] {
		case "COMPLETED", "CANCELLED", "FAILED":
			return true
		}
		return false
	})
	return rows[0]
}

// movedOf reads "12 of 30".
func movedOf(s string) (moved, of int, ok bool) {
	a, b, found := strings.Cut(s, " of ")
	moved, of = count(a), count(b)
	return moved, of, found && moved >= 0 && of >= 0
}
