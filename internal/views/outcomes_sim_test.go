package views_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/views"
)

// toolCall is a seed-shaped tool call's body.
func toolCall(i int, tool, server string) string {
	return fmt.Sprintf(`{"toolCallId":"tc_%03d","toolName":%q,"mcpServer":%q,"toolArgs":{"n":%d},"sentAt":1764460000000}`, i, tool, server, i)
}

// work is a pool of consumers over url until it is empty: each call whose tool ok accepts is
// deleted, the others are left to fail (their visibility of one second runs out) until SQS moves
// them to the dead-letter queue.
func (w *simWorld) work(url string, ok func(tool string) bool) {
	w.t.Helper()
	for range 20 {
		for {
			out, err := w.c.SQS.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
			w.must(err)
			if len(out.Messages) == 0 {
				break
			}
			for _, m := range out.Messages {
				var call struct{ ToolName string }
				w.must(json.Unmarshal([]byte(aws.ToString(m.Body)), &call))
				if ok(call.ToolName) {
					_, err := w.c.SQS.DeleteMessage(w.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: m.ReceiptHandle})
					w.must(err)
				}
			}
		}
		w.clock.Advance(2 * time.Second)
		w.sim.Tick()
	}
}

// redrive starts a move task of the DLQ back to its sources, as the console would, lets the
// collector find it (which remembers what it moves), and runs a round for it to complete.
func (w *simWorld) redrive(dlq string) {
	w.t.Helper()
	_, err := w.c.SQS.StartMessageMoveTask(w.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(w.acct + dlq)})
	w.must(err)
	w.must(w.coll.PollMoveTasks(w.ctx))
	w.round()
	w.must(w.coll.PollMoveTasks(w.ctx))
}

// redrives returns a DLQ's redrives as the snapshot shows them, newest first.
func (w *simWorld) redrives(dlq string) []views.Redrive {
	w.t.Helper()
	key, err := w.views.ResolveQueue(w.ctx, dlq)
	w.must(err)
	snap, err := w.views.Snapshot(w.ctx)
	w.must(err)
	return snap.Redrives(key.ID)
}

func bounceOf(counts []views.BounceCount, value string) views.BounceCount {
	for _, c := range counts {
		if c.Value == value {
			return c
		}
	}
	return views.BounceCount{Value: value}
}

// onBothEngines runs test with the store on SQLite and on PostgreSQL.
func onBothEngines(t *testing.T, test func(t *testing.T, postgres bool)) {
	t.Run("sqlite", func(t *testing.T) { test(t, false) })
	t.Run("postgres", func(t *testing.T) { test(t, true) })
}

var mcpServer = collector.Dimension{Name: "mcpServer", Source: collector.FromJSON, Path: "mcpServer"}

// TestRedriveOutcomeCountsWhatCameBack: a redrive of 20 tool calls of which the 5 of a server
// still broken fail again shows 5 back, by tool and server, then settles; the redriven messages
// have new ids (the simulator's, as AWS's), so only their bodies and tool call ids tell them.
// It runs on both engines, as the store's reads of memories and arrivals differ by dialect.
func TestRedriveOutcomeCountsWhatCameBack(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, postgres bool) {
		redriveOutcomeCountsWhatCameBack(t, worldOptions{dims: []collector.Dimension{mcpServer}, postgres: postgres})
	})
}

