package traffic

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/sqsim"
)

// newSim serves a simulator on the real clock, as the demo does, and returns it with a stock
// SQS client for it.
func newSim(t *testing.T) (*sqsim.Simulator, *sqs.Client) {
	t.Helper()
	sim, clients := newSimClients(t)
	return sim, clients.SQS
}

func queueAttributes(t *testing.T, client *sqs.Client, url string) map[string]string {
	t.Helper()
	out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
	})
	if err != nil {
		t.Fatalf("GetQueueAttributes %s: %v", url, err)
	}
	return out.Attributes
}

func TestSetupCreatesTopology(t *testing.T) {
	t.Parallel()
	_, client := newSim(t)
	first, err := Setup(t.Context(), client)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	// Someone changes a queue by hand; Setup again puts the demo's attributes back.
	web, _ := first.Queue(QueueWebSearch)
	if _, err := client.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(web.URL), Attributes: map[string]string{"VisibilityTimeout": "300"},
	}); err != nil {
		t.Fatal(err)
	}
	topo, err := Setup(t.Context(), client)
	if err != nil {
		t.Fatalf("Setup again: %v", err)
	}
	if len(topo.Queues) != 9 {
		t.Fatalf("%d queues, want 9", len(topo.Queues))
	}

	tests := []struct {
		queue          string
		fifo           bool
		retention      string
		visibility     string
		deadLetter     string
		maxReceive     float64
		contentDedupOn bool
		maxSize        string
	}{
		{queue: QueueToolCalls, fifo: true, retention: "345600", visibility: "2", deadLetter: QueueToolCallsDLQ, maxReceive: 5},
		{queue: QueueToolCallsDLQ, fifo: true, retention: "1209600"},
		{queue: QueueWebSearch, retention: "345600", visibility: "6", deadLetter: QueueWebSearchDLQ, maxReceive: 3},
		{queue: QueueWebSearchDLQ, retention: "1209600"},
		{queue: QueueNotifications, retention: "86400", visibility: "5"},
		{queue: QueueExports, retention: "345600", visibility: "10", deadLetter: QueueExportsDLQ, maxReceive: 3},
		{queue: QueueExportsDLQ, retention: "3600"},
		{queue: QueueToolCallAudit, retention: "86400", visibility: "30", maxSize: "8192"},
		{queue: QueueToolCallAuditDLQ, retention: "1209600"},
	}
	for _, tt := range tests {
		t.Run(tt.queue, func(t *testing.T) {
			q, ok := topo.Queue(tt.queue)
			if !ok {
				t.Fatalf("no queue %s", tt.queue)
			}
			if before, _ := first.Queue(tt.queue); before.URL != q.URL || before.ARN != q.ARN {
				t.Errorf("second Setup changed the queue: %+v then %+v", before, q)
			}
			attrs := queueAttributes(t, client, q.URL)
			if got := attrs["FifoQueue"] == "true"; got != tt.fifo || q.FIFO != tt.fifo {
				t.Errorf("FifoQueue %q, Queue.FIFO %v, want %v", attrs["FifoQueue"], q.FIFO, tt.fifo)
			}
			if tt.fifo && attrs["ContentBasedDeduplication"] != "false" {
				t.Errorf("ContentBasedDeduplication %q, want false", attrs["ContentBasedDeduplication"])
			}
			if attrs["MessageRetentionPeriod"] != tt.retention {
				t.Errorf("MessageRetentionPeriod %s, want %s", attrs["MessageRetentionPeriod"], tt.retention)
			}
			if tt.visibility != "" && attrs["VisibilityTimeout"] != tt.visibility {
				t.Errorf("VisibilityTimeout %s, want %s", attrs["VisibilityTimeout"], tt.visibility)
			}
			if tt.maxSize != "" && attrs["MaximumMessageSize"] != tt.maxSize {
				t.Errorf("MaximumMessageSize %s, want %s", attrs["MaximumMessageSize"], tt.maxSize)
			}
			if attrs["QueueArn"] != q.ARN {
				t.Errorf("QueueArn %s, Queue.ARN %s", attrs["QueueArn"], q.ARN)
			}
			if tt.deadLetter == "" {
				if p := attrs["RedrivePolicy"]; p != "" {
					t.Errorf("RedrivePolicy %s, want none", p)
				}
				return
			}
			var policy struct {
				DeadLetterTargetArn string `json:"deadLetterTargetArn"`
				MaxReceiveCount     any    `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &policy); err != nil {
				t.Fatalf("RedrivePolicy %q: %v", attrs["RedrivePolicy"], err)
			}
			dlq, _ := topo.Queue(tt.deadLetter)
			if policy.DeadLetterTargetArn != dlq.ARN {
				t.Errorf("deadLetterTargetArn %s, want %s", policy.DeadLetterTargetArn, dlq.ARN)
			}
			// SQS may send the count as a number or a string.
			if n, err := json.Marshal(policy.MaxReceiveCount); err != nil || strings.Trim(string(n), `"`) != strconv.Itoa(int(tt.maxReceive)) {
				t.Errorf("maxReceiveCount %v, want %v", policy.MaxReceiveCount, tt.maxReceive)
			}
		})
	}
}

