package notify_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// redriveFour dead-letters four tool calls of docs-legacy from src, lets a new notifier see them,
// and redrives them back as an operator would, until SQS has moved them; it returns the notifier.
func (w *world) redriveFour(src string) *notify.Service {
	w.t.Helper()
	n := w.notifier(nil, nil)
	w.deadLetter(src, "docs-legacy", 4)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)
	act := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{"us-east-1": w.sqs}, Store: w.store, Publisher: w.bus, Now: w.clock.Now})
	if _, err := act.StartRedrive(w.ctx, actions.Actor{Name: "alice", Kind: auth.KindToken, Role: auth.RoleOperator},
		actions.StartRedriveRequest{Queue: "tool-calls-dlq"}); err != nil {
		w.t.Fatalf("StartRedrive: %v", err)
	}
	for range 10 {
		w.advance(time.Second)
	}
	w.must(w.coll.PollMoveTasks(w.ctx))
	return n
}

// TestRedriveOutcomeAlerts: what came back of an operator's redrive is said once when it settles
// (info: one of four back), and again, as a warning, when more come back and cross the threshold.
func TestRedriveOutcomeAlerts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("tool-calls", "tool-calls-dlq")
	n := w.redriveFour(src)
	// The workers take the four calls again; one fails at once, three hang for 20 minutes.
	out, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
	w.must(err)
	if len(out.Messages) != 4 {
		t.Fatalf("received %d redriven calls, want 4", len(out.Messages))
	}
	for _, m := range out.Messages[1:] {
		_, err := w.sqs.ChangeMessageVisibility(w.ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 1200})
		w.must(err)
	}
	fail := func() {
		for range 3 {
			w.advance(2 * time.Second)
			_, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
			w.must(err)
		}
	}
	fail()
	var alerts []views.Alert
	check := func() {
		w.advance(time.Minute)
		w.collect(true)
		w.must(w.coll.PollMoveTasks(w.ctx))
		alerts, err = n.Check(w.ctx)
		w.must(err)
	}
	check()
	if a := find(alerts, views.AlertRedriveOutcome); a != nil {
		t.Fatalf("an outcome before it settled: %+v", a)
	}
	for range 11 {
		check()
		if find(alerts, views.AlertRedriveOutcome) != nil {
			break
		}
	}
	a := find(alerts, views.AlertRedriveOutcome)
	if a == nil || a.Severity != views.SeverityInfo || a.Redrive.Outcome == nil || a.Redrive.Outcome.BouncedBack != 1 ||
		!strings.Contains(a.Title, "settled: 4 moved · 1 back within") || !strings.HasPrefix(a.Path, "/queues/tool-calls-dlq/redrives/") {
		t.Fatalf("settled: %+v", a)
	}
	check()
	if a := find(alerts, views.AlertRedriveOutcome); a != nil {
		t.Fatalf("said twice: %+v", a)
	}
	// The three others fail too once their 20 minutes are up: now it bounced them all.
	w.advance(20 * time.Minute)
	fail()
	check()
	a = find(alerts, views.AlertRedriveOutcome)
	if a == nil || a.Severity != views.SeverityWarning || a.Redrive.Outcome.BouncedBack != 4 || !strings.Contains(a.Title, "now bounced most of what it moved: 4 moved · 4 back") {
		t.Fatalf("crossed: %+v", a)
	}
	check()
	if a := find(alerts, views.AlertRedriveOutcome); a != nil {
		t.Fatalf("said a third time: %+v", a)
	}
}

// TestForgedBounceBacksRaiseNoWarning: the consumer deletes all four redriven calls; copies of
// their bodies sent straight to the DLQ and calls that reuse their tool call ids with other
// bodies arrive meanwhile. The redrive settles with none back, as information, never as a
// warning that it bounced most of what it moved; the reused ids are counted apart.
func TestForgedBounceBacksRaiseNoWarning(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("tool-calls", "tool-calls-dlq")
	dlq, err := w.sqs.GetQueueUrl(w.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("tool-calls-dlq")})
	w.must(err)
	n := w.redriveFour(src)
	out, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
	w.must(err)
	if len(out.Messages) != 4 {
		t.Fatalf("received %d redriven calls, want 4", len(out.Messages))
	}
	for _, m := range out.Messages {
		// The consumer succeeds, and deletes the call; a forger sends its body straight to the DLQ.
		_, err := w.sqs.DeleteMessage(w.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle})
		w.must(err)
		_, err = w.sqs.SendMessage(w.ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: m.Body})
		w.must(err)
	}
	for j := range 4 { // the same tool call ids, other bodies, failed through the source
		_, err := w.sqs.SendMessage(w.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(src),
			MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":"tc_docs-legacy_%d","toolName":"create_document","toolArgs":{"forged":true}}`, j))})
		w.must(err)
	}
	for range 4 {
		w.receive(src)
		w.receive(src)
		w.advance(2 * time.Second)
	}
	var a *views.Alert
	for range 15 {
		w.advance(time.Minute)
		w.collect(true)
		w.must(w.coll.PollMoveTasks(w.ctx))
		alerts, err := n.Check(w.ctx)
		w.must(err)
		if a = find(alerts, views.AlertRedriveOutcome); a != nil {
			break
		}
	}
	if a == nil || a.Severity != views.SeverityInfo || a.Redrive.Outcome.BouncedBack != 0 || a.Redrive.Outcome.SameCallOtherBody != 4 ||
		!strings.Contains(a.Title, "settled: 4 moved · none back so far") {
		t.Fatalf("outcome alert = %+v", a)
	}
}
