package engine_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
)

// startMoto starts moto's server (a Python AWS emulator nobody here wrote) on a free loopback
// port for the test and returns its URL. Without python3 or moto it skips, except under CI=true,
// where .ci/run has installed them and their absence is a failure.
func startMoto(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto is required under CI: %s", why)
		}
		t.Skipf("moto server unavailable (%s): install it with `pip install 'moto[server]'` or run .ci/run", why)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		missing("no python3 on PATH")
	}
	if out, err := exec.Command(python, "-c", "import moto.server").CombinedOutput(); err != nil {
		missing("python3 cannot import moto.server: " + string(out))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatalf("start moto: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url + "/moto-api/")
		if err == nil {
			res.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto did not answer within 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// motoWorld is a source queue and its dead-letter queue on moto, the store the collector filled
// from it, and an engine over them. moto keeps real time: its visibility timeouts end on the
// wall clock, so the engine runs on it too.
type motoWorld struct {
	sqs               *sqs.Client
	store             *store.Store
	engine            *engine.Engine
	source, dlq       string // names
	sourceURL, dlqURL string
	sourceARN         string
	fifo              bool
}

func newMotoWorld(t *testing.T, endpoint, source, dlq string) *motoWorld {
	t.Helper()
	ctx := context.Background()
	clients, err := awsconf.Load(ctx, awsconf.Options{Region: "us-east-1", EndpointURL: endpoint, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := &motoWorld{sqs: clients.ActionsSQS, source: source, dlq: dlq, fifo: strings.HasSuffix(dlq, ".fifo")}
	create := func(name string, attrs map[string]string) (string, string) {
		if w.fifo {
			attrs["FifoQueue"] = "true"
		}
		out, err := w.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatalf("CreateQueue(%s): %v", name, err)
		}
		a, err := w.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
	}
	var dlqARN string
	w.dlqURL, dlqARN = create(dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	w.sourceURL, w.sourceARN = create(source, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqARN),
	})

	// The store is filled by the collector's own discovery and attribute passes, as in
	// production; it never receives from these queues (no peeks are run).
	w.store = storetest.Open(t)
	coll, err := collector.New(collector.Options{
		Regions:    []collector.Region{{Name: "us-east-1", SQS: clients.SQS}},
		Store:      w.store,
		Dimensions: []collector.Dimension{{Name: "mcpServer", Source: collector.FromAttribute, Path: "mcpServer"}},
		Backfill:   -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := coll.Discover(ctx); err != nil {
		t.Fatalf("Discover: %v", err)
	}
	if err := coll.CycleAttributes(ctx); err != nil {
		t.Fatalf("CycleAttributes: %v", err)
	}
	// One worker: moto's queues are not safe under concurrent receives. Two receives at once
	// can each return a message of the same FIFO group (its pending groups are read before
	// either marks its messages), and under load a job's released messages were found still in
	// flight; neither is what SQS does, and neither is what this test is about.
	w.engine = engine.New(engine.Options{
		Clients: map[string]engine.SQSAPI{"us-east-1": w.sqs},
		Store:   w.store, Read: coll.ReadMessage, Poll: 20 * time.Millisecond, Workers: 1,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	return w
}

// motoTrace is the trace header the test gives the i-th call.
func motoTrace(i int) string { return fmt.Sprintf("Root=1-5759e988-bd862e3fe1be46a99427%04d", i) }

// motoAttributes are the message attributes the test gives the i-th call: a string, a number and
// a binary one whose bytes include a zero and 0xff.
func motoAttributes(i int, c call) map[string]types.MessageAttributeValue {
	return map[string]types.MessageAttributeValue{
		"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(c.server)},
		"attempt":   {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(i + 1))},
		"blob":      {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, byte(i), 0xff}},
	}
}

func motoBody(i int, c call) string {
	return fmt.Sprintf(`{"toolCallId":%q,"toolName":%q,"sessionId":%q,"sequenceNumber":%d}`, c.id, c.tool, c.group, i)
}

// fail sends the calls to the source and receives them there until moto moves them to the
// dead-letter queue (maxReceiveCount 1): a receive takes a call with a one-second hold, and a
// later receive that finds it visible again moves it instead of returning it. moto's own long
// poll (WaitTimeSeconds) lets the time pass; the receives are bounded.
//
// The receives take one message each: when several messages of a FIFO group are in flight
// together, moto 5.2 moves the group's last one to the dead-letter queue first (it skips a
// message while any other of its group is still pending), and the DLQ would hold the session
// out of order before the job ran.
func (w *motoWorld) fail(t *testing.T, calls []call) {
	t.Helper()
	ctx := context.Background()
	for i, c := range calls {
		in := &sqs.SendMessageInput{
			QueueUrl: aws.String(w.sourceURL), MessageBody: aws.String(motoBody(i, c)), MessageAttributes: motoAttributes(i, c),
			MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
				"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(motoTrace(i))},
			},
		}
		if w.fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(c.group), aws.String(c.id)
		}
		if _, err := w.sqs.SendMessage(ctx, in); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	for receives := 0; ; receives++ {
		visible, inFlight := w.depth(t, w.sourceURL)
		if visible+inFlight == 0 {
			break
		}
		if receives == 4*len(calls)+4 {
			t.Fatalf("after %d receives %d calls are still in the source, not in its dead-letter queue", receives, visible+inFlight)
		}
		if _, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.sourceURL), MaxNumberOfMessages: 1, VisibilityTimeout: 1, WaitTimeSeconds: 2,
		}); err != nil {
			t.Fatal(err)
		}
	}
	if visible, inFlight := w.depth(t, w.dlqURL); visible != len(calls) || inFlight != 0 {
		t.Fatalf("the dead-letter queue holds %d visible and %d in flight; want the %d calls visible", visible, inFlight, len(calls))
	}
}

// depth reads a queue's visible and in-flight counts without receiving.
func (w *motoWorld) depth(t *testing.T, url string) (visible, inFlight int) {
	t.Helper()
	out, err := w.sqs.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	inFlight, _ = strconv.Atoi(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, inFlight
}

// receiveAll takes every visible message of a queue, in order, with every attribute, and holds
// them: call it last.
func (w *motoWorld) receiveAll(t *testing.T, url string) []types.Message {
	t.Helper()
	var out []types.Message
	for {
		got, err := w.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 600,
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

// peekSystemAttributes receives one dead-lettered message with every system attribute and
// makes it visible again at once: what moto tells a receiver of its dead-letter queue.
func (w *motoWorld) peekSystemAttributes(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	got, err := w.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(w.dlqURL), MaxNumberOfMessages: 1, VisibilityTimeout: 30,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("ReceiveMessage(%s) = %v, %v; want one message", w.dlq, got, err)
	}
	m := got.Messages[0]
	if _, err := w.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(w.dlqURL), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0,
	}); err != nil {
		t.Fatal(err)
	}
	return m.Attributes
}

// batchKeepsTraceHeader reports whether moto keeps an AWSTraceHeader given to an entry of
// SendMessageBatch, on a scratch queue of its own: the engine sends in batches.
func batchKeepsTraceHeader(t *testing.T, c *sqs.Client, name string) bool {
	t.Helper()
	ctx := context.Background()
	attrs := map[string]string{}
	if strings.HasSuffix(name, ".fifo") {
		attrs["FifoQueue"] = "true"
	}
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	e := types.SendMessageBatchRequestEntry{
		Id: aws.String("0"), MessageBody: aws.String("{}"),
		MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(motoTrace(0))},
		},
	}
	if len(attrs) > 0 {
		e.MessageGroupId, e.MessageDeduplicationId = aws.String("g"), aws.String("d")
	}
	if _, err := c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: []types.SendMessageBatchRequestEntry{e}}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: q.QueueUrl, MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAWSTraceHeader},
	})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("ReceiveMessage(%s) = %v, %v", name, got, err)
	}
	return got.Messages[0].Attributes["AWSTraceHeader"] == motoTrace(0)
}

