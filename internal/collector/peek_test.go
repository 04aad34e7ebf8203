package collector

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// latestMessages returns the newest sample of a queue and its messages.
func (e *env) latestMessages(name string) (store.Sample, []store.SampledMessage) {
	e.t.Helper()
	q := e.queueNamed(name)
	s, err := e.store.LatestSample(e.ctx, q.ID)
	if err != nil {
		e.t.Fatalf("LatestSample %s: %v", name, err)
	}
	msgs, err := e.store.SampleMessages(e.ctx, s.ID, store.MessageFilter{})
	if err != nil {
		e.t.Fatalf("SampleMessages: %v", err)
	}
	return s, msgs
}

func TestPeekNeverDeletesAndReleases(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 2)
	e.deadLetter(srcURL, "web-search-dlq", 25)
	_, srcARN := e.createQueue("web-search", nil) // CreateQueue is idempotent: returns the ARN

	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	for pass := 1; pass <= 2; pass++ {
		before := e.snapshot("web-search-dlq")
		e.sim.ResetCallCounts()
		must(t, c.PeekDue(e.ctx))
		after := e.snapshot("web-search-dlq")

		if n := e.sim.CallCount("DeleteMessage") + e.sim.CallCount("DeleteMessageBatch"); n != 0 {
			t.Fatalf("pass %d: %d delete calls", pass, n)
		}
		if len(after) != len(before) {
			t.Fatalf("pass %d: %d messages after, %d before", pass, len(after), len(before))
		}
		for i := range after {
			b, a := before[i], after[i]
			if a.MessageID != b.MessageID || a.Body != b.Body {
				t.Errorf("pass %d: message %d changed: %s -> %s", pass, i, b.MessageID, a.MessageID)
			}
			if a.ReceiveCount != b.ReceiveCount+1 {
				t.Errorf("pass %d: %s receive count %d -> %d, want +1", pass, a.MessageID, b.ReceiveCount, a.ReceiveCount)
			}
			if a.InFlight {
				t.Errorf("pass %d: %s still in flight after the pass", pass, a.MessageID)
			}
		}
		s, msgs := e.latestMessages("web-search-dlq")
		if s.Kind != store.SampleDeadLetter || s.Seen != 25 || s.ApproxVisible != 25 || s.MessagesTaken != 25 || s.Capped || s.Error != "" {
			t.Errorf("pass %d: sample = %+v", pass, s)
		}
		if s.Receives != e.sim.CallCount("ReceiveMessage") || s.Receives < 3 {
			t.Errorf("pass %d: sample receives = %d, simulator saw %d", pass, s.Receives, e.sim.CallCount("ReceiveMessage"))
		}
		if s.Coverage() != 1 {
			t.Errorf("pass %d: coverage = %v", pass, s.Coverage())
		}
		if len(msgs) != 25 {
			t.Fatalf("pass %d: %d messages stored", pass, len(msgs))
		}
		for _, m := range msgs {
			// Failed by the consumer 2 times plus the receive that moved it; never the
			// dashboard's own receives, however many passes it made.
			if m.ReceiveCount != before[0].ReceiveCount-(pass-1) {
				t.Errorf("pass %d: %s stored receive count %d, want %d", pass, m.MessageID, m.ReceiveCount, before[0].ReceiveCount-(pass-1))
			}
			if m.ToolName != "fetch_page" || m.SessionID != "sess_1" || !strings.HasPrefix(m.ToolCallID, "tc_") {
				t.Errorf("pass %d: tool fields %q %q %q", pass, m.ToolName, m.ToolCallID, m.SessionID)
			}
			if m.DeadLetterSourceARN != srcARN {
				t.Errorf("pass %d: dead-letter source %q, want %q", pass, m.DeadLetterSourceARN, srcARN)
			}
			if m.NearMaxReceive {
				t.Errorf("pass %d: near max flagged on a dead-letter queue", pass)
			}
		}
		if n := e.bus.count(events.SampleTaken, e.queueNamed("web-search-dlq").ID); n != pass {
			t.Errorf("SampleTaken events = %d, want %d", n, pass)
		}
		e.advance(DefaultPeekDeadLetterInterval)
	}
}

