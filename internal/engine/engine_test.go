package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// call is one tool call the tests put in a dead-letter queue.
type call struct {
	id, tool, server, group string
}

// failedCalls are the demo's story in small: fetch_url calls that failed while the crawler was
// down, web_search calls docs-legacy rejects, a read_file call that will never succeed.
var failedCalls = []call{
	{"tc_01", "fetch_url", "crawler", "sess_a"},
	{"tc_02", "web_search", "docs-legacy", "sess_a"},
	{"tc_03", "fetch_url", "crawler", "sess_b"},
	{"tc_04", "read_file", "research", "sess_b"},
	{"tc_05", "web_search", "docs-legacy", "sess_c"},
	{"tc_06", "fetch_url", "crawler", "sess_c"},
	{"tc_07", "web_search", "research", "sess_c"},
}

// world is a simulator with a source queue and its dead-letter queue, both watched, and an
// engine over them.
type world struct {
	*actionstest.World
	source, dlq string
	engine      *engine.Engine
}

func newWorld(t *testing.T, fifo bool) *world {
	t.Helper()
	w := &world{World: actionstest.New(t), source: "tool-calls", dlq: "tool-calls-dlq"}
	if fifo {
		w.source, w.dlq = "sessions.fifo", "sessions-dlq.fifo"
	}
	w.CreateQueue(t, w.dlq, "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.CreateQueue(t, w.source, w.dlq, nil)
	w.Watch(t, w.source, w.dlq)
	coll, err := collector.New(collector.Options{
		Regions:    []collector.Region{{Name: actionstest.Region, SQS: w.SQS}},
		Store:      w.Store,
		Dimensions: []collector.Dimension{{Name: "mcpServer", Source: collector.FromAttribute, Path: "mcpServer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	w.engine = engine.New(engine.Options{
		Clients: map[string]engine.SQSAPI{actionstest.Region: w.SQS},
		Store:   w.Store, Read: coll.ReadMessage, Poll: 20 * time.Millisecond, Now: w.Now,
	})
	return w
}

// fail puts the calls in the dead-letter queue through the source (maxReceiveCount 1), each with
// a string, a number and a binary attribute and a trace header, as an MCP server sends them.
func (w *world) fail(t *testing.T, calls []call) {
	t.Helper()
	ctx := context.Background()
	src := w.url(t, w.source)
	for i, c := range calls {
		in := &sqs.SendMessageInput{
			QueueUrl:    aws.String(src),
			MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":%q,"toolName":%q,"sessionId":%q,"sequenceNumber":%d}`, c.id, c.tool, c.group, i)),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(c.server)},
				"attempt":   {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(i + 1))},
				"blob":      {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, byte(i), 0xff}},
			},
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String("Root=1-5759e988-bd862e3fe1be46a99427" + fmt.Sprintf("%04d", i))},
			},
		}
		if w.fifo() {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(c.group), aws.String(c.id)
		}
		if _, err := w.SQS.SendMessage(ctx, in); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	for round := 0; w.Count(t, w.source) > 0; round++ {
		if round > 10*len(calls) {
			t.Fatal("the calls did not reach the dead-letter queue")
		}
		if _, err := w.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 1}); err != nil {
			t.Fatal(err)
		}
		w.Advance(2 * time.Second)
	}
}

func (w *world) fifo() bool { return w.dlq == "sessions-dlq.fifo" }

func (w *world) url(t *testing.T, name string) string {
	t.Helper()
	out, err := w.SQS.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// receiveAll takes every visible message of a queue, in order, with every attribute.
func (w *world) receiveAll(t *testing.T, name string) []types.Message {
	t.Helper()
	var out []types.Message
	for {
		got, err := w.SQS.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.url(t, name)), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		out = append(out, got.Messages...)
	}
}

// start creates a job as the actions do, and runs the engine until it ends.
func (w *world) run(t *testing.T, sel engine.Selection, prepare func(job store.SelectionJob)) store.SelectionJob {
	t.Helper()
	ctx := context.Background()
	q, err := w.Store.ResolveQueue(ctx, w.dlq)
	if err != nil {
		t.Fatal(err)
	}
	job, err := w.Store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask:  store.MoveTask{QueueID: q.ID, SourceARN: q.ARN, StartedAt: w.Now()},
		Selection: sel.JSON(), Actor: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(job)
	}
	return w.runUntilEnd(t, job.ID)
}