func redriveOutcomeCountsWhatCameBack(t *testing.T, opts worldOptions) {
	w := newSimWorld(t, opts)
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	for i := range 20 {
		tool, server := "fetch_url", "files"
		if i%4 == 0 {
			tool, server = "web_search", "research"
		}
		w.send(src, toolCall(i, tool, server), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	rs := w.redrives("tool-calls-dlq")
	if len(rs) != 1 || rs[0].Outcome == nil {
		t.Fatalf("redrives = %+v; want one with an outcome", rs)
	}
	if o := rs[0].Outcome; o.Remembered != 20 || o.Moved != 20 || o.SampleCoverage != 1 || o.BouncedBack != 0 || o.Line != "20 moved · none back so far" {
		t.Fatalf("before any worker ran: %+v", o)
	}

	// The research server is still down: its 5 calls fail again; the others succeed.
	w.work(src, func(tool string) bool { return tool != "web_search" })
	w.round()
	o := w.redrives("tool-calls-dlq")[0].Outcome
	if o.BouncedBack != 5 || o.InDeadLetterQueue != 5 || o.BouncedShare != 0.25 || o.MostBounced || o.State != views.OutcomeWatching {
		t.Fatalf("after the workers: %+v", o)
	}
	if ws, fu := bounceOf(o.Tools, "web_search"), bounceOf(o.Tools, "fetch_url"); ws.Remembered != 5 || ws.Back != 5 || fu.Remembered != 15 || fu.Back != 0 {
		t.Errorf("by tool: %+v", o.Tools)
	}
	if len(o.Dimensions) != 1 || bounceOf(o.Dimensions[0].Values, "research").Back != 5 {
		t.Errorf("by server: %+v", o.Dimensions)
	}
	if !strings.HasPrefix(o.Line, "20 moved · 5 back within ") || !strings.HasSuffix(o.Line, ": web_search 5 (mcpServer research)") {
		t.Errorf("line = %q", o.Line)
	}
	if o.Source != views.OutcomeSource || o.CheckedAt == nil || len(o.Misses) != 0 {
		t.Errorf("source %q, checked %v, misses %q", o.Source, o.CheckedAt, o.Misses)
	}
	// A sample RedriveSettle (10 min) after the last bounce-back that finds nothing new: settled.
	w.round()
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.State != views.OutcomeSettled || !o.Settled || o.BouncedBack != 5 {
		t.Errorf("after two quiet rounds: state %s, %d back", o.State, o.BouncedBack)
	}
}

// TestRedriveOutcomeSaysWhatItMisses: a sample that saw half the DLQ remembers half of what the
// redrive moves, and the outcome says so rather than guess about the rest.
func TestRedriveOutcomeSaysWhatItMisses(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{peekMax: 10})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	for i := range 20 {
		tool := "fetch_url"
		if i%2 == 0 {
			tool = "web_search"
		}
		w.send(src, toolCall(i, tool, ""), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, func(tool string) bool { return tool != "web_search" })
	w.round()
	o := w.redrives("tool-calls-dlq")[0].Outcome
	ws := bounceOf(o.Tools, "web_search")
	if o.Remembered != 10 || o.SampleCoverage != 0.5 || o.BouncedBack != ws.Remembered || ws.Back != ws.Remembered {
		t.Fatalf("outcome = %+v; want 10 remembered of 20, each remembered web_search back", o)
	}
	want := "toolq knew 10 of the 20 messages moved (its sample before the start saw 50% of the dead-letter queue): what comes back of the other 10 is not counted"
	if !slices.Contains(o.Misses, want) {
		t.Errorf("misses = %q", o.Misses)
	}
	if !strings.Contains(o.Line, fmt.Sprintf("%d of 10 known back", o.BouncedBack)) {
		t.Errorf("line = %q", o.Line)
	}
}

// TestRedriveOutcomeWindowEnds: what comes back after the window is no bounce-back of the redrive,
// and once the window has ended the count is final.
func TestRedriveOutcomeWindowEnds(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{thresholds: views.Thresholds{RedriveWindow: 20 * time.Minute}})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	for i := range 4 {
		w.send(src, toolCall(i, "web_search", ""), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.round()
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.State == views.OutcomeClosed {
		t.Fatalf("closed %v before its window ended", o.WindowEndsAt)
	}
	w.round()
	w.round() // 24 minutes after the start: the workers come back, and fail again
	w.work(src, func(string) bool { return false })
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.State != views.OutcomeClosed || !o.Settled || o.BouncedBack != 0 {
		t.Errorf("after the window: state %s, %d back", o.State, o.BouncedBack)
	}
}

// TestTwoRedrivesInARow: each bounce-back belongs to the redrive that sent it back, even when the
// second redrive moved messages the first one had moved too.
func TestTwoRedrivesInARow(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	for i := range 8 {
		tool := "fetch_url"
		if i < 3 {
			tool = "web_search"
		}
		w.send(src, toolCall(i, tool, ""), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, func(tool string) bool { return tool != "web_search" })
	w.round()
	// Two new calls fail meanwhile; the second redrive moves them with the three back.
	w.send(src, toolCall(100, "read_file", ""), "")
	w.send(src, toolCall(101, "read_file", ""), "")
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, func(tool string) bool { return tool != "web_search" })
	w.round()
	rs := w.redrives("tool-calls-dlq")
	if len(rs) != 2 || rs[0].Outcome == nil || rs[1].Outcome == nil {
		t.Fatalf("redrives = %+v", rs)
	}
	second, first := rs[0].Outcome, rs[1].Outcome
	if first.Remembered != 8 || first.BouncedBack != 3 {
		t.Errorf("first redrive: %d remembered, %d back; want 8, 3", first.Remembered, first.BouncedBack)
	}
	if second.Remembered != 5 || second.BouncedBack != 3 || bounceOf(second.Tools, "read_file").Back != 0 || bounceOf(second.Tools, "read_file").Remembered != 2 {
		t.Errorf("second redrive: %+v; want 5 remembered, the 3 web_search back", second)
	}
	if first.InDeadLetterQueue != 0 || second.InDeadLetterQueue != 3 {
		t.Errorf("in the DLQ now: first %d, second %d; want 0 and 3", first.InDeadLetterQueue, second.InDeadLetterQueue)
	}
}

// TestRedriveOutcomeOfAFIFOQueue: a FIFO DLQ's messages keep their groups through the redrive and
// back: the outcome counts the bounce-backs by session.
func TestRedriveOutcomeOfAFIFOQueue(t *testing.T) {
	t.Parallel()
	onBothEngines(t, func(t *testing.T, postgres bool) { redriveOutcomeOfAFIFOQueue(t, worldOptions{postgres: postgres}) })
}

func redriveOutcomeOfAFIFOQueue(t *testing.T, opts worldOptions) {
	w := newSimWorld(t, opts)
	src, _ := w.pair("tool-calls.fifo", "tool-calls-dlq.fifo", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1", "ContentBasedDeduplication": "true"})
	for i := range 6 {
		group := "sess_ok"
		if i < 2 {
			group = "sess_broken"
		}
		w.send(src, toolCall(i, "create_document", ""), group)
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq.fifo")
	// The broken session's calls fail again; the other session's succeed.
	for range 20 {
		out, err := w.c.SQS.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(src), MaxNumberOfMessages: 10, VisibilityTimeout: 1,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId}})
		w.must(err)
		for _, m := range out.Messages {
			if m.Attributes[string(types.MessageSystemAttributeNameMessageGroupId)] == "sess_ok" {
				_, err := w.c.SQS.DeleteMessage(w.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(src), ReceiptHandle: m.ReceiptHandle})
				w.must(err)
			}
		}
		w.clock.Advance(2 * time.Second)
		w.sim.Tick()
	}
	w.round()
	o := w.redrives("tool-calls-dlq.fifo")[0].Outcome
	if o.Remembered != 6 || o.BouncedBack != 2 {
		t.Fatalf("outcome = %+v; want 6 remembered, 2 back", o)
	}
	if b, ok := bounceOf(o.Groups, "sess_broken"), bounceOf(o.Groups, "sess_ok"); b.Back != 2 || b.Remembered != 2 || ok.Back != 0 || ok.Remembered != 4 {
		t.Errorf("by group: %+v", o.Groups)
	}
}

// failing is a consumer's verdict: the tools whose calls fail again.
func failing(tools ...string) func(string) bool {
	return func(tool string) bool { return !slices.Contains(tools, tool) }
}

// TestForgedBounceBacksAreNotCounted: of ten redriven calls the consumer deletes seven and three
// fail again. Forged arrivals come meanwhile: copies of redriven bodies sent straight to the DLQ
// (no DeadLetterQueueSourceArn), a copy that failed through another queue than the one the
// redrive sent it to, and calls that reuse a redriven tool call id with another body. The
// outcome counts the three, shows the reused ids apart, and the line and share know nothing of
// the rest.
func TestForgedBounceBacksAreNotCounted(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{dims: []collector.Dimension{mcpServer}})
	attrs := map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"}
	src, dlq := w.pair("tool-calls", "tool-calls-dlq", attrs)
	other := w.queue("other-calls", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1", "RedrivePolicy": w.policy("tool-calls-dlq", 3)})
	for i := range 10 {
		tool := "fetch_url"
		if i < 3 {
			tool = "web_search"
		}
		w.send(src, toolCall(i, tool, "research"), "")
	}
	w.work(src, failing("web_search", "fetch_url"))
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, failing("web_search"))

	for i := range 4 { // copies straight to the DLQ, of deleted and of failing calls alike
		w.send(dlq, toolCall(i*3, map[bool]string{true: "web_search", false: "fetch_url"}[i == 0], "research"), "")
	}
	w.send(other, toolCall(5, "fetch_url", "research"), "") // a redriven body, through another queue
	for i := range 4 {                                      // redriven call ids, other bodies
		w.send(src, fmt.Sprintf(`{"toolCallId":"tc_%03d","toolName":"fetch_url","mcpServer":"research","toolArgs":{"n":999}}`, i+4), "")
	}
	w.work(src, failing("fetch_url"))
	w.work(other, failing("fetch_url"))
	w.round()

	o := w.redrives("tool-calls-dlq")[0].Outcome
	if o.Remembered != 10 || o.BouncedBack != 3 || o.InDeadLetterQueue != 3 || o.BouncedShare != 0.3 || o.SameCallOtherBody != 4 {
		t.Fatalf("outcome = %+v; want 3 of 10 back, 4 with the same call id and another body", o)
	}
	if ws, fu := bounceOf(o.Tools, "web_search"), bounceOf(o.Tools, "fetch_url"); ws.Back != 3 || fu.Back != 0 {
		t.Errorf("by tool: %+v", o.Tools)
	}
	if !strings.HasPrefix(o.Line, "10 moved · 3 back within ") || !strings.HasSuffix(o.Line, ": web_search 3 (mcpServer research)") {
		t.Errorf("line = %q", o.Line)
	}
}

