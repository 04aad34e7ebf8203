package e2e_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// overflowJS measures how much wider than the window a page is, and names the elements that
// stick out past its right edge (not those inside a box that scrolls on its own).
const overflowJS = `(() => {
	const width = document.documentElement.clientWidth;
	const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
		const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; } return false; };
	const out = [...document.querySelectorAll('body *')]
		.filter(el => el.getBoundingClientRect().right > width + 1 && !scrolls(el))
		.slice(0, 8).map(el => el.tagName.toLowerCase() + (el.className ? '.' + el.className : '') + ' ' + Math.round(el.getBoundingClientRect().right) + 'px');
	return {excess: document.documentElement.scrollWidth - width, culprits: out};
})()`

// tablesJS reads the tables of a page: those that scroll sideways in their own box, the
// identifiers (.clip) that take more than one line, and those cut short without their full
// value in their title.
const tablesJS = `(() => {
	const scrolling = [...document.querySelectorAll('.table-scroll')].filter(el => el.scrollWidth > el.clientWidth + 1)
		.map(el => ((el.querySelector('table') || {}).className || 'table') + ' ' + el.scrollWidth + '>' + el.clientWidth + ' (' +
			[...el.querySelectorAll('thead th')].map(th => th.textContent.trim().slice(0, 20) + ' ' + Math.round(th.getBoundingClientRect().width)).join(', ') + ')');
	const clips = [...document.querySelectorAll('table .clip')];
	const wrapped = clips.filter(el => el.getClientRects().length > 1 || el.offsetHeight > 2 * parseFloat(getComputedStyle(el).fontSize))
		.slice(0, 5).map(el => el.textContent.slice(0, 40));
	const untitled = clips.filter(el => el.scrollWidth > el.clientWidth + 1 && el.title !== el.textContent.trim())
		.slice(0, 5).map(el => el.textContent.slice(0, 40));
	return {scrolling, wrapped, untitled, clips: clips.length};
})()`

type tables struct {
	Scrolling []string `json:"scrolling"`
	Wrapped   []string `json:"wrapped"`
	Untitled  []string `json:"untitled"`
	Clips     int      `json:"clips"`
}

type overflow struct {
	Excess   int      `json:"excess"`
	Culprits []string `json:"culprits"`
}

// TestLongNamesWrap: a tool call with a 256-character tool name, session and group id, in the
// dead-letter queues of the demo, leaves every page that shows it within a 1,280-px window.
func TestLongNamesWrap(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	long := strings.Repeat("create_document_with_a_very_long_name_", 7)[:256]
	// Every column of the messages table at its widest: the error code is the reason and a
	// dimension, the MCP server another, and the FIFO DLQ adds the group.
	body := `{"toolCallId":"tc_e2e_long","toolName":"` + long + `","sessionId":"` + long + `","sequenceNumber":1,"error":{"code":"` + long[:200] + `"}}`
	ids := d.send(t, "exports-dlq", types.SendMessageBatchRequestEntry{
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			long[:200]: {DataType: aws.String("String"), StringValue: aws.String(long)},
		},
	})
	d.send(t, "tool-calls-dlq.fifo", types.SendMessageBatchRequestEntry{
		MessageBody: aws.String(body), MessageGroupId: aws.String(long[:128]), MessageDeduplicationId: aws.String("tc_e2e_long"),
		MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(long)}},
	})
	detail := "/queues/exports-dlq/messages/" + url.PathEscape(ids[0])
	eventually(t, 2*time.Minute, "the long-named message in the DLQ's sample", func() (bool, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		status, _, err := httpGet(ctx, d.page(detail))
		return status == http.StatusOK, "GET " + detail + ": " + http.StatusText(status), err
	})
	for _, path := range []string{
		"/", "/queues/exports-dlq", "/queues/exports-dlq/messages", "/queues/exports-dlq/messages?tool=" + url.QueryEscape(long),
		detail, "/queues/tool-calls-dlq.fifo", "/queues/tool-calls-dlq.fifo/messages", "/queues/tool-calls.fifo", "/audit", "/status",
	} {
		t.Run(path, func(t *testing.T) {
			p := newTab(t)
			p.open(d.page(path))
			waitJS(p, 20*time.Second, "the page", `document.readyState`, func(s string) bool { return s == "complete" })
			got := mustEval[overflow](p, overflowJS)
			if got.Excess > 0 {
				t.Errorf("the page is %d px wider than the 1,280-px window; sticking out: %v", got.Excess, got.Culprits)
			}
			// Tables: no scroll bar of their own at 1,280 px, identifiers on one line, cut ones
			// titled with their full value.
			tb := mustEval[tables](p, tablesJS)
			if len(tb.Scrolling) > 0 || len(tb.Wrapped) > 0 || len(tb.Untitled) > 0 {
				t.Errorf("tables: scrolling %v; identifiers on several lines %q; cut without their value in a title %q",
					tb.Scrolling, tb.Wrapped, tb.Untitled)
			}
		})
	}
	// The messages table: the long tool name ends in an ellipsis, and shows whole while its row
	// holds the focus.
	p := newTab(t)
	p.open(d.page("/queues/exports-dlq/messages"))
	waitJS(p, 20*time.Second, "the page", `document.readyState`, func(s string) bool { return s == "complete" })
	const toolCell = `[...document.querySelectorAll('table.messages tbody tr')].find(tr => tr.textContent.includes('tc_e2e_long') || tr.querySelector('code.clip[title^="create_document_with_a_very_long_name_"]'))`
	cut := mustEval[struct{ Cut, Found bool }](p, `(() => { const tr = `+toolCell+`; if (!tr) return {found: false};
		const c = tr.querySelector('code.clip[title^="create_document_with"]'); return {found: !!c, cut: c.scrollWidth > c.clientWidth + 1}; })()`)
	if !cut.Found || !cut.Cut {
		t.Fatalf("the long tool name: found %v, cut short %v; want it cut short", cut.Found, cut.Cut)
	}
	whole := mustEval[bool](p, `(() => { const tr = `+toolCell+`; tr.querySelector('th a').focus();
		const c = tr.querySelector('code.clip[title^="create_document_with"]'); return c.scrollWidth <= c.clientWidth + 1; })()`)
	if !whole {
		t.Error("the long tool name stays cut while its row holds the focus")
	}
}