func (w *world) runUntilEnd(t *testing.T, id int64) store.SelectionJob {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.engine.Run(ctx) }()
	defer func() { cancel(); <-done }()
	deadline := time.After(60 * time.Second)
	for {
		j, err := w.Store.GetSelectionJob(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Running() {
			return j
		}
		select {
		case <-deadline:
			t.Fatalf("the job is still %s: %+v", j.Status, j)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func toolCallIDs(t *testing.T, msgs []types.Message) []string {
	t.Helper()
	var ids []string
	for _, m := range msgs {
		var id string
		fmt.Sscanf(aws.ToString(m.Body), `{"toolCallId":%q`, &id)
		ids = append(ids, id)
	}
	return ids
}

func TestSelectionMovesExactlyWhatItNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sel  func(w *world) engine.Selection
		want []string // the tool call ids moved, in order
	}{
		{"by tool", func(*world) engine.Selection { return engine.Selection{Tools: []string{"fetch_url"}} }, []string{"tc_01", "tc_03", "tc_06"}},
		{"by dimension", func(*world) engine.Selection {
			return engine.Selection{Dimensions: map[string][]string{"mcpServer": {"research"}}}
		}, []string{"tc_04", "tc_07"}},
		{"by tool and dimension", func(*world) engine.Selection {
			return engine.Selection{Tools: []string{"web_search"}, Dimensions: map[string][]string{"mcpServer": {"docs-legacy"}}}
		}, []string{"tc_02", "tc_05"}},
		{"by search, ignoring case", func(*world) engine.Selection { return engine.Selection{Q: "READ_FILE"} }, []string{"tc_04"}},
		{"by message ids", func(w *world) engine.Selection {
			var ids []string
			for _, s := range w.sampleDLQ(t) {
				if s.ToolCallID == "tc_02" || s.ToolCallID == "tc_07" {
					ids = append(ids, s.MessageID)
				}
			}
			return engine.Selection{MessageIDs: ids}
		}, []string{"tc_02", "tc_07"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, false)
			w.fail(t, failedCalls)
			before := w.inDLQ(t)
			sel := tt.sel(w)
			job := w.run(t, sel, nil)

			if job.Status != store.MoveTaskCompleted || job.FailureReason != "" {
				t.Fatalf("job = %s %q; want COMPLETED", job.Status, job.FailureReason)
			}
			moved := w.receiveAll(t, w.source)
			if got := toolCallIDs(t, moved); !sameSet(got, tt.want) {
				t.Errorf("moved %v; want %v", got, tt.want)
			}
			for _, m := range moved {
				w.checkWhole(t, before, m)
			}
			left := w.receiveAll(t, w.dlq)
			if got, want := len(left), len(failedCalls)-len(tt.want); got != want {
				t.Errorf("%d messages visible in the DLQ after the job; want %d (the others, released)", got, want)
			}
			n := int64(len(tt.want))
			if job.Matched != n || job.Moved != n || job.Held != int64(len(failedCalls))-n || job.Released != job.Held || job.Failed != 0 {
				t.Errorf("counts matched %d moved %d held %d released %d failed %d; want %d moved of %d", job.Matched, job.Moved, job.Held, job.Released, job.Failed, n, len(failedCalls))
			}
		})
	}
}

// inDLQ reads the dead-letter queue's messages without receiving them, by tool call id.
func (w *world) inDLQ(t *testing.T) map[string]types.Message {
	t.Helper()
	msgs := w.receiveAll(t, w.dlq)
	out := map[string]types.Message{}
	for i, m := range msgs {
		out[toolCallIDs(t, msgs[i:i+1])[0]] = m
	}
	// What the test read becomes visible again, as it was.
	w.Advance(601 * time.Second)
	return out
}

// sampleDLQ reads the dead-letter queue as the collector does, and makes it visible again.
func (w *world) sampleDLQ(t *testing.T) []store.SampledMessage {
	t.Helper()
	var out []store.SampledMessage
	for _, m := range w.receiveAll(t, w.dlq) {
		var id string
		fmt.Sscanf(aws.ToString(m.Body), `{"toolCallId":%q`, &id)
		out = append(out, store.SampledMessage{MessageID: aws.ToString(m.MessageId), ToolCallID: id})
	}
	w.Advance(601 * time.Second)
	return out
}