// TestPeekKeepsTheTraceHeader: a sampled message keeps the AWSTraceHeader SQS gave it, as
// received, for the trace links; a message without one keeps "".
func TestPeekKeepsTheTraceHeader(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, dlqURL := e.createPair("web-search", "web-search-dlq", 2)
	const header = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	e.send(dlqURL, toolCallBody("fetch_page", 1, "sess_1"), func(in *sqs.SendMessageInput) {
		in.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(header)},
		}
	})
	e.send(dlqURL, toolCallBody("fetch_page", 2, "sess_1"))
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	_, msgs := e.latestMessages("web-search-dlq")
	var got []string
	for _, m := range msgs {
		got = append(got, m.TraceHeader)
	}
	slices.Sort(got)
	if want := []string{"", header}; !slices.Equal(got, want) {
		t.Fatalf("trace headers = %q; want %q", got, want)
	}
}

func TestPeekOnlyWhereAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		peek        PeekOptions
		wantSource  bool // the source queue is received from
		wantDLQ     bool
		wantEnabled []string
	}{
		{"default: dead-letter queues only", PeekOptions{}, false, true, []string{"web-search-dlq"}},
		{"peek none", PeekOptions{Disabled: true}, false, false, nil},
		{"source opted in by name", PeekOptions{Sources: []string{"web-search"}}, true, true, []string{"web-search", "web-search-dlq"}},
		{"source opted in by prefix", PeekOptions{Sources: []string{"web-*"}}, true, true, []string{"web-search", "web-search-dlq"}},
		{"a bare word is not a prefix", PeekOptions{Sources: []string{"web"}}, false, true, []string{"web-search-dlq"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			srcURL, _ := e.createPair("web-search", "web-search-dlq", 3)
			e.deadLetter(srcURL, "web-search-dlq", 2)
			for i := range 5 {
				e.send(srcURL, toolCallBody("search", i, "sess_2"))
			}
			srcBefore, dlqBefore := e.snapshot("web-search"), e.snapshot("web-search-dlq")
			c := e.collector(func(o *Options) { o.Peek = tt.peek })
			must(t, c.Discover(e.ctx))
			must(t, c.CycleAttributes(e.ctx))
			for range 3 {
				must(t, c.PeekDue(e.ctx))
				e.advance(5 * time.Minute)
			}
			if got := receivedFrom(srcBefore, e.snapshot("web-search")); got != tt.wantSource {
				t.Errorf("source received from = %v, want %v", got, tt.wantSource)
			}
			if got := receivedFrom(dlqBefore, e.snapshot("web-search-dlq")); got != tt.wantDLQ {
				t.Errorf("dead-letter queue received from = %v, want %v", got, tt.wantDLQ)
			}
			qs, err := e.store.ListQueues(e.ctx, store.QueueFilter{})
			must(t, err)
			var enabled []string
			for _, q := range qs {
				if q.PeekEnabled {
					enabled = append(enabled, q.Name)
				}
			}
			if !slices.Equal(enabled, tt.wantEnabled) {
				t.Errorf("PeekEnabled on %v, want %v", enabled, tt.wantEnabled)
			}
		})
	}
}

// receivedFrom reports whether any message's receive count rose between two snapshots.
func receivedFrom(before, after []sqsim.MessageSnapshot) bool {
	counts := map[string]int{}
	for _, m := range before {
		counts[m.MessageID] = m.ReceiveCount
	}
	for _, m := range after {
		if m.ReceiveCount != counts[m.MessageID] {
			return true
		}
	}
	return false
}