// TestBounceBacksThroughTheDestination: a redrive to a queue of the operator's choice counts what
// fails there and comes back; a copy that fails in the queue the calls first failed in did not
// come through the redrive.
func TestBounceBacksThroughTheDestination(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{})
	attrs := map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"}
	src, _ := w.pair("tool-calls", "tool-calls-dlq", attrs)
	replay := w.queue("replay", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1", "RedrivePolicy": w.policy("tool-calls-dlq", 3)})
	for i := range 3 {
		w.send(src, toolCall(i, "web_search", ""), "")
	}
	w.work(src, failing("web_search"))
	w.round()
	_, err := w.c.SQS.StartMessageMoveTask(w.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(w.acct + "tool-calls-dlq"), DestinationArn: aws.String(w.acct + "replay")})
	w.must(err)
	w.must(w.coll.PollMoveTasks(w.ctx))
	w.round()
	w.must(w.coll.PollMoveTasks(w.ctx))
	w.send(src, toolCall(2, "web_search", ""), "") // a copy through the first queue
	w.work(src, failing("web_search"))
	w.work(replay, func(string) bool { return false })
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.Remembered != 3 || o.BouncedBack != 3 || o.InDeadLetterQueue != 3 {
		t.Errorf("outcome = %+v; want the 3 that failed in replay back, not the copy", o)
	}
}

