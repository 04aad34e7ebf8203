package sqsim

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// t0 is where the tests' manual clocks start: the beginning of a minute, so
// that metric minutes are easy to reason about.
var t0 = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

// harness is a simulator on a manual clock with stock SDK clients pointed at
// it.
type harness struct {
	sim   *Simulator
	clock *ManualClock
	url   string
	sqs   *sqs.Client
	cw    *cloudwatch.Client
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	clock := NewManualClock(t0)
	sim := New(Options{Clock: clock, Seed: 1})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	h := &harness{sim: sim, clock: clock, url: srv.URL}
	h.sqs, h.cw = newClients(srv.URL)
	return h
}

// newClients returns the stock clients configured only with an endpoint,
// a region and static credentials. Retries are off so that tests see each
// answer as the server gave it.
func newClients(endpoint string) (*sqs.Client, *cloudwatch.Client) {
	cfg := aws.Config{
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
	}
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = aws.String(endpoint) }),
		cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = aws.String(endpoint) })
}

// advance moves the clock and does the work that fell due.
func (h *harness) advance(d time.Duration) {
	h.clock.Advance(d)
	h.sim.Tick()
}

func (h *harness) createQueue(t testing.TB, name string, attrs map[string]string) string {
	t.Helper()
	out, err := h.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

func (h *harness) queueARN(t testing.TB, url string) string {
	t.Helper()
	out, err := h.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	return out.Attributes["QueueArn"]
}

func (h *harness) send(t testing.TB, url, body string, opts ...func(*sqs.SendMessageInput)) *sqs.SendMessageOutput {
	t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	for _, o := range opts {
		o(in)
	}
	out, err := h.sqs.SendMessage(context.Background(), in)
	if err != nil {
		t.Fatalf("SendMessage %q: %v", body, err)
	}
	return out
}

func inGroup(group, dedup string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) {
		in.MessageGroupId = aws.String(group)
		if dedup != "" {
			in.MessageDeduplicationId = aws.String(dedup)
		}
	}
}

// receive receives up to max messages with every system attribute, without
// waiting.
func (h *harness) receive(t testing.TB, url string, max int32) []types.Message {
	t.Helper()
	out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
		QueueUrl:                    aws.String(url),
		MaxNumberOfMessages:         max,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
		MessageAttributeNames:       []string{"All"},
	})
	if err != nil {
		t.Fatalf("ReceiveMessage: %v", err)
	}
	return out.Messages
}

func bodies(msgs []types.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = aws.ToString(m.Body)
	}
	return out
}

func (h *harness) attributes(t testing.TB, url string) map[string]string {
	t.Helper()
	out, err := h.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes: %v", err)
	}
	return out.Attributes
}

func (h *harness) delete(t testing.TB, url string, m types.Message) {
	t.Helper()
	if _, err := h.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
}

// TestRunWithRealClock checks the real-clock path end to end: Run's ticks
// wake a long poll when a visibility timeout ends. It takes a second of
// real time, the shortest visibility timeout SQS allows.
func TestRunWithRealClock(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits one second of real time")
	}
	sim := New(Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sim.Run(ctx)
	srv := httptest.NewServer(sim)
	defer srv.Close()
	client, _ := newClients(srv.URL)
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"VisibilityTimeout": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	first, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl})
	if err != nil || len(first.Messages) != 1 {
		t.Fatalf("first receive: %v", err)
	}
	start := time.Now()
	again, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, WaitTimeSeconds: 5})
	if err != nil || len(again.Messages) != 1 {
		t.Fatalf("long poll: %v, %d messages", err, len(again.Messages))
	}
	if waited := time.Since(start); waited > 3*time.Second {
		t.Errorf("long poll returned after %v, want about a second", waited)
	}
}

// sqsCall sends one SQS request in AWS JSON 1.0 as a client writes it, for
// the inputs the Go SDK cannot send (it omits a zero DelaySeconds).
func (h *harness) sqsCall(t testing.TB, op, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.url+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", sqsTargetPrefix+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}
