package e2e_test

import (
	"strings"
	"testing"
	"time"
)

// TestAdviceInTheBrowser: the overview's "Misconfigured only" checkbox keeps the queues the
// advisor flags (notifications among them) and leaves the others out, without a reload; the
// EventBridge target's dead-letter queue says why each event failed, and why it has no redrive.
func TestAdviceInTheBrowser(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	p := newTab(t)
	p.open(d.page("/"))
	overviewRows(p, 60*time.Second, demoQueues...)
	p.click(`input[name=misconfigured]`)
	rows := waitJS(p, 30*time.Second, "the misconfigured queues alone", overviewRowsJS, func(rows []overviewRow) bool {
		names := map[string]bool{}
		for _, r := range rows {
			names[r["name"]] = true
		}
		return names["notifications"] && !names["exports"]
	})
	for _, r := range rows {
		if !strings.Contains(r["Health"], "misconfigured (") {
			t.Errorf("%s is listed as misconfigured but says %q", r["name"], r["Health"])
		}
	}
	if got := mustEval[string](p, `location.search`); !strings.Contains(got, "misconfigured=1") {
		t.Errorf("the filter is not in the address (%q): a reload would lose it", got)
	}

	p.open(d.page("/queues/tool-call-audit-dlq"))
	reason := waitJS(p, 120*time.Second, "a failed event's reason", `document.querySelector('#messages td.reason')?.textContent.trim() ?? ''`, func(s string) bool { return s != "" })
	if !strings.Contains(reason, "SDK_CLIENT_ERROR") {
		t.Errorf("reason = %q", reason)
	}
	if n := mustEval[int](p, `document.querySelectorAll('#redrive-panel, form.redrive-start').length`); n != 0 {
		t.Errorf("an EventBridge target's DLQ has a redrive form")
	}
}