func TestPeekSkipsDeadLetterQueueBeingMoved(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 2)
	e.deadLetter(srcURL, "web-search-dlq", 20)
	dlq := e.queueNamed
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlq("web-search-dlq").ARN), MaxNumberOfMessagesPerSecond: aws.Int32(1),
	})
	must(t, err)
	must(t, c.PollMoveTasks(e.ctx))
	if running, err := e.store.RunningMoveTasks(e.ctx); err != nil || len(running) != 1 {
		t.Fatalf("RunningMoveTasks = %v, %v; want the task just started", running, err)
	}
	e.sim.ResetCallCounts()
	must(t, c.PeekDue(e.ctx))
	if n := e.sim.CallCount("ReceiveMessage"); n != 0 {
		t.Errorf("ReceiveMessage calls while a move task runs = %d, want 0", n)
	}
}

func TestPeekRefusesSourceWithMaxReceiveCountOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("fragile", "fragile-dlq", 1)
	e.send(srcURL, toolCallBody("x", 1, "s"))
	before := e.snapshot("fragile")
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"fragile"} })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	e.advance(10 * time.Minute)
	must(t, c.PeekDue(e.ctx))
	if receivedFrom(before, e.snapshot("fragile")) {
		t.Errorf("a source with maxReceiveCount 1 was received from")
	}
	q := e.queueNamed("fragile")
	if q.PeekEnabled {
		t.Errorf("PeekEnabled on a refused source")
	}
	var refused int
	for _, ce := range e.errors(q.ID) {
		if ce.Code == "PeekRefused" {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("PeekRefused recorded %d times, want once", refused)
	}
}

func TestGroupBacklogAndBlockedGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("orders.fifo", "orders-dlq.fifo", 5)
	for i := range 3 {
		e.send(srcURL, toolCallBody("create_document", i, "sess_a"), inGroup("sess_a", "a"+string(rune('0'+i))))
		e.advance(time.Second)
	}
	for i := range 2 {
		e.send(srcURL, toolCallBody("append_section", i, "sess_b"), inGroup("sess_b", "b"+string(rune('0'+i))))
		e.advance(time.Second)
	}
	// The consumer fails sess_a's head twice.
	for range 2 {
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 1, VisibilityTimeout: 1})
		must(t, err)
		if len(out.Messages) != 1 || !strings.Contains(aws.ToString(out.Messages[0].Body), "sess_a") {
			t.Fatalf("consumer got %v, want sess_a's head", out.Messages)
		}
		e.advance(2 * time.Second)
	}
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"orders.fifo"} })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))

	s, msgs := e.latestMessages("orders.fifo")
	if s.Kind != store.SampleSource || s.Seen != 5 {
		t.Fatalf("sample = %+v, want a source sample that saw all 5", s)
	}
	groups, err := e.store.SampleGroups(e.ctx, s.ID)
	must(t, err)
	byID := map[string]store.GroupBacklog{}
	for _, g := range groups {
		byID[g.GroupID] = g
	}
	tests := []struct {
		group       string
		messages    int
		headCount   int
		wantBlocked bool
	}{
		{"sess_a", 3, 2, true},
		{"sess_b", 2, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.group, func(t *testing.T) {
			g, ok := byID[tt.group]
			if !ok {
				t.Fatalf("no backlog for %s in %+v", tt.group, groups)
			}
			if g.Messages != tt.messages || g.HeadReceiveCount != tt.headCount || g.Blocked != tt.wantBlocked {
				t.Errorf("backlog = %+v, want %d messages, head received %d, blocked %v", g, tt.messages, tt.headCount, tt.wantBlocked)
			}
			if g.OldestSentAt.IsZero() || g.HeadMessageID == "" {
				t.Errorf("backlog lacks head or age: %+v", g)
			}
		})
	}
	for _, m := range msgs {
		if m.GroupID == "" || m.SequenceNumber == "" || m.DeduplicationID == "" {
			t.Errorf("FIFO fields missing: %+v", m)
		}
	}
	// The pass released every message: the consumer gets sess_a's head again at once.
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10})
	must(t, err)
	if len(out.Messages) == 0 {
		t.Errorf("FIFO groups still held after the pass")
	}
}