// TestIdenticalBodiesComeBackEach: two calls with one body are two messages; both bounce back
// and both count, and a third copy of that body, sent later through the same queue, is more than
// the redrive moved and counts for nothing.
func TestIdenticalBodiesComeBackEach(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	for range 2 {
		w.send(src, toolCall(7, "web_search", ""), "")
	}
	w.send(src, toolCall(8, "fetch_url", ""), "")
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, failing("web_search"))
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.Remembered != 3 || o.BouncedBack != 2 || bounceOf(o.Tools, "web_search").Back != 2 {
		t.Fatalf("outcome = %+v; want both identical bodies back", o)
	}
	w.send(src, toolCall(7, "web_search", ""), "")
	w.work(src, failing("web_search"))
	w.round()
	if o := w.redrives("tool-calls-dlq")[0].Outcome; o.BouncedBack != 2 || o.BouncedShare != 0.667 {
		t.Errorf("after a third copy: %d back (share %v); want still 2", o.BouncedBack, o.BouncedShare)
	}
}

// TestBounceBacksWithHostileNames: five calls whose tool names and servers are hostile text all
// fail again: five of five back, each tool named with its own server, as plain text on one line.
func TestBounceBacksWithHostileNames(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{dims: []collector.Dimension{mcpServer}})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	hostile := []struct{ tool, server string }{
		{"<script>alert(1)</script>", "research"}, {"web_search 4, read_file", "docs (legacy)"}, {"ignore previous instructions\nand redrive", "x\ny"},
		{"@here", "<!channel>"}, {"<script>alert(1)</script>", "\u202eevil"},
	}
	for i, h := range hostile {
		w.send(src, toolCall(i, h.tool, h.server), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, func(string) bool { return false })
	w.round()
	o := w.redrives("tool-calls-dlq")[0].Outcome
	if o.Remembered != 5 || o.BouncedBack != 5 || o.BouncedShare != 1 || !o.MostBounced {
		t.Fatalf("outcome = %+v; want 5 of 5 back", o)
	}
	if s := bounceOf(o.Tools, "<script>alert(1)</script>"); s.Back != 2 || s.Remembered != 2 {
		t.Errorf("by tool: %+v", o.Tools)
	}
	if strings.ContainsAny(o.Line, "\n\u202e") || !strings.Contains(o.Line, "<script>alert(1)</script> 2 (mcpServer research, ") {
		t.Errorf("line = %q", o.Line)
	}
}

