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

// injectionJS lists what an HTML injection would have added to the page: an <img src=x>, any
// element with an on* event handler attribute, any inline <script> (the pages have none: the
// CSP allows only 'self' scripts) and any <svg onload>.
const injectionJS = `(() => ({
	images: document.querySelectorAll('img[src="x"]').length,
	handlers: [...document.querySelectorAll('*')]
		.filter(el => [...el.attributes].some(a => a.name.toLowerCase().startsWith('on')))
		.map(el => el.outerHTML.slice(0, 120)),
	inlineScripts: [...document.scripts].filter(s => !s.src).map(s => s.textContent.slice(0, 120)),
}))()`

type injection struct {
	Images        int      `json:"images"`
	Handlers      []string `json:"handlers"`
	InlineScripts []string `json:"inlineScripts"`
}

// TestHostileMessageIsShownAsText sends a DLQ a tool call whose tool name, arguments and message
// attribute are HTML payloads, as LLM output can be, and checks in the browser that every page
// showing it renders the payload as text: visible, with no injected element and no dialog.
func TestHostileMessageIsShownAsText(t *testing.T) {
	t.Parallel()
	d := needDemo(t)
	const dlq = "exports-dlq"
	const (
		toolName = `<img src=x onerror=alert(1)>`
		argument = `<script>alert(2)</script>`
		attrText = `"><svg onload=alert(3)></svg><script>alert(4)</script>`
	)
	// Written out rather than marshalled: encoding/json would escape < and > as \u003c.
	body := `{"toolCallId":"tc_e2e_xss","toolName":"` + toolName + `","toolArgs":{"q":"` + argument + `"},"sessionId":"sess_e2e_xss","sequenceNumber":1}`
	ids := d.send(t, dlq, types.SendMessageBatchRequestEntry{
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"note": {DataType: aws.String("String"), StringValue: aws.String(attrText)},
		},
	})
	detail := "/queues/" + dlq + "/messages/" + url.PathEscape(ids[0])

	// The message's page exists once the collector has sampled it. A pass of short-polling
	// receives can miss a message, and the collector looks for due samples every 10 s whatever
	// --peek-dlq-interval says, so this can take a few passes.
	eventually(t, 2*time.Minute, "the hostile message in the DLQ's sample", func() (bool, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		status, _, err := httpGet(ctx, d.page(detail))
		return status == http.StatusOK, "GET " + detail + ": " + http.StatusText(status), err
	})

	pages := []struct {
		name, path string
		want       []string
	}{
		{"dlq page", "/queues/" + dlq, []string{toolName}},
		{"messages of the tool", "/queues/" + dlq + "/messages?tool=" + url.QueryEscape(toolName), []string{toolName}},
		{"message page", detail, []string{toolName, argument, attrText}},
	}
	for _, pg := range pages {
		t.Run(pg.name, func(t *testing.T) {
			p := newTab(t)
			p.open(d.page(pg.path))
			waitJS(p, 20*time.Second, "the payloads shown as text", `document.body.innerText`, func(text string) bool {
				for _, w := range pg.want {
					if !strings.Contains(text, w) {
						return false
					}
				}
				return true
			})
			got := mustEval[injection](p, injectionJS)
			if got.Images > 0 || len(got.Handlers) > 0 || len(got.InlineScripts) > 0 {
				t.Errorf("injected into the DOM: %d img[src=x], handlers %q, inline scripts %q", got.Images, got.Handlers, got.InlineScripts)
			}
			if n := p.dialogCount(); n > 0 {
				t.Errorf("%d JavaScript dialogs opened", n)
			}
		})
	}
}