// run creates a selection job as the actions do and runs the engine until the job ends.
func (w *motoWorld) run(t *testing.T, sel engine.Selection, destination string) store.SelectionJob {
	t.Helper()
	return w.runKind(t, store.KindSelection, sel, destination)
}

// runKind creates a job of a kind (selection, discard, restore) and runs it to its end.
func (w *motoWorld) runKind(t *testing.T, kind string, sel engine.Selection, destination string) store.SelectionJob {
	t.Helper()
	ctx := context.Background()
	q, err := w.store.ResolveQueue(ctx, w.dlq)
	if err != nil {
		t.Fatal(err)
	}
	job, err := w.store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask:  store.MoveTask{QueueID: q.ID, SourceARN: q.ARN, DestinationARN: destination, StartedAt: time.Now(), Kind: kind},
		Selection: sel.JSON(), Actor: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = w.engine.Run(run) }()
	defer func() { stop(); <-done }()
	deadline := time.After(60 * time.Second)
	for {
		j, err := w.store.GetSelectionJob(ctx, job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !j.Running() {
			return j
		}
		select {
		case <-deadline:
			t.Fatalf("the job is still %s after 60 s: %+v", j.Status, j)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSelectionAgainstMoto runs selection jobs on moto's SQS, a peer nobody here wrote: calls
// dead-lettered by moto's own redrive policy, a job that selects by tool, and what each queue
// holds afterwards, on a standard and a FIFO pair.
//
// moto 5.2 differs from SQS in two ways the test checks rather than assumes:
//   - a received dead-lettered message carries no DeadLetterQueueSourceArn, so a job without a
//     destination has nowhere to send: the test runs one and expects every match journaled
//     failed and left in the DLQ, then moves with the source queue as the job's destination;
//   - SendMessageBatch drops each entry's MessageSystemAttributes, so the engine's batched sends
//     lose the AWSTraceHeader on moto; the trace header is compared only where moto keeps it.
func TestSelectionAgainstMoto(t *testing.T) {
	t.Parallel()
	endpoint := startMoto(t)
	tests := []struct {
		name, source, dlq string
		sel               engine.Selection
		want              []string // tool call ids moved, in order on FIFO
	}{
		{"standard", "mcp-calls", "mcp-calls-dlq", engine.Selection{Tools: []string{"fetch_url"}}, []string{"tc_01", "tc_03", "tc_06"}},
		// read_file is in sess_b only: the whole session moves, in the order it was sent.
		{"FIFO", "mcp-sessions.fifo", "mcp-sessions-dlq.fifo", engine.Selection{Tools: []string{"read_file"}}, []string{"tc_03", "tc_04"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newMotoWorld(t, endpoint, tt.source, tt.dlq)
			keepsTrace := batchKeepsTraceHeader(t, w.sqs, "trace-probe-"+tt.dlq)
			if !keepsTrace {
				t.Log("moto's SendMessageBatch drops MessageSystemAttributes: the moved calls' AWSTraceHeader is not compared")
			}
			w.fail(t, failedCalls)
			n, total := len(tt.want), len(failedCalls)

			sys := w.peekSystemAttributes(t)
			if sys["AWSTraceHeader"] == "" {
				t.Errorf("a dead-lettered call has no AWSTraceHeader on moto; attributes %v", slices.Sorted(maps.Keys(sys)))
			}
			if sys["DeadLetterQueueSourceArn"] == "" {
				// Without it the engine refuses to guess: each match is journaled failed and stays.
				t.Logf("moto gives no DeadLetterQueueSourceArn (system attributes %v): a job without a destination moves nothing", slices.Sorted(maps.Keys(sys)))
				job := w.run(t, tt.sel, "")
				if job.Status != store.MoveTaskCompleted || job.Matched != int64(n) || job.Failed != int64(n) || job.Moved != 0 {
					t.Errorf("job without a destination = %s matched %d failed %d moved %d; want COMPLETED, %d matched and failed, none moved",
						job.Status, job.Matched, job.Failed, job.Moved, n)
				}
				if visible, inFlight := w.depth(t, w.dlqURL); visible != total || inFlight != 0 {
					t.Errorf("after it the DLQ holds %d visible, %d in flight; want all %d visible", visible, inFlight, total)
				}
			}

			job := w.run(t, tt.sel, w.sourceARN)
			if job.Status != store.MoveTaskCompleted || job.FailureReason != "" {
				t.Fatalf("job = %s %q; want COMPLETED", job.Status, job.FailureReason)
			}
			if job.Matched != int64(n) || job.Moved != int64(n) || job.Held != int64(total-n) || job.Released != job.Held || job.Failed != 0 {
				t.Errorf("counts matched %d moved %d held %d released %d failed %d; want %d moved, %d held and released",
					job.Matched, job.Moved, job.Held, job.Released, job.Failed, n, total-n)
			}
			// What the job held is visible again at once, nothing is left in flight.
			if visible, inFlight := w.depth(t, w.dlqURL); visible != total-n || inFlight != 0 {
				t.Errorf("the DLQ holds %d visible, %d in flight after the job; want %d visible", visible, inFlight, total-n)
			}
			if visible, inFlight := w.depth(t, w.sourceURL); visible != n || inFlight != 0 {
				t.Errorf("the source holds %d visible, %d in flight; want %d visible", visible, inFlight, n)
			}

			moved := w.receiveAll(t, w.sourceURL)
			got := toolCallIDs(t, moved)
			if w.fifo && !slices.Equal(got, tt.want) || !sameSet(got, tt.want) {
				t.Errorf("moved %v; want %v", got, tt.want)
			}
			for _, m := range moved {
				w.checkWhole(t, m, keepsTrace)
			}
			var left []string
			for _, m := range w.receiveAll(t, w.dlqURL) {
				left = append(left, toolCallIDs(t, []types.Message{m})...)
				w.checkWhole(t, m, true)
			}
			var others []string
			for _, c := range failedCalls {
				if !slices.Contains(tt.want, c.id) {
					others = append(others, c.id)
				}
			}
			if !sameSet(left, others) {
				t.Errorf("left in the DLQ: %v; want %v", left, others)
			}
		})
	}
}

// checkWhole compares a message with the call the test sent: body, each message attribute
// (binary byte for byte), the trace header when trace is set, and on FIFO the group.
func (w *motoWorld) checkWhole(t *testing.T, m types.Message, trace bool) {
	t.Helper()
	id := toolCallIDs(t, []types.Message{m})[0]
	i := slices.IndexFunc(failedCalls, func(c call) bool { return c.id == id })
	if i < 0 {
		t.Errorf("a message the test did not send: %q", aws.ToString(m.Body))
		return
	}
	c := failedCalls[i]
	if got, want := aws.ToString(m.Body), motoBody(i, c); got != want {
		t.Errorf("%s: body %q; want %q", id, got, want)
	}
	want := motoAttributes(i, c)
	if !slices.Equal(slices.Sorted(maps.Keys(m.MessageAttributes)), slices.Sorted(maps.Keys(want))) {
		t.Errorf("%s: attributes %v; want %v", id, slices.Sorted(maps.Keys(m.MessageAttributes)), slices.Sorted(maps.Keys(want)))
	}
	for name, v := range want {
		got := m.MessageAttributes[name]
		if aws.ToString(got.DataType) != aws.ToString(v.DataType) || aws.ToString(got.StringValue) != aws.ToString(v.StringValue) || !bytes.Equal(got.BinaryValue, v.BinaryValue) {
			t.Errorf("%s: attribute %s = %s %q %x; want %s %q %x", id, name,
				aws.ToString(got.DataType), aws.ToString(got.StringValue), got.BinaryValue, aws.ToString(v.DataType), aws.ToString(v.StringValue), v.BinaryValue)
		}
	}
	if trace && m.Attributes["AWSTraceHeader"] != motoTrace(i) {
		t.Errorf("%s: AWSTraceHeader %q; want %q", id, m.Attributes["AWSTraceHeader"], motoTrace(i))
	}
	if w.fifo && m.Attributes["MessageGroupId"] != c.group {
		t.Errorf("%s: MessageGroupId %q; want %q", id, m.Attributes["MessageGroupId"], c.group)
	}
}

// TestDiscardAgainstMoto discards calls on moto into the archive, which keeps each one's body
// and attributes (binary byte for byte) as sent, leaves the others in the DLQ, and restores
// them to the source (moto gives no DeadLetterQueueSourceArn: the restore names it).
func TestDiscardAgainstMoto(t *testing.T) {
	t.Parallel()
	endpoint := startMoto(t)
	w := newMotoWorld(t, endpoint, "mcp-discards", "mcp-discards-dlq")
	w.fail(t, failedCalls)
	sel := engine.Selection{Tools: []string{"read_file", "web_search"}}
	job := w.runKind(t, store.KindDiscard, sel, "")
	want := map[string]int{} // tool call id → its index among failedCalls
	for i, c := range failedCalls {
		if c.tool == "read_file" || c.tool == "web_search" {
			want[c.id] = i
		}
	}
	total, n := len(failedCalls), len(want)
	if job.Status != store.MoveTaskCompleted || job.Moved != int64(n) || job.Matched != int64(n) {
		t.Fatalf("discard = %s %q, %d of %d; want COMPLETED, %d", job.Status, job.FailureReason, job.Moved, job.Matched, n)
	}
	if visible, inFlight := w.depth(t, w.dlqURL); visible != total-n || inFlight != 0 {
		t.Errorf("the DLQ holds %d visible, %d in flight; want the %d others visible", visible, inFlight, total-n)
	}
	archived, err := w.store.ArchivedMessages(context.Background(), store.ArchiveFilter{})
	if err != nil || len(archived) != n {
		t.Fatalf("archive: %d messages, %v; want %d", len(archived), err, n)
	}
	for _, a := range archived {
		i, ok := want[a.ToolCallID]
		if !ok {
			t.Errorf("archived %s, not selected", a.ToolCallID)
			continue
		}
		c := failedCalls[i]
		if a.Body != motoBody(i, c) {
			t.Errorf("%s: archived body %q; sent %q", c.id, a.Body, motoBody(i, c))
		}
		for name, v := range motoAttributes(i, c) {
			got := a.MessageAttributes[name]
			if got.DataType != aws.ToString(v.DataType) || got.StringValue != aws.ToString(v.StringValue) || !bytes.Equal(got.BinaryValue, v.BinaryValue) {
				t.Errorf("%s: archived attribute %s = %+v; sent %+v", c.id, name, got, v)
			}
		}
		if a.SystemAttributes["SentTimestamp"] == "" || a.TraceHeader != motoTrace(i) {
			t.Errorf("%s: archived system attributes %v, trace %q", c.id, a.SystemAttributes, a.TraceHeader)
		}
	}
	restore := w.runKind(t, store.KindRestore, sel, w.sourceARN)
	if restore.Status != store.MoveTaskCompleted || restore.Moved != int64(n) {
		t.Fatalf("restore = %s %q, %d restored; want %d", restore.Status, restore.FailureReason, restore.Moved, n)
	}
	back := w.receiveAll(t, w.sourceURL)
	if got := toolCallIDs(t, back); len(got) != n {
		t.Errorf("the source holds %v; want the %d restored calls", got, n)
	}
	for _, m := range back {
		w.checkWhole(t, m, false)
	}
}