func TestNearMaxReceive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 4)
	e.send(srcURL, toolCallBody("search", 1, "s")) // failed three times below
	e.send(srcURL, toolCallBody("search", 2, "s")) // failed once
	e.send(srcURL, toolCallBody("search", 3, "s")) // never received
	for i := range 3 {
		n := int32(1)
		if i == 0 {
			n = 2
		}
		out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: n, VisibilityTimeout: 1})
		must(t, err)
		if len(out.Messages) != int(n) {
			t.Fatalf("consumer got %d messages", len(out.Messages))
		}
		e.advance(2 * time.Second)
	}
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"web-*"} })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	_, msgs := e.latestMessages("web-search")
	want := map[string]struct {
		count int
		near  bool
	}{
		"tc_001": {3, true},
		"tc_002": {1, false},
		"tc_003": {0, false},
	}
	for _, m := range msgs {
		w, ok := want[m.ToolCallID]
		if !ok {
			t.Errorf("unexpected message %s", m.ToolCallID)
			continue
		}
		if m.ReceiveCount != w.count || m.NearMaxReceive != w.near {
			t.Errorf("%s: receive count %d near %v, want %d %v", m.ToolCallID, m.ReceiveCount, m.NearMaxReceive, w.count, w.near)
		}
		if (m.ReceiveCount == 0) != m.FirstReceivedAt.IsZero() {
			t.Errorf("%s: FirstReceivedAt %v with receive count %d", m.ToolCallID, m.FirstReceivedAt, m.ReceiveCount)
		}
	}
}

func TestPeekCapAndHostileBodies(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("tool-calls", "tool-calls-dlq", 1)
	huge := `{"toolName":"write_file","toolArgs":{"content":"` + strings.Repeat("é", 40_000) + `"}}`
	bodies := []string{
		huge,
		"not json at all <script>alert(1)</script>",
		`"{\"toolName\":\"double_encoded\"}"`,
		`{"toolName":{"nested":"object"},"toolCallId":12345,"sessionId":null}`,
		`{"toolName":"` + strings.Repeat("x", 1000) + `"}`,
		`[1,2,3]`,
		strings.Repeat("[", 20_000),
	}
	for _, b := range bodies {
		e.send(srcURL, b)
	}
	for range 5 {
		e.consume(srcURL)
	}
	if got := len(e.snapshot("tool-calls-dlq")); got != len(bodies) {
		t.Fatalf("%d messages in the DLQ, want %d", got, len(bodies))
	}
	c := e.collector(func(o *Options) {
		o.Peek.BodyCap = 1001 // odd, to cut inside a two-byte rune
		o.Peek.MaxMessages = 5
	})
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	s, msgs := e.latestMessages("tool-calls-dlq")
	if !s.Capped || s.MessagesTaken != 5 || s.Seen != 5 {
		t.Errorf("sample = %+v, want capped at 5", s)
	}
	for _, m := range msgs {
		if len(m.Body) > 1001 || !utf8.ValidString(m.Body) {
			t.Errorf("body of %d bytes, valid UTF-8 %v", len(m.Body), utf8.ValidString(m.Body))
		}
		if m.BodyTruncated != (m.BodySize > 1001) {
			t.Errorf("BodyTruncated %v with size %d", m.BodyTruncated, m.BodySize)
		}
		if len(m.ToolName) > maxToolField {
			t.Errorf("tool name of %d bytes", len(m.ToolName))
		}
	}
	if msgs[0].BodySize != len(huge) || msgs[0].ToolName != "write_file" {
		t.Errorf("huge body: size %d tool %q", msgs[0].BodySize, msgs[0].ToolName)
	}
	// Capped or not, nothing stays in flight.
	for _, m := range e.snapshot("tool-calls-dlq") {
		if m.InFlight {
			t.Errorf("%s in flight after a capped pass", m.MessageID)
		}
	}
}

func TestToolFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		body  string
		paths []string
		want  []string
	}{
		{"flat", `{"toolName":"search","toolCallId":"tc_1","sessionId":"s"}`, []string{"toolName", "toolCallId", "sessionId"}, []string{"search", "tc_1", "s"}},
		{"dotted", `{"params":{"name":"search","meta":{"id":7}}}`, []string{"params.name", "params.meta.id", "params.missing"}, []string{"search", "7", ""}},
		{"double encoded", `"{\"toolName\":\"x\"}"`, []string{"toolName"}, []string{"x"}},
		{"not json", `hello`, []string{"toolName"}, []string{""}},
		{"array", `[{"toolName":"x"}]`, []string{"toolName"}, []string{""}},
		{"object value", `{"toolName":{"a":1}}`, []string{"toolName"}, []string{""}},
		{"bool", `{"flag":true}`, []string{"flag"}, []string{"true"}},
		{"truncated json", `{"toolName":"x"`, []string{"toolName"}, []string{""}},
		{"control characters", "{\"toolName\":\"a\\u0000b\\u001bc\"}", []string{"toolName"}, []string{"abc"}},
		{"empty path", `{"":"x"}`, []string{""}, []string{""}},
		// EventBridge delivers the whole event to a target's DLQ: the producer's fields are in
		// its detail.
		{"EventBridge event", `{"version":"0","id":"e1","detail-type":"ToolCallCompleted","source":"mcp.tools","detail":{"toolName":"web_search","toolCallId":"tc_9","meta":{"id":3}}}`,
			[]string{"toolName", "toolCallId", "meta.id", "sessionId"}, []string{"web_search", "tc_9", "3", ""}},
		{"an event's own field wins over its detail's", `{"detail-type":"T","source":"s","id":"e1","detail":{"id":"d1"}}`, []string{"id"}, []string{"e1"}},
		{"a path into the detail", `{"detail-type":"T","source":"s","detail":{"toolName":"x"}}`, []string{"detail.toolName"}, []string{"x"}},
		{"a detail without detail-type is no event", `{"source":"s","detail":{"toolName":"x"}}`, []string{"toolName"}, []string{""}},
		{"an event whose detail is no object", `{"detail-type":"T","source":"s","detail":"{\"toolName\":\"x\"}"}`, []string{"toolName"}, []string{""}},
		{"hostile detail", "{\"detail-type\":\"T\",\"source\":\"s\",\"detail\":{\"toolName\":\"a\\u001b[31mb\"}}", []string{"toolName"}, []string{"a[31mb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := toolFields(tt.body, tt.paths...); !slices.Equal(got, tt.want) {
				t.Errorf("toolFields = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestDimensionsOfAnEventBridgeEvent: an attribute dimension of an event, which carries none
// of its producer's attributes, reads the detail's field of the attribute's name; a message's
// own attribute wins; a JSON dimension reads the detail as the tool fields do.
func TestDimensionsOfAnEventBridgeEvent(t *testing.T) {
	t.Parallel()
	dims := []Dimension{{Name: "mcpServer", Source: FromAttribute, Path: "mcpServer"}, {Name: "error", Source: FromJSON, Path: "error.code"}}
	event := `{"detail-type":"ToolCallFailed","source":"mcp.tools","detail":{"mcpServer":"research","error":{"code":"timeout"}}}`
	attr := func(v string) map[string]types.MessageAttributeValue {
		return map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(v)}}
	}
	tests := []struct {
		name  string
		body  string
		attrs map[string]types.MessageAttributeValue
		want  map[string]string
	}{
		{"an event", event, nil, map[string]string{"mcpServer": "research", "error": "timeout"}},
		{"an event with the attribute", event, attr("docs"), map[string]string{"mcpServer": "docs", "error": "timeout"}},
		{"a tool call is read as before", `{"toolName":"x","mcpServer":"body-says","error":{"code":"e"}}`, attr("docs"), map[string]string{"mcpServer": "docs", "error": "e"}},
		{"a tool call's body is no stand-in for its attribute", `{"toolName":"x","mcpServer":"body-says"}`, nil, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := dimensionValues(dims, tt.attrs, parseBody(tt.body)); !maps.Equal(got, tt.want) {
				t.Errorf("dimensions = %v; want %v", got, tt.want)
			}
		})
	}
}

// cancellingSQS is the real client with one twist: it cancels the pass's context right after
// the first ReceiveMessage returns, as a shutdown would.
type cancellingSQS struct {
	*sqs.Client
	cancel context.CancelFunc
}

func (c cancellingSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	out, err := c.Client.ReceiveMessage(ctx, in, optFns...)
	c.cancel()
	return out, err
}

func TestPeekReleasesWhenCancelled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 15)
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	c := e.collector(func(o *Options) {
		o.Regions = []Region{{Name: "us-east-1", SQS: cancellingSQS{Client: e.sqs, cancel: cancel}}}
	})
	must(t, c.Discover(e.ctx))
	_ = c.PeekDue(ctx)
	if n := e.sim.CallCount("ChangeMessageVisibilityBatch"); n != 1 {
		t.Errorf("ChangeMessageVisibilityBatch calls = %d, want 1 for the 10 messages taken", n)
	}
	for _, m := range e.snapshot("web-search-dlq") {
		if m.InFlight {
			t.Errorf("%s left in flight by a cancelled pass", m.MessageID)
		}
	}
}

