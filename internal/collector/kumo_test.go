package collector

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
)

// TestAgainstKumo runs full cycles against kumo, an AWS emulator nobody here wrote, over a
// standard and a FIFO queue, each with a DLQ. kumo lacks ListDeadLetterSourceQueues and the
// move-task operations: they must be recorded once each, never fatal. kumo keeps real time, so
// this test uses the wall clock and the consumer fails fast (visibility back to 0).
func TestAgainstKumo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	clients, err := awsconf.Load(ctx, awsconf.Options{
		Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond,
	})
	must(t, err)
	sq, cw := clients.SQS, clients.CloudWatch
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolq.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })

	create := func(name string, attrs map[string]string) (string, string) {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		must(t, err)
		got, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		must(t, err)
		return aws.ToString(out.QueueUrl), got.Attributes["QueueArn"]
	}
	redrive := func(dlqARN string) string {
		return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlqARN)
	}
	// kumo keeps its queues in package state that every server of the process shares, so each
	// run (go test -count=N) names its queues apart and watches only those.
	run := "k" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	_, webDLQ := create(run+"web-search-dlq", nil)
	webURL, webARN := create(run+"web-search", map[string]string{"RedrivePolicy": redrive(webDLQ)})
	_, toolDLQ := create(run+"tool-calls-dlq.fifo", map[string]string{"FifoQueue": "true"})
	toolURL, toolARN := create(run+"tool-calls.fifo", map[string]string{"FifoQueue": "true", "RedrivePolicy": redrive(toolDLQ)})

	// Three calls of web-search fail until they reach the DLQ.
	for i := range 3 {
		_, err := sq.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(webURL), MessageBody: aws.String(toolCallBody("search", i, "s"))})
		must(t, err)
	}
	_, err = sq.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl: aws.String(toolURL), MessageBody: aws.String(toolCallBody("create_document", 1, "sess_k")),
		MessageGroupId: aws.String("sess_k"), MessageDeduplicationId: aws.String("k1"),
	})
	must(t, err)
	for range 4 {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(webURL), MaxNumberOfMessages: 10})
		must(t, err)
		for _, m := range out.Messages {
			_, err := sq.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(webURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
			must(t, err)
		}
	}

	c, err := New(Options{
		Regions:       []Region{{Name: "us-east-1", SQS: sq, CloudWatch: cw}},
		Store:         st,
		QueuePrefixes: []string{run},
	})
	must(t, err)
	for round := range 2 {
		for _, cycle := range []func(context.Context) error{c.Discover, c.CycleAttributes, c.CycleMetrics, c.PeekDue, c.PollMoveTasks} {
			if err := cycle(ctx); err != nil {
				t.Fatalf("round %d: cycle failed: %v", round, err)
			}
		}
	}

	qs, err := st.ListQueues(ctx, store.QueueFilter{})
	must(t, err)
	byName := map[string]store.Queue{}
	for _, q := range qs {
		byName[strings.TrimPrefix(q.Name, run)] = q
	}
	if len(byName) != 4 {
		t.Fatalf("stored queues = %v, want 4", byName)
	}
	for name, q := range byName {
		if q.AttributesAt.IsZero() || q.ARN == "" {
			t.Errorf("%s: attributes not stored", name)
		}
	}
	if !byName["tool-calls.fifo"].FIFO || byName["web-search"].FIFO {
		t.Errorf("FIFO flags wrong")
	}
	if got := byName["web-search-dlq"].SourceARNs; !slices.Contains(got, webARN) {
		t.Errorf("web-search-dlq sources = %v, want %s", got, webARN)
	}
	if got := byName["tool-calls-dlq.fifo"].SourceARNs; !slices.Contains(got, toolARN) {
		t.Errorf("tool-calls-dlq.fifo sources = %v, want %s", got, toolARN)
	}
	if got := byName["web-search"].MaxReceiveCount; got != 2 {
		t.Errorf("web-search maxReceiveCount = %d", got)
	}

	// The DLQ was sampled, and its messages handed back.
	dlq := byName["web-search-dlq"]
	s, err := st.LatestSample(ctx, dlq.ID)
	must(t, err)
	if s.Seen != 3 || s.Error != "" {
		t.Errorf("web-search-dlq sample = %+v, want 3 seen", s)
	}
	// kumo counts a released message as in flight until its next receive, so look by receiving.
	out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(dlq.URL), MaxNumberOfMessages: 10})
	must(t, err)
	if len(out.Messages) != 3 {
		t.Errorf("after the peek a consumer receives %d messages, want all 3 back", len(out.Messages))
	}

	// kumo's missing operations: recorded once per region, not every cycle nor per queue.
	errs, err := st.ErrorsSince(ctx, 0, time.Now().Add(-time.Hour))
	must(t, err)
	count := map[string]int{}
	for _, e := range errs {
		count[e.Operation+" "+e.Code]++
	}
	want := map[string]int{
		"ListDeadLetterSourceQueues InvalidAction": 1,
		"ListMessageMoveTasks InvalidAction":       1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("%s recorded %d times, want %d", k, count[k], n)
		}
	}
	if len(errs) != 2 {
		t.Errorf("errors = %v, want only kumo's missing operations", count)
	}
}
