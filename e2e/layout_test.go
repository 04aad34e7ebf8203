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

type overflow struct {
	Excess   int      `json:"excess"`
	Culprits []string `json:"culprits"`
}

// TestLongNamesWrap: a tool call with a 256-character tool name, session and group id, in the
// dead-letter queues of the demo, leaves every page that shows it within a 1,280-px window.
func TestLongNamesWrap(t *testing.T) {
	d := needDemo(t)
	long := strings.Repeat("create_document_with_a_very_long_name_", 7)[:256]
	body := `{"toolCallId":"tc_e2e_long","toolName":"` + long + `","sessionId":"` + long + `","sequenceNumber":1}`
	ids := d.send(t, "exports-dlq", types.SendMessageBatchRequestEntry{
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			long[:200]: {DataType: aws.String("String"), StringValue: aws.String(long)},
		},
	})
	d.send(t, "tool-calls-dlq.fifo", types.SendMessageBatchRequestEntry{
		MessageBody: aws.String(body), MessageGroupId: aws.String(long[:128]), MessageDeduplicationId: aws.String("tc_e2e_long"),
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
		})
	}
}