// checkWhole compares a moved message with what it was in the dead-letter queue: its body, every
// message attribute (binary byte for byte) and its trace header; on FIFO its group.
func (w *world) checkWhole(t *testing.T, before map[string]types.Message, m types.Message) {
	t.Helper()
	id := toolCallIDs(t, []types.Message{m})[0]
	was, ok := before[id]
	if !ok {
		t.Errorf("%s: not in the dead-letter queue before", id)
		return
	}
	if aws.ToString(m.Body) != aws.ToString(was.Body) {
		t.Errorf("%s: body %q; was %q", id, aws.ToString(m.Body), aws.ToString(was.Body))
	}
	if !slices.Equal(slices.Sorted(maps.Keys(m.MessageAttributes)), slices.Sorted(maps.Keys(was.MessageAttributes))) {
		t.Errorf("%s: attributes %v; were %v", id, slices.Sorted(maps.Keys(m.MessageAttributes)), slices.Sorted(maps.Keys(was.MessageAttributes)))
	}
	for name, v := range was.MessageAttributes {
		got := m.MessageAttributes[name]
		if aws.ToString(got.DataType) != aws.ToString(v.DataType) || aws.ToString(got.StringValue) != aws.ToString(v.StringValue) || !bytes.Equal(got.BinaryValue, v.BinaryValue) {
			t.Errorf("%s: attribute %s = %+v; was %+v", id, name, got, v)
		}
	}
	for _, sys := range []string{"AWSTraceHeader", "MessageGroupId"} {
		if m.Attributes[sys] != was.Attributes[sys] {
			t.Errorf("%s: %s %q; was %q", id, sys, m.Attributes[sys], was.Attributes[sys])
		}
	}
	if aws.ToString(m.MessageId) == aws.ToString(was.MessageId) {
		t.Errorf("%s: the moved copy has the DLQ message's id; SQS gives a sent message a new one", id)
	}
}

func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

func TestFIFOSelectionMovesWholeGroupsInOrder(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true)
	w.fail(t, failedCalls)
	before := w.inDLQ(t)
	// read_file is in sess_b only: the whole session moves, fetch_url first as it was sent.
	job := w.run(t, engine.Selection{Tools: []string{"read_file"}}, nil)
	if job.Status != store.MoveTaskCompleted {
		t.Fatalf("job = %s %q; want COMPLETED", job.Status, job.FailureReason)
	}
	moved := w.receiveAll(t, w.source)
	if got, want := toolCallIDs(t, moved), []string{"tc_03", "tc_04"}; !slices.Equal(got, want) {
		t.Errorf("moved %v; want the whole of sess_b in order, %v", got, want)
	}
	for _, m := range moved {
		w.checkWhole(t, before, m)
	}
	if got := toolCallIDs(t, w.receiveAll(t, w.dlq)); !sameSet(got, []string{"tc_01", "tc_02", "tc_05", "tc_06", "tc_07"}) {
		t.Errorf("left in the DLQ: %v; want sess_a and sess_c", got)
	}
	// By group: sess_c, three calls, in order, once what the test read is visible again.
	w.Advance(601 * time.Second)
	job = w.run(t, engine.Selection{Groups: []string{"sess_c"}}, nil)
	if got, want := toolCallIDs(t, w.receiveAll(t, w.source)), []string{"tc_05", "tc_06", "tc_07"}; !slices.Equal(got, want) || job.Moved != 3 {
		t.Errorf("moved %v (%d); want %v", got, job.Moved, want)
	}
}

