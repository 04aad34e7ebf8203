package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// messageListJS reads a messages page's list: when its sample was taken, each row's message id,
// tool and dimensions, and the fields the selection form carries (null without the form).
const messageListJS = `(() => {
	const sec = document.getElementById('messages');
	if (!sec) return null;
	const form = document.getElementById('selection-form');
	const rows = [...sec.querySelectorAll('table.messages tbody tr')].map(tr => {
		const th = tr.querySelector('th[scope=row]');
		const href = (th?.querySelector('a')?.getAttribute('href') ?? '').split('?')[0];
		const dims = {};
		for (const s of tr.querySelectorAll('td.dimensions .dimension')) {
			const name = s.firstElementChild.textContent.trim();
			dims[name] = s.textContent.trim().slice(name.length).trim();
		}
		return {id: decodeURIComponent(href.slice(href.lastIndexOf('/') + 1)), tool: th?.nextElementSibling?.textContent.trim() ?? '', dims};
	});
	return {
		sampledAt: sec.querySelector('p.coverage time')?.getAttribute('datetime') ?? '',
		rows,
		fields: form ? [...form.querySelectorAll('input[type=hidden]')].filter(i => i.name.startsWith('sel_')).map(i => i.name + '=' + i.value) : null,
	};
})()`

type messageList struct {
	SampledAt string       `json:"sampledAt"`
	Rows      []messageRow `json:"rows"`
	Fields    []string     `json:"fields"`
}

type messageRow struct {
	ID   string            `json:"id"`
	Tool string            `json:"tool"`
	Dims map[string]string `json:"dims"`
}

// sampledAfter says whether the list's sample was taken after t.
func (l *messageList) sampledAfter(t time.Time) bool {
	at, err := time.Parse(time.RFC3339, l.SampledAt)
	// The page shows whole seconds: a sample of t's own second may have been taken before it.
	return err == nil && !at.Before(t.Truncate(time.Second).Add(time.Second))
}

// ids are the message ids the list shows.
func (l *messageList) ids() []string {
	var ids []string
	for _, r := range l.Rows {
		ids = append(ids, r.ID)
	}
	return ids
}

// selectionConfirmJS reads a selection's confirmation page: its heading, its text, what the
// selection names (each name's values) and the sample's counts by tool and destination.
const selectionConfirmJS = `(() => {
	const sec = document.querySelector('section.selection-confirm');
	if (!sec) return null;
	return {
		heading: document.querySelector('h1')?.textContent.replace(/\s+/g, ' ').trim() ?? '',
		text: sec.textContent.replace(/\s+/g, ' '),
		error: sec.querySelector('.error')?.textContent ?? '',
		names: Object.fromEntries([...sec.querySelectorAll('dl.selection dt')]
			.map(dt => [dt.textContent.trim(), [...dt.nextElementSibling.querySelectorAll('code')].map(c => c.textContent)])),
		counts: [...sec.querySelectorAll('table.counts tr')].map(tr => tr.textContent.replace(/\s+/g, ' ').trim()),
	};
})()`

type selectionConfirm struct {
	Heading string              `json:"heading"`
	Text    string              `json:"text"`
	Error   string              `json:"error"`
	Names   map[string][]string `json:"names"`
	Counts  []string            `json:"counts"`
}

// crawlerOutage is how long the demo's crawler MCP server is down after its traffic starts
// (traffic.crawlerOutage): its calls sent before then fail, and a redrive after it replays them
// for good, as SQS sends a redriven message anew.
const crawlerOutage = 75 * time.Second

