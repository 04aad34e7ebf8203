package sqsim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

func TestFIFOOrderAndGroupLocking(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "calls.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	// Two sessions, interleaved: each must come out in its own order.
	var seqs []string
	for i, group := range []string{"A", "B", "A", "B", "A"} {
		out := h.send(t, url, group+strconv.Itoa(i), inGroup(group, ""))
		seqs = append(seqs, *out.SequenceNumber)
	}
	if !slices.IsSorted(seqs) {
		t.Errorf("sequence numbers not increasing: %v", seqs)
	}
	first := h.receive(t, url, 10)
	// A receive prefers one group: all of A, then B.
	if got := bodies(first); !slices.Equal(got, []string{"A0", "A2", "A4", "B1", "B3"}) {
		t.Fatalf("first receive %v", got)
	}
	for _, m := range first {
		if m.Attributes["MessageGroupId"] == "" || m.Attributes["SequenceNumber"] == "" || m.Attributes["MessageDeduplicationId"] == "" {
			t.Errorf("missing FIFO attributes: %v", m.Attributes)
		}
	}
	// Everything is in flight: both groups are locked.
	if got := h.receive(t, url, 10); len(got) != 0 {
		t.Fatalf("locked groups yielded %v", bodies(got))
	}
	// Deleting A0 leaves A2 in flight: A stays locked. Releasing B1 and
	// B3 unlocks B, in order.
	h.delete(t, url, first[0])
	h.release(t, url, first[3:])
	b1 := h.receive(t, url, 1)
	if got := bodies(b1); !slices.Equal(got, []string{"B1"}) {
		t.Fatalf("after release got %v, want B1", got)
	}
	if got := h.receive(t, url, 10); len(got) != 0 {
		t.Fatalf("B locked by B1 yielded %v", bodies(got))
	}
	h.delete(t, url, b1[0])
	// When the visibility timeout ends, A resumes at A2.
	h.advance(30 * time.Second)
	if got := bodies(h.receive(t, url, 2)); !slices.Equal(got, []string{"A2", "A4"}) {
		t.Fatalf("after the timeout got %v, want A2 A4", got)
	}
}

func TestFIFODeduplication(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		attrs map[string]string
		sends []struct{ group, dedup, body string }
		want  int // messages in the queue
	}{
		{
			name:  "explicit id, queue scope",
			attrs: map[string]string{},
			sends: []struct{ group, dedup, body string }{{"A", "tc_1", "x"}, {"B", "tc_1", "y"}},
			want:  1,
		},
		{
			name:  "explicit id, group scope",
			attrs: map[string]string{"DeduplicationScope": "messageGroup"},
			sends: []struct{ group, dedup, body string }{{"A", "tc_1", "x"}, {"B", "tc_1", "y"}, {"A", "tc_1", "z"}},
			want:  2,
		},
		{
			name:  "content based, queue scope",
			attrs: map[string]string{"ContentBasedDeduplication": "true"},
			sends: []struct{ group, dedup, body string }{{"A", "", "same"}, {"B", "", "same"}, {"A", "", "other"}},
			want:  2,
		},
		{
			name:  "content based, group scope",
			attrs: map[string]string{"ContentBasedDeduplication": "true", "DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"},
			sends: []struct{ group, dedup, body string }{{"A", "", "same"}, {"B", "", "same"}, {"A", "", "same"}},
			want:  2,
		},
		{
			name:  "explicit id wins over content",
			attrs: map[string]string{"ContentBasedDeduplication": "true"},
			sends: []struct{ group, dedup, body string }{{"A", "id1", "same"}, {"A", "id2", "same"}},
			want:  2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			attrs := map[string]string{"FifoQueue": "true"}
			for k, v := range tt.attrs {
				attrs[k] = v
			}
			url := h.createQueue(t, "q.fifo", attrs)
			for _, s := range tt.sends {
				h.send(t, url, s.body, inGroup(s.group, s.dedup))
			}
			snap, _ := h.sim.Snapshot("q.fifo")
			if len(snap) != tt.want {
				t.Fatalf("queue holds %d messages, want %d", len(snap), tt.want)
			}
		})
	}
}