// TestResumeTakesEachStepOnce plays a job that stopped (kill -9) after it journaled one message
// sent and another sending, the second already sent to SQS: the resumed job deletes the first
// without sending it again, and sends the second again with the same deduplication id, which the
// FIFO destination drops. Each selected message ends up in exactly one place.
func TestResumeTakesEachStepOnce(t *testing.T) {
	t.Parallel()
	w := newWorld(t, true)
	w.fail(t, failedCalls)
	dlq := w.inDLQ(t)
	sent, sending := dlq["tc_03"], dlq["tc_04"]
	job := w.run(t, engine.Selection{Groups: []string{"sess_b"}}, func(job store.SelectionJob) {
		ctx := context.Background()
		// What the killed process did: sent both (tc_04's answer never journaled), then died.
		for _, m := range []types.Message{sent, sending} {
			if _, err := w.SQS.SendMessage(ctx, &sqs.SendMessageInput{
				QueueUrl: aws.String(w.url(t, w.source)), MessageBody: m.Body, MessageAttributes: m.MessageAttributes,
				MessageGroupId:         aws.String(m.Attributes["MessageGroupId"]),
				MessageDeduplicationId: aws.String(engine.DeduplicationID(job.ID, aws.ToString(m.MessageId))),
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Store.WriteJournal(ctx, job.ID, []store.JournalEntry{
			{MessageID: aws.ToString(sent.MessageId), State: store.JournalSent, DestinationARN: w.ARN(w.source), GroupID: "sess_b", UpdatedAt: w.Now()},
			{MessageID: aws.ToString(sending.MessageId), State: store.JournalSending, DestinationARN: w.ARN(w.source), GroupID: "sess_b", UpdatedAt: w.Now()},
		}); err != nil {
			t.Fatal(err)
		}
	})
	if job.Status != store.MoveTaskCompleted {
		t.Fatalf("job = %s %q", job.Status, job.FailureReason)
	}
	if got, want := toolCallIDs(t, w.receiveAll(t, w.source)), []string{"tc_03", "tc_04"}; !slices.Equal(got, want) {
		t.Errorf("the source holds %v; want each of sess_b once, in order: %v", got, want)
	}
	if got := toolCallIDs(t, w.receiveAll(t, w.dlq)); slices.Contains(got, "tc_03") || slices.Contains(got, "tc_04") || len(got) != 5 {
		t.Errorf("the DLQ holds %v; want the 5 calls of the other sessions", got)
	}
}

func TestCancelReleasesWhatTheJobHolds(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false)
	w.fail(t, failedCalls)
	ctx := context.Background()
	// A job cancelled before it ran: it moves nothing and ends CANCELLED.
	job := w.run(t, engine.Selection{Tools: []string{"fetch_url"}}, func(job store.SelectionJob) {
		if ok, err := w.Store.CancelSelectionJob(ctx, job.ID, w.Now()); !ok || err != nil {
			t.Fatalf("CancelSelectionJob = %v, %v", ok, err)
		}
	})
	if job.Status != store.MoveTaskCancelled || job.Moved != 0 {
		t.Errorf("job = %s, %d moved; want CANCELLED, none", job.Status, job.Moved)
	}
	if n := len(w.receiveAll(t, w.dlq)); n != len(failedCalls) {
		t.Errorf("%d visible in the DLQ; want all %d", n, len(failedCalls))
	}
}

func TestSelectionChecks(t *testing.T) {
	t.Parallel()
	dims := []string{"mcpServer", "error"}
	tests := []struct {
		name string
		sel  engine.Selection
		fifo bool
		code string
	}{
		{"empty", engine.Selection{}, false, "empty_selection"},
		{"empty values", engine.Selection{Dimensions: map[string][]string{"mcpServer": {}}}, false, "empty_selection"},
		{"unknown dimension", engine.Selection{Dimensions: map[string][]string{"region": {"x"}}}, false, "unknown_dimension"},
		{"groups on standard", engine.Selection{Groups: []string{"sess_a"}}, false, "groups_on_standard_queue"},
		{"groups on FIFO", engine.Selection{Groups: []string{"sess_a"}}, true, ""},
		{"too many", engine.Selection{MessageIDs: make([]string, engine.MaxSelectionValues+1)}, false, "selection_too_large"},
		{"a tool", engine.Selection{Tools: []string{"web_search"}}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.sel.Check(dims, tt.fifo)
			switch {
			case tt.code == "" && err != nil:
				t.Errorf("Check = %v; want nil", err)
			case tt.code != "" && (err == nil || err.Code != tt.code):
				t.Errorf("Check = %v; want %s", err, tt.code)
			}
		})
	}
}

// TestDeniedSendStopsTheJob: a principal without sqs:SendMessage on the destination stops the
// job at its first send, which names the permission; every message is back in the DLQ, visible,
// and none reached the source.
func TestDeniedSendStopsTheJob(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false)
	w.fail(t, failedCalls)
	w.Sim.SetFault("SendMessageBatch", sqsim.Fault{Deny: true})
	job := w.run(t, engine.Selection{Tools: []string{"fetch_url"}}, nil)
	if job.Status != store.MoveTaskFailed || job.Moved != 0 || !strings.Contains(job.FailureReason, "sqs:SendMessage") {
		t.Errorf("job = %s, %d moved, %q; want FAILED naming sqs:SendMessage", job.Status, job.Moved, job.FailureReason)
	}
	if n := len(w.receiveAll(t, w.dlq)); n != len(failedCalls) {
		t.Errorf("%d visible in the DLQ; want all %d", n, len(failedCalls))
	}
	if n := w.Count(t, w.source); n != 0 {
		t.Errorf("the source holds %d; want none", n)
	}
}
