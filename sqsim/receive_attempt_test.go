package sqsim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// TestReceiveRequestAttemptID checks AWS's rule for retried FIFO receives:
// within five minutes, the same attempt id gets the same messages and
// receipt handles, unless one of them was deleted or had its visibility
// changed, in which case the receive is a new one.
func TestReceiveRequestAttemptID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type step func(h *harness, url string, first []types.Message)
	tests := []struct {
		name string
		// between runs after the first receive, before the retry.
		between step
		// wantSame says the retry returns the first receive's messages
		// and handles; otherwise wantBodies is what it returns.
		wantSame   bool
		wantBodies []string
	}{
		{name: "immediate retry", between: func(*harness, string, []types.Message) {}, wantSame: true},
		{name: "retry after the visibility timeout", between: func(h *harness, _ string, _ []types.Message) { h.advance(3 * time.Minute) }, wantSame: true},
		{name: "retry after five minutes", between: func(h *harness, _ string, _ []types.Message) { h.advance(5*time.Minute + time.Second) },
			wantBodies: []string{"a1", "a2"}},
		{name: "a message deleted", between: func(h *harness, url string, first []types.Message) { h.delete(t, url, first[0]) },
			wantBodies: nil}, // a2 is still in flight: the group stays locked
		{name: "visibility changed", between: func(h *harness, url string, first []types.Message) {
			for _, m := range first {
				if _, err := h.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
					t.Fatal(err)
				}
			}
		}, wantBodies: []string{"a1", "a2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			url := h.createQueue(t, "calls.fifo", map[string]string{"FifoQueue": "true", "VisibilityTimeout": "120"})
			h.send(t, url, "a1", inGroup("sess-a", "1"))
			h.send(t, url, "a2", inGroup("sess-a", "2"))
			receive := func() []types.Message {
				out, err := h.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
					QueueUrl: aws.String(url), MaxNumberOfMessages: 10, ReceiveRequestAttemptId: aws.String("attempt-1"),
					MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount},
				})
				if err != nil {
					t.Fatal(err)
				}
				return out.Messages
			}
			first := receive()
			if !slices.Equal(bodies(first), []string{"a1", "a2"}) {
				t.Fatalf("first receive %v", bodies(first))
			}
			tt.between(h, url, first)
			again := receive()
			if !tt.wantSame {
				if !slices.Equal(bodies(again), tt.wantBodies) {
					t.Errorf("retry got %v, want %v", bodies(again), tt.wantBodies)
				}
				return
			}
			if len(again) != len(first) {
				t.Fatalf("retry got %v, want the first receive's %v", bodies(again), bodies(first))
			}
			for i := range first {
				if aws.ToString(again[i].MessageId) != aws.ToString(first[i].MessageId) || aws.ToString(again[i].ReceiptHandle) != aws.ToString(first[i].ReceiptHandle) {
					t.Errorf("message %d: retry gave %s/%s, want %s/%s", i, aws.ToString(again[i].MessageId), aws.ToString(again[i].ReceiptHandle),
						aws.ToString(first[i].MessageId), aws.ToString(first[i].ReceiptHandle))
				}
				if again[i].Attributes["ApproximateReceiveCount"] != "1" {
					t.Errorf("message %d: receive count %s after a retry, want 1", i, again[i].Attributes["ApproximateReceiveCount"])
				}
			}
			// The retry started the visibility timeout afresh, and the
			// handles it returned still delete.
			h.advance(time.Minute + 30*time.Second)
			if got := h.receive(t, url, 10); len(got) != 0 {
				t.Errorf("messages visible %v before the renewed timeout ended", bodies(got))
			}
			for _, m := range again {
				h.delete(t, url, m)
			}
			if snap, _ := h.sim.Snapshot("calls.fifo"); len(snap) != 0 {
				t.Errorf("%d messages left after deleting with the retry's handles", len(snap))
			}
		})
	}
}

// TestReceiveRequestAttemptIDOnStandardQueue checks that a standard queue
// ignores the attempt id, as SQS documents.
func TestReceiveRequestAttemptIDOnStandardQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "calls", nil)
	h.send(t, url, "one")
	h.send(t, url, "two")
	var got []string
	for range 2 {
		out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), ReceiveRequestAttemptId: aws.String("same")})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, bodies(out.Messages)...)
	}
	if !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("got %v, want two distinct receives", got)
	}
}