// TestSelectiveRedriveByClicks replays the demo's fetch_url calls to the crawler once the crawler
// is back, by clicks: the messages page filtered to mcpServer=crawler, the tool chosen in the
// filter form, "Review a redrive of every message matching these filters", the confirmation. The
// redrive panel follows the job to COMPLETED, the API says it moved what it matched, and a later
// sample of the DLQ lists no crawler call while the docs-legacy calls beside them stay.
//
// It takes the DLQ's turn before t.Parallel, so ahead of the tests that redrive the whole DLQ
// (they take theirs after it): one of those after the outage would replay the crawler's calls
// itself, and the demo sends no more of them.
func TestSelectiveRedriveByClicks(t *testing.T) {
	suite.webSearchDLQ.Lock()
	defer suite.webSearchDLQ.Unlock()
	t.Parallel()
	d := needDemo(t)
	const dlq = "web-search-dlq"
	t.Cleanup(func() {
		if t.Failed() {
			d.logDepths(t, dlq, "web-search")
		}
	})

	// The demo's clock: its calls to the crawler succeed only if sent after the outage.
	back := demoTrafficStart(t, d).Add(crawlerOutage + time.Second)
	if wait := time.Until(back); wait > 0 {
		t.Logf("waiting %s for the demo's crawler to come back", wait.Round(time.Second))
		select {
		case <-time.After(wait):
		case <-t.Context().Done():
			return
		}
	}

	p := newTab(t)
	base := "/queues/" + dlq + "/messages"
	openUntil(p, dlqPageWait, "fetch_url calls to the crawler in the DLQ's sample", d.page(base+"?mcpServer=crawler"), messageListJS,
		func(l *messageList) bool {
			return l != nil && slices.ContainsFunc(l.Rows, func(r messageRow) bool { return r.Tool == "fetch_url" })
		})
	// The filter form keeps mcpServer=crawler and adds the tool; HTMX swaps the list in place.
	p.act(dlqPageWait, "choose fetch_url and show", `
		const tool = document.getElementById('tool');
		if (!tool || ![...tool.options].some(o => o.value === 'fetch_url')) return false;
		tool.value = 'fetch_url';
		tool.form.querySelector('button[type=submit]').click();
		return true;`)
	before := waitJS(p, dlqPageWait, "the list filtered to fetch_url and crawler", messageListJS, func(l *messageList) bool {
		return l != nil && l.Fields != nil && slices.Contains(l.Fields, "sel_tool=fetch_url") && len(l.Rows) > 0
	})
	for _, want := range []string{"sel_tool=fetch_url", "sel_dim=mcpServer=crawler"} {
		if !slices.Contains(before.Fields, want) {
			t.Errorf("the selection form carries %q, want %s among them", before.Fields, want)
		}
	}
	for _, r := range before.Rows {
		if r.Tool != "fetch_url" || r.Dims["mcpServer"] != "crawler" {
			t.Errorf("the filtered list shows %+v", r)
		}
	}
	if u := mustEval[string](p, `location.search`); !strings.Contains(u, "tool=fetch_url") || !strings.Contains(u, "mcpServer=crawler") {
		t.Errorf("the address after Show is ?%s, want both filters in it", u)
	}

	clickWhenShown(p, "review a redrive of every match", `#selection-form button[name=scope][value=filters]:not([formaction])`)
	confirm := waitJS(p, dlqPageWait, "the selective redrive's confirmation", selectionConfirmJS, func(c *selectionConfirm) bool { return c != nil })
	checkConfirm(t, confirm, "Redrive chosen messages of "+dlq, map[string][]string{"tools": {"fetch_url"}, "mcpServer": {"crawler"}},
		"go back to the queue each failed in", "cannot be undone")
	if !slices.ContainsFunc(confirm.Counts, func(c string) bool { return strings.HasPrefix(c, "to ") && strings.Contains(c, "web-search") }) {
		t.Errorf("the confirmation's counts %q name no destination web-search", confirm.Counts)
	}
	clickWhenShown(p, "confirm the selective redrive", `.selection-confirm button.danger`)
	waitJS(p, dlqPageWait, "the queue page after the start", `location.pathname + location.search`, func(u string) bool {
		return u == "/queues/"+dlq+"?done=selection-started"
	})

	row := waitJobEnd(p, "selective", "fetch_url")
	if !strings.HasPrefix(row[1], "COMPLETED") || !strings.Contains(row[1], "crawler") {
		t.Fatalf("the selective redrive's row: %q, want COMPLETED, naming mcpServer crawler", row)
	}
	job := apiJob(t, d, dlq, "selection", "fetch_url")
	if job.Status != "COMPLETED" || job.Selection.Matched != job.Moved || job.Moved < 1 {
		t.Errorf("the API says the job is %s, matched %d, moved %d: want COMPLETED, every match moved", job.Status, job.Selection.Matched, job.Moved)
	}
	t.Logf("the selective redrive moved %d calls; the sample before it listed %d", job.Moved, len(before.Rows))
	if !strings.HasPrefix(row[2], fmt.Sprintf("%d of ", job.Moved)) {
		t.Errorf("the row says %q moved, the API %d", row[2], job.Moved)
	}

	// Samples taken after the job: the crawler's calls are gone, the docs-legacy ones stay.
	after := openUntil(p, dlqPageWait, "a sample taken after the job", d.page(base+"?tool=fetch_url&mcpServer=crawler"), messageListJS,
		func(l *messageList) bool { return l != nil && l.sampledAfter(job.UpdatedAt) })
	if len(after.Rows) > 0 {
		t.Errorf("after the job, the DLQ still lists fetch_url calls to the crawler: %q (before it: %q)", after.ids(), before.ids())
	}
	legacy := openUntil(p, dlqPageWait, "the docs-legacy calls in a sample taken after the job", d.page(base+"?mcpServer=docs-legacy"), messageListJS,
		func(l *messageList) bool { return l != nil && l.sampledAfter(job.UpdatedAt) })
	if !slices.ContainsFunc(legacy.Rows, func(r messageRow) bool { return r.Tool == "web_search" }) {
		t.Errorf("after the job, the DLQ lists no web_search call to docs-legacy: %+v", legacy.Rows)
	}
}