// TestTrafficReachesDeadLetterQueues runs the traffic with one-second visibility timeouts
// until every DLQ holds a poison pill, then checks every message the traffic sent.
func TestTrafficReachesDeadLetterQueues(t *testing.T) {
	t.Parallel()
	sim, client := newSim(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g := New(client, Options{Seed: 1, Rate: 5, VisibilityTimeout: time.Second, WaitTime: time.Second, Logger: testLogger(t)})
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()

	dlqs := []string{QueueToolCallsDLQ, QueueWebSearchDLQ, QueueExportsDLQ}
	sawPile := false
	// Polling waits for the traffic's own visibility timeouts to pass; it drives nothing.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !allHavePoison(sim, dlqs) {
		sawPile = sawPile || blockedGroupPiles(sim)
		select {
		case <-ctx.Done():
			t.Fatalf("DLQs not all filled before the deadline: %v", depths(sim, dlqs))
		case <-tick.C:
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !sawPile {
		t.Error("never saw messages pile up behind the blocked FIFO session's head")
	}

	// The workers of the standard queues wrote why each poison pill was rejected into the call
	// before it went on to the DLQ; the FIFO queue's calls are left as they were sent.
	for _, name := range []string{QueueWebSearchDLQ, QueueExportsDLQ, QueueToolCallsDLQ} {
		msgs, _ := sim.Snapshot(name)
		for _, m := range msgs {
			var call ToolCall
			if json.Unmarshal([]byte(m.Body), &call) != nil {
				continue
			}
			res := simulateAttempt(1, m.MessageAttributes["mcpServer"], call, 1)
			switch {
			case name == QueueToolCallsDLQ && call.Error != nil:
				t.Errorf("%s: FIFO call %s carries an error %+v", name, call.ToolCallID, call.Error)
			case name != QueueToolCallsDLQ && res.Permanent && (call.Error == nil || call.Error.Code != errorCode(res.Err) || call.Error.Message != res.Err.Error()):
				t.Errorf("%s: poison pill %s records %+v; want code %q", name, call.ToolCallID, call.Error, errorCode(res.Err))
			}
		}
	}

	for _, name := range append(dlqs, QueueToolCalls, QueueWebSearch, QueueNotifications, QueueExports) {
		msgs, err := sim.Snapshot(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			checkMessage(t, name, m)
		}
	}
}

// allHavePoison reports whether every queue holds a poison pill: a call that fails on every
// attempt. (A healthy call can land in a DLQ too, after outliving its visibility timeout
// maxReceiveCount times, which is why the test looks for poison.)
func allHavePoison(sim *sqsim.Simulator, queues []string) bool {
	for _, q := range queues {
		msgs, err := sim.Snapshot(q)
		if err != nil {
			return false
		}
		if !slices.ContainsFunc(msgs, func(m sqsim.MessageSnapshot) bool {
			var call ToolCall
			return json.Unmarshal([]byte(m.Body), &call) == nil &&
				simulateAttempt(1, m.MessageAttributes["mcpServer"], call, 1).Permanent
		}) {
			return false
		}
	}
	return true
}

func depths(sim *sqsim.Simulator, queues []string) map[string]int {
	out := map[string]int{}
	for _, q := range queues {
		msgs, _ := sim.Snapshot(q)
		out[q] = len(msgs)
	}
	return out
}

// blockedGroupPiles reports whether the docs-legacy session has a received head and, behind
// it, messages never received: the per-group backlog the dashboard must show.
func blockedGroupPiles(sim *sqsim.Simulator) bool {
	msgs, err := sim.Snapshot(QueueToolCalls)
	if err != nil {
		return false
	}
	var head *sqsim.MessageSnapshot
	waiting := 0
	for i, m := range msgs {
		if m.MessageAttributes["mcpServer"] != serverDocsLegacy {
			continue
		}
		if head == nil {
			head = &msgs[i]
		} else if m.GroupID == head.GroupID && m.ReceiveCount == 0 {
			waiting++
		}
	}
	return head != nil && head.ReceiveCount > 0 && waiting >= 1
}

// checkMessage checks one message as the traffic sent it: a well-formed tool-call body,
// attributes that agree with it, and on FIFO queues the session as group and the tool-call
// id as deduplication id.
func checkMessage(t *testing.T, queue string, m sqsim.MessageSnapshot) {
	t.Helper()
	var call ToolCall
	dec := json.NewDecoder(strings.NewReader(m.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&call); err != nil {
		t.Errorf("%s: body %.80q: %v", queue, m.Body, err)
		return
	}
	if !strings.HasPrefix(call.ToolCallID, "tc_") || call.SessionID == "" || call.SequenceNumber < 1 || call.ToolArgs == nil {
		t.Errorf("%s: malformed call %+v", queue, call)
	}
	if age := time.Since(time.UnixMilli(call.SentAt)); age < 0 || age > time.Minute {
		t.Errorf("%s: sentAt %d is %v ago", queue, call.SentAt, age)
	}
	if _, ok := profiles[call.ToolName]; !ok || m.MessageAttributes["toolName"] != call.ToolName {
		t.Errorf("%s: tool %q, toolName attribute %q", queue, call.ToolName, m.MessageAttributes["toolName"])
	}
	if m.MessageAttributes["mcpServer"] == "" || !strings.HasPrefix(m.MessageAttributes["traceparent"], "00-") {
		t.Errorf("%s: attributes %v", queue, m.MessageAttributes)
	}
	if strings.HasSuffix(queue, ".fifo") && (m.GroupID != call.SessionID || m.DeduplicationID != call.ToolCallID) {
		t.Errorf("%s: group %q dedup %q for session %q call %q", queue, m.GroupID, m.DeduplicationID, call.SessionID, call.ToolCallID)
	}
	if strings.Contains(queue, "-dlq") && m.DeadLetterSourceARN == "" {
		t.Errorf("%s: message %s has no dead-letter source", queue, m.MessageID)
	}
}