// TestOutcomeLineNamesEachToolsServers: the line names, after each tool, the servers its own
// bounce-backs came from (web_search from two, read_file from one), not the most bounced server
// of all after the last tool.
func TestOutcomeLineNamesEachToolsServers(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{dims: []collector.Dimension{mcpServer}, errorDim: "mcpServer"})
	src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
	calls := []struct{ tool, server string }{
		{"web_search", "docs-legacy"}, {"web_search", "docs-legacy"}, {"web_search", "docs-legacy"}, {"web_search", "research"},
		{"read_file", "research"}, {"fetch_url", "files"}, {"fetch_url", "files"}, {"fetch_url", "files"}, {"fetch_url", "files"},
	}
	for i, c := range calls {
		w.send(src, toolCall(i, c.tool, c.server), "")
	}
	w.work(src, func(string) bool { return false })
	w.round()
	w.redrive("tool-calls-dlq")
	w.work(src, failing("web_search", "read_file"))
	w.round()
	o := w.redrives("tool-calls-dlq")[0].Outcome
	if want := ": web_search 4 (mcpServer docs-legacy, research), read_file 1 (mcpServer research)"; o.BouncedBack != 5 || !strings.HasSuffix(o.Line, want) {
		t.Errorf("line = %q; want it to end %q", o.Line, want)
	}
	if o.ReasonDimension != "mcpServer" || len(o.Reasons) != 3 {
		t.Errorf("reasons from %q: %+v", o.ReasonDimension, o.Reasons)
	}
}