// TestDiscardByClicksFindsItInTheArchive discards the read_file calls that tried to leave the
// workspace, by clicks on the messages page filtered to them (tool and error), follows the
// discard to COMPLETED in the redrive panel, then finds one of the calls in the queue's archive,
// opens its page and reads its body there, as text.
func TestDiscardByClicksFindsItInTheArchive(t *testing.T) {
	t.Parallel()
	suite.webSearchDLQ.Lock() // a redrive of the whole DLQ would take the calls away meanwhile
	defer suite.webSearchDLQ.Unlock()
	d := needDemo(t)
	const dlq = "web-search-dlq"
	t.Cleanup(func() {
		if t.Failed() {
			d.logDepths(t, dlq, "web-search")
		}
	})

	p := newTab(t)
	// The demo's traffic sends such calls from its start on; one redriven by another test comes
	// back after failing again.
	before := openUntil(p, 3*time.Minute, "read_file calls that escape the workspace in the DLQ's sample",
		d.page("/queues/"+dlq+"/messages?tool=read_file&error=path_escapes_workspace"), messageListJS,
		func(l *messageList) bool { return l != nil && l.Fields != nil && len(l.Rows) > 0 })
	for _, want := range []string{"sel_tool=read_file", "sel_dim=error=path_escapes_workspace"} {
		if !slices.Contains(before.Fields, want) {
			t.Errorf("the selection form carries %q, want %s among them", before.Fields, want)
		}
	}
	for _, r := range before.Rows {
		if r.Tool != "read_file" || r.Dims["error"] != "path_escapes_workspace" {
			t.Errorf("the filtered list shows %+v", r)
		}
	}

	clickWhenShown(p, "review a discard of every match", `#selection-form button[name=scope][value=filters][formaction$="/discard/selection"]`)
	confirm := waitJS(p, dlqPageWait, "the discard's confirmation", selectionConfirmJS, func(c *selectionConfirm) bool { return c != nil })
	checkConfirm(t, confirm, "Discard chosen messages of "+dlq, map[string][]string{"tools": {"read_file"}, "error": {"path_escapes_workspace"}},
		"toolq's archive", "can be restored")
	clickWhenShown(p, "confirm the discard", `.selection-confirm button.danger`)
	waitJS(p, dlqPageWait, "the queue page after the start", `location.pathname + location.search`, func(u string) bool {
		return u == "/queues/"+dlq+"?done=discard-started"
	})

	row := waitJobEnd(p, "discard to the archive", "read_file")
	if !strings.HasPrefix(row[1], "COMPLETED") {
		t.Fatalf("the discard's row: %q, want COMPLETED", row)
	}
	job := apiJob(t, d, dlq, "discard", "read_file")
	if job.Status != "COMPLETED" || job.Selection.Matched != job.Moved || job.Moved < 1 {
		t.Errorf("the API says the discard is %s, matched %d, moved %d: want COMPLETED, every match archived", job.Status, job.Selection.Matched, job.Moved)
	}
	t.Logf("the discard archived %d calls; the sample before it listed %d", job.Moved, len(before.Rows))

	// The archive lists the calls the sample showed (one may have been out of sight, in flight
	// for a consumer's or the sampler's receive, when the job scanned: any one will do).
	archive := "/queues/" + dlq + "/archive"
	ids, _ := json.Marshal(before.ids())
	id := openUntil(p, dlqPageWait, "a discarded call in the archive", d.page(archive), fmt.Sprintf(`%s.find(id =>
		document.querySelector('table.archive a[href="%s/' + encodeURIComponent(id) + '"]')) ?? ''`, ids, archive),
		func(id string) bool { return id != "" })
	page := archive + "/" + url.PathEscape(id)
	clickWhenShown(p, "open the archived call", fmt.Sprintf(`table.archive a[href=%s]`, jsString(page)))
	body := waitJS(p, dlqPageWait, "the archived call's page", fmt.Sprintf(`location.pathname === %s ? (() => {
		const code = document.querySelector('pre.body code');
		return code ? {text: code.textContent, elements: code.childElementCount} : null;
	})() : null`, jsString(page)), func(b *struct {
		Text     string `json:"text"`
		Elements int    `json:"elements"`
	}) bool {
		return b != nil
	})
	if body.Elements != 0 {
		t.Errorf("the archived body holds %d elements, want text only", body.Elements)
	}
	for _, want := range []string{`"toolName": "read_file"`, "path_escapes_workspace"} {
		if !strings.Contains(body.Text, want) {
			t.Errorf("the archived body lacks %q: %.500s", want, body.Text)
		}
	}
	// Every queue's archive lists it too, with its queue.
	p.open(d.page("/archive"))
	if queue := mustEval[string](p, fmt.Sprintf(`document.querySelector('table.archive a[href=%s]')?.closest('tr').querySelector('td a')?.textContent.trim() ?? ''`,
		jsString(page))); queue != dlq {
		t.Errorf("/archive lists the call under queue %q, want %s", queue, dlq)
	}
	if n := p.dialogCount(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
}

// demoTrafficStart is when the shared demo's traffic started, as the demo logged it: the latest
// start when it runs traffic in more than one account, each with its own outage.
func demoTrafficStart(t *testing.T, d *demo) time.Time {
	t.Helper()
	var lines []string
	eventually(t, 30*time.Second, "the demo's traffic to start", func() (bool, string, error) {
		lines = d.logLines(`msg="traffic started"`)
		return len(lines) > 0, d.logTail(5), nil
	})
	var start time.Time
	for _, line := range lines {
		for f := range strings.FieldsSeq(line) {
			if v, ok := strings.CutPrefix(f, "time="); ok {
				at, err := time.Parse(time.RFC3339Nano, v)
				if err != nil {
					t.Fatalf("the demo's log line %q: %v", line, err)
				}
				if at.After(start) {
					start = at
				}
			}
		}
	}
	if start.IsZero() {
		t.Fatalf("the demo's log lines %q have no time", lines)
	}
	return start
}

// openUntil loads url in p every two seconds until expr's value there is one done accepts, and
// returns it: a messages or archive page is not live, and shows a newer sample or a newly
// archived call only when loaded again.
func openUntil[T any](p *tab, timeout time.Duration, what, url, expr string, done func(T) bool) T {
	p.t.Helper()
	var v T
	ctx, cancel := context.WithTimeout(p.t.Context(), timeout)
	defer cancel()
	for {
		p.open(url)
		var err error
		if v, err = eval[T](p, expr); err == nil && done(v) {
			return v
		}
		select {
		case <-ctx.Done():
			b, _ := json.Marshal(v)
			p.t.Fatalf("%s: not within %s at %s; last seen: %s (error: %v)", what, timeout, url, b, err)
		case <-time.After(2 * time.Second):
		}
	}
}

// checkConfirm checks a selection's confirmation: its heading, what the selection names, that
// it holds some of the sample, and the sentences that say where the messages go.
func checkConfirm(t *testing.T, c *selectionConfirm, heading string, names map[string][]string, says ...string) {
	t.Helper()
	if c.Error != "" {
		t.Fatalf("the confirmation refuses: %s", c.Error)
	}
	if c.Heading != heading {
		t.Errorf("the confirmation's heading is %q, want %q", c.Heading, heading)
	}
	for name, values := range names {
		if !slices.Equal(c.Names[name], values) {
			t.Errorf("the confirmation names %s %q, want %q (all: %v)", name, c.Names[name], values, c.Names)
		}
	}
	if len(c.Names) != len(names) {
		t.Errorf("the confirmation names %v, want only %v", c.Names, names)
	}
	var held, of int
	if i := strings.Index(c.Text, "newest sample it holds "); i < 0 {
		t.Errorf("the confirmation does not say what the sample holds: %s", c.Text)
	} else if _, err := fmt.Sscanf(c.Text[i:], "newest sample it holds %d of %d", &held, &of); err != nil || held < 1 {
		t.Errorf("the confirmation says the sample holds %d of %d (%v), want some: %s", held, of, err, c.Text)
	}
	for _, s := range says {
		if !strings.Contains(c.Text, s) {
			t.Errorf("the confirmation does not say %q: %s", s, c.Text)
		}
	}
}

// waitJobEnd waits until the redrive panel's newest job of kind ("selective", "discard to the
// archive") whose selection names tool has ended, and returns its row (see historyJS).
func waitJobEnd(p *tab, kind, tool string) []string {
	p.t.Helper()
	expr := fmt.Sprintf(`(%s).find(r => r.length > 2 && r[1].includes(%s) && r[1].includes(%s)) ?? null`, historyJS, jsString(kind), jsString(tool))
	return waitJS(p, dlqPageWait, "the "+kind+" job of "+tool+" to end", expr, func(r []string) bool {
		return r != nil && (strings.HasPrefix(r[1], "COMPLETED") || strings.HasPrefix(r[1], "CANCELLED") || strings.HasPrefix(r[1], "FAILED"))
	})
}

// redriveJob is a job as GET /api/v1/queues/{queue}/redrives reports it.
type redriveJob struct {
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	Moved     int64     `json:"moved"`
	UpdatedAt time.Time `json:"updatedAt"`
	Selection *struct {
		Tools   []string `json:"tools"`
		Matched int64    `json:"matched"`
	} `json:"selection"`
}

// apiJob reads the newest job of kind whose selection names tool from the API.
func apiJob(t *testing.T, d *demo, dlq, kind, tool string) redriveJob {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	status, body, err := httpGet(ctx, d.page("/api/v1/queues/"+dlq+"/redrives"))
	if err != nil || status != 200 {
		t.Fatalf("GET the redrives of %s: %d %v %.300s", dlq, status, err, body)
	}
	var list struct{ Redrives []redriveJob }
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatalf("the redrives of %s: %v", dlq, err)
	}
	for _, j := range list.Redrives {
		if j.Kind == kind && j.Selection != nil && slices.Contains(j.Selection.Tools, tool) {
			return j
		}
	}
	t.Fatalf("the API lists no %s job of %s: %.1000s", kind, tool, body)
	return redriveJob{}
}
