package notify_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/notify"
)

// TestAlertsCarryTraceLinks: under --trace-url, the tool calls that reach a DLQ with a W3C
// traceparent or an X-Ray header are linked to their traces in every target's message: Slack's
// links, a webhook's alerts, Teams' buttons and PagerDuty's links; a malformed traceparent
// links nowhere.
func TestAlertsCarryTraceLinks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.withTraceURL("https://grafana.example/explore?traceId={traceId}")
	pd := newPDReceiver(t)
	tr := newTLSReceiver(t)
	teams, err := notify.ParseTarget("teams:" + tr.srv.URL + "/workflows/x")
	w.must(err)
	n := w.notifier([]notify.Target{
		w.target(t, "slack", "/slack", ""), w.target(t, "webhook", "/hook", ""), teams, pd.target(t, ""),
	}, func(o *notify.Options) { o.Client = tr.srv.Client() })
	w.pair("calls", "calls-dlq")
	w.collect(true)
	_, err = n.Check(w.ctx)
	w.must(err)

	dlq, err := w.sqs.GetQueueUrl(w.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("calls-dlq")})
	w.must(err)
	for i, trace := range []struct{ traceparent, xray string }{
		{traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{xray: "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"},
		{traceparent: "00-nothex-00f067aa0ba902b7-01"},
	} {
		in := &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":"tc_%d","toolName":"fetch_url"}`, i)),
			MessageAttributes: map[string]types.MessageAttributeValue{}}
		if trace.traceparent != "" {
			in.MessageAttributes["traceparent"] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(trace.traceparent)}
		}
		if trace.xray != "" {
			in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(trace.xray)}}
		}
		_, err := w.sqs.SendMessage(w.ctx, in)
		w.must(err)
	}
	w.sampleAndCheck(n)

	links := []string{
		"https://grafana.example/explore?traceId=4bf92f3577b34da6a3ce929d0e0e4736",
		"https://grafana.example/explore?traceId=1-5759e988-bd862e3fe1be46a994272793",
	}
	tr.mu.Lock()
	var teamsCards []string
	for _, b := range tr.got {
		teamsCards = append(teamsCards, string(b))
	}
	tr.mu.Unlock()
	var pdLinks []string
	for _, e := range pd.accepted() {
		if strings.HasSuffix(e.DedupKey, "/dlq") {
			for _, l := range e.Links {
				pdLinks = append(pdLinks, l.Href)
			}
		}
	}
	payloads := map[string]string{
		"slack":     bodies(w.recv.requests("/slack")),
		"webhook":   bodies(w.recv.requests("/hook")),
		"teams":     strings.Join(teamsCards, "\n"),
		"pagerduty": strings.Join(pdLinks, "\n"),
	}
	for target, p := range payloads {
		for _, l := range links {
			if !strings.Contains(p, l) {
				t.Errorf("%s's message lacks the trace link %s:\n%s", target, l, p)
			}
		}
		if strings.Contains(p, "traceId=nothex") || strings.Contains(p, "traceId=00-") {
			t.Errorf("%s's message links the malformed traceparent:\n%s", target, p)
		}
	}
}

// bodies joins what a receiver got.
func bodies(rs []received) string {
	var b strings.Builder
	for _, r := range rs {
		b.Write(r.body)
		b.WriteByte('\n')
	}
	return b.String()
}