func TestDeadLetterQueueSampledAsSoonAsItFills(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	s, _ := e.latestMessages("web-search-dlq")
	if s.Seen != 0 || s.Receives != 0 {
		t.Errorf("empty DLQ sample = %+v, want no receive spent", s)
	}

	e.deadLetter(srcURL, "web-search-dlq", 2) // a few seconds of clock
	must(t, c.CycleAttributes(e.ctx))
	e.advance(peekDueCheck)
	must(t, c.PeekDue(e.ctx))
	s, _ = e.latestMessages("web-search-dlq")
	if s.Seen != 2 {
		t.Errorf("DLQ that filled was not sampled at the next due check: %+v", s)
	}
	if since := e.clock.Now().Sub(t0); since >= DefaultPeekDeadLetterInterval {
		t.Fatalf("test took %v of clock: not a check of early sampling", since)
	}
}

// secondReceiveFails is the real client whose second ReceiveMessage of a pass fails or panics,
// after the first took ten messages.
type secondReceiveFails struct {
	*sqs.Client
	panics   bool
	receives *int
}

func (s secondReceiveFails) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	*s.receives++
	if *s.receives == 2 {
		if s.panics {
			panic("hostile answer")
		}
		return nil, errors.New("connection reset")
	}
	return s.Client.ReceiveMessage(ctx, in, optFns...)
}

// TestPeekReleasesWhenAPassFails: whatever ends a pass early, every message it took is handed
// back at once and the failure is recorded; nothing is deleted.
func TestPeekReleasesWhenAPassFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		panics   bool
		wantCode string
	}{
		{"a receive fails", false, "transport"},
		{"a receive panics", true, "panic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
			e.deadLetter(srcURL, "web-search-dlq", 15)
			receives := 0
			c := e.collector(func(o *Options) {
				o.Regions = []Region{{Name: "us-east-1", SQS: secondReceiveFails{Client: e.sqs, panics: tt.panics, receives: &receives}}}
			})
			must(t, c.Discover(e.ctx))
			e.sim.ResetCallCounts()
			_ = c.PeekDue(e.ctx)
			if n := e.sim.CallCount("ChangeMessageVisibilityBatch"); n != 1 {
				t.Errorf("ChangeMessageVisibilityBatch calls = %d, want 1 for the 10 messages taken", n)
			}
			if n := e.sim.CallCount("DeleteMessage") + e.sim.CallCount("DeleteMessageBatch"); n != 0 {
				t.Errorf("%d delete calls", n)
			}
			for _, m := range e.snapshot("web-search-dlq") {
				if m.InFlight {
					t.Errorf("%s left in flight by a failed pass", m.MessageID)
				}
			}
			dlq := e.queueNamed("web-search-dlq")
			if errs := e.errors(dlq.ID); !slices.ContainsFunc(errs, func(ce store.CollectorError) bool { return ce.Code == tt.wantCode }) {
				t.Errorf("errors = %+v, want one with code %s", errs, tt.wantCode)
			}
		})
	}
}