func TestFIFODeduplicationWindow(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	first := h.send(t, url, "x", inGroup("A", "tc_1"))
	h.advance(4 * time.Minute)
	again := h.send(t, url, "x", inGroup("A", "tc_1"))
	if *again.MessageId != *first.MessageId {
		t.Errorf("deduplicated send answered %s, want the original %s", *again.MessageId, *first.MessageId)
	}
	h.advance(time.Minute)
	later := h.send(t, url, "x", inGroup("A", "tc_1"))
	if *later.MessageId == *first.MessageId {
		t.Error("a send after the 5-minute window was deduplicated")
	}
	if snap, _ := h.sim.Snapshot("q.fifo"); len(snap) != 2 {
		t.Errorf("queue holds %d messages, want 2", len(snap))
	}
}

func TestFIFOSendErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	tests := []struct {
		name string
		in   sqs.SendMessageInput
		code string
	}{
		{name: "no group", in: sqs.SendMessageInput{MessageDeduplicationId: aws.String("d")}, code: "MissingParameter"},
		{name: "no dedup id without content dedup", in: sqs.SendMessageInput{MessageGroupId: aws.String("g")}, code: "InvalidParameterValue"},
		{name: "per-message delay", in: sqs.SendMessageInput{MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String("d"), DelaySeconds: 5}, code: "InvalidParameterValue"},
		{name: "group id with a space", in: sqs.SendMessageInput{MessageGroupId: aws.String("g 1"), MessageDeduplicationId: aws.String("d")}, code: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.QueueUrl, in.MessageBody = aws.String(url), aws.String("x")
			_, err := h.sqs.SendMessage(context.Background(), &in)
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
	if snap, _ := h.sim.Snapshot("q.fifo"); len(snap) != 0 {
		t.Errorf("failed sends left %d messages", len(snap))
	}
	std := h.createQueue(t, "std", nil)
	_, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(std), MessageBody: aws.String("x"), MessageDeduplicationId: aws.String("d")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("dedup id on a standard queue: %v", err)
	}
}

// TestFIFOZeroDelay: a FIFO queue takes DelaySeconds 0 on a send and on a
// batch entry, as SQS does, and refuses only a positive per-message delay.
// Worker wrappers that always pass a delay (DelaySeconds: opts.delay ?? 0)
// depend on it. The Go SDK omits a zero, so the requests are written out.
func TestFIFOZeroDelay(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	status, _, body := h.sqsCall(t, "SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"one","MessageGroupId":"g","DelaySeconds":0}`)
	if status != http.StatusOK {
		t.Errorf("SendMessage with DelaySeconds 0: %d %s", status, body)
	}
	status, _, body = h.sqsCall(t, "SendMessageBatch", `{"QueueUrl":"`+url+`","Entries":[`+
		`{"Id":"zero","MessageBody":"two","MessageGroupId":"g","DelaySeconds":0},`+
		`{"Id":"five","MessageBody":"three","MessageGroupId":"g","DelaySeconds":5}]}`)
	var out struct {
		Successful []struct{ Id string }
		Failed     []struct{ Id, Code, Message string }
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &out) != nil {
		t.Fatalf("SendMessageBatch: %d %s", status, body)
	}
	if len(out.Successful) != 1 || out.Successful[0].Id != "zero" {
		t.Errorf("successful entries %+v, want the one with DelaySeconds 0", out.Successful)
	}
	want := "Value 5 for parameter DelaySeconds is invalid. Reason: The request include parameter that is not valid for this queue type."
	if len(out.Failed) != 1 || out.Failed[0].Id != "five" || out.Failed[0].Code != "InvalidParameterValue" || out.Failed[0].Message != want {
		t.Errorf("failed entries %+v, want five refused with %q", out.Failed, want)
	}
	if got := bodies(h.receive(t, url, 10)); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("received %q, want one and two at once", got)
	}
}
