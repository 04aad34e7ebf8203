package views

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
)

// now is the tests' fixed clock: views tests never read the wall clock.
var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const account = "arn:aws:sqs:us-east-1:123456789012:"

// fixture is a store filled through its own methods, and a Service over it.
type fixture struct {
	t     testing.TB
	ctx   context.Context
	store *store.Store
	svc   *Service
	ids   map[string]int64 // queue name → id
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	return newFixtureAt(t, storetest.Path(t))
}

// newFixtureAt is newFixture on the database db names (a SQLite file or a postgres:// URL).
func newFixtureAt(t testing.TB, db string) *fixture {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return &fixture{
		t: t, ctx: context.Background(), store: st, ids: map[string]int64{},
		svc: New(Options{Store: st, Now: func() time.Time { return now }}),
	}
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// idOf resolves a queue reference (name or ARN) as a handler would, once; 0 when it names no
// queue, which the by-id methods answer with ErrNotFound.
func (f *fixture) idOf(ref string) int64 {
	f.t.Helper()
	k, err := f.svc.ResolveQueue(f.ctx, ref)
	if err != nil {
		return 0
	}
	return k.ID
}

// queue adds a queue in us-east-1.
func (f *fixture) queue(name string) int64 {
	f.t.Helper()
	id, err := f.store.UpsertQueue(f.ctx, store.Queue{
		Region: "us-east-1", Name: name, ARN: account + name, URL: "https://sqs/" + name,
		FIFO: filepath.Ext(name) == ".fifo", FirstSeen: now.Add(-24 * time.Hour), LastSeen: now,
	})
	f.must(err)
	f.ids[name] = id
	return id
}

// attrs records a queue's attributes (with a redrive policy when dlq is not empty) and a depth
// sample at `at`: visible messages, and one in flight in a working queue (a consumer has it),
// none in a dead-letter queue (named …-dlq…: nobody consumes it, and a message in flight there
// is one it holds).
func (f *fixture) attrs(name, dlq string, maxReceive int, retentionSeconds int, at time.Time, visible int64) {
	f.t.Helper()
	inFlight := int64(1)
	if strings.Contains(name, "-dlq") {
		inFlight = 0
	}
	a := map[string]string{"MessageRetentionPeriod": fmt.Sprint(retentionSeconds), "QueueArn": account + name}
	target := ""
	if dlq != "" {
		target = account + dlq
		a["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, target, maxReceive)
	}
	f.must(f.store.SaveQueueAttributes(f.ctx, store.QueueAttributes{QueueID: f.ids[name], At: at, Attributes: a, DeadLetterTargetARN: target, MaxReceiveCount: maxReceive, Depth: store.AttributeSample{At: at, Visible: visible, InFlight: inFlight}}))
}

// empty records a depth sample of nothing visible, in flight or delayed at `at`, keeping the
// queue's attributes.
func (f *fixture) empty(name string, at time.Time) {
	f.t.Helper()
	q, err := f.store.GetQueue(f.ctx, f.ids[name])
	f.must(err)
	f.must(f.store.SaveQueueAttributes(f.ctx, store.QueueAttributes{QueueID: q.ID, At: at, Attributes: q.Attributes, DeadLetterTargetARN: q.DeadLetterTargetARN, MaxReceiveCount: q.MaxReceiveCount, Depth: store.AttributeSample{At: at}}))
}

// finishedRun records an attributes cycle that ended at `at`.
func (f *fixture) finishedRun(at time.Time) {
	f.t.Helper()
	id, err := f.store.StartRun(f.ctx, store.RunAttributes, at.Add(-time.Second))
	f.must(err)
	f.must(f.store.FinishRun(f.ctx, store.CollectorRun{ID: id, FinishedAt: at, Queues: 7, Calls: 7}))
}

// toolMessages makes n DLQ messages of a FIFO tool-call queue.
func toolMessages(n int, source string) []store.SampledMessage {
	tools := []string{"create_document", "append_section"}
	out := make([]store.SampledMessage, n)
	for i := range out {
		body := fmt.Sprintf(`{"toolCallId":"tc_%d","toolName":%q,"toolArgs":{"title":"doc %d"},"sessionId":"sess_%d","sequenceNumber":%d}`,
			i, tools[i%2], i, i%3, i)
		out[i] = store.SampledMessage{
			MessageID:           fmt.Sprintf("msg-%03d", i),
			GroupID:             fmt.Sprintf("sess_%d", i%3),
			DeduplicationID:     fmt.Sprintf("tc_%d", i),
			ReceiveCount:        5,
			SentAt:              now.Add(-time.Duration(n-i) * time.Minute),
			DeadLetterSourceARN: account + source,
			Attributes:          []store.MessageAttribute{{Name: "traceparent", DataType: "String", Value: "00-1-2-01"}},
			Body:                body,
			BodySize:            len(body),
			ToolName:            tools[i%2],
			ToolCallID:          fmt.Sprintf("tc_%d", i),
			SessionID:           fmt.Sprintf("sess_%d", i%3),
		}
	}
	return out
}

// scenario fills the store with the demo's queues in a known state:
//
//   - tool-calls.fifo → tool-calls-dlq.fifo (maxReceiveCount 5): the DLQ grew from 1 to 3
//     messages in the last 10 minutes (critical: growing); the source has a blocked group in its
//     newest sample (opted in) and its DLQ holds messages (warning).
//   - web-search → web-search-dlq: healthy, empty DLQ.
//   - notifications: no DLQ, oldest message 10 min old (warning).
//   - exports → exports-dlq: both keep messages 4 days (DLQ retention warning), 150 messages in
//     the DLQ (critical), a collector error on exports.
func (f *fixture) scenario() {
	f.t.Helper()
	for _, n := range []string{"tool-calls.fifo", "tool-calls-dlq.fifo", "web-search", "web-search-dlq", "notifications", "exports", "exports-dlq"} {
		f.queue(n)
	}
	const fourDays, fourteenDays = 4 * 86400, 14 * 86400
	// Depth history: a sample every minute for the last hour, the newest 5 s ago.
	for i := 60; i >= 0; i-- {
		at := now.Add(-time.Duration(i)*time.Minute - 5*time.Second)
		dlqDepth := int64(1)
		if i < 10 {
			dlqDepth = 3
		}
		f.attrs("tool-calls.fifo", "tool-calls-dlq.fifo", 5, fourDays, at, int64(10+i%7))
		f.attrs("tool-calls-dlq.fifo", "", 0, fourteenDays, at, dlqDepth)
		f.attrs("web-search", "web-search-dlq", 3, fourDays, at, 2)
		f.attrs("web-search-dlq", "", 0, fourteenDays, at, 0)
		f.attrs("notifications", "", 0, fourDays, at, 40)
		f.attrs("exports", "exports-dlq", 3, fourDays, at, 0)
		f.attrs("exports-dlq", "", 0, fourDays, at, 150)
	}
	f.finishedRun(now.Add(-5 * time.Second))

	f.must(f.store.UpsertMetricPoints(f.ctx, []store.MetricPoint{
		{QueueID: f.ids["notifications"], Metric: "ApproximateAgeOfOldestMessage", At: now.Add(-2 * time.Minute), Period: 60, Value: 600},
		{QueueID: f.ids["web-search"], Metric: "ApproximateAgeOfOldestMessage", At: now.Add(-2 * time.Minute), Period: 60, Value: 12},
		{QueueID: f.ids["web-search"], Metric: "NumberOfMessagesSent", At: now.Add(-2 * time.Minute), Period: 60, Value: 30},
	}))

	// The DLQ's newest sample: 3 messages of the source.
	_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: f.ids["tool-calls-dlq.fifo"], Kind: store.SampleDeadLetter,
		At: now.Add(-30 * time.Second), Seen: 3, ApproxVisible: 3, Receives: 1, MessagesTaken: 3}, toolMessages(3, "tool-calls.fifo"), nil)
	f.must(err)

	// The source queue, opted in: one blocked session, one flowing.
	f.must(f.store.SetPeekEnabled(f.ctx, f.ids["tool-calls.fifo"], true))
	_, err = f.store.SaveSample(f.ctx, store.Sample{QueueID: f.ids["tool-calls.fifo"], Kind: store.SampleSource,
		At: now.Add(-20 * time.Second), Seen: 4, ApproxVisible: 10, Receives: 2, MessagesTaken: 4},
		[]store.SampledMessage{
			{MessageID: "s-1", GroupID: "sess_42", ReceiveCount: 4, NearMaxReceive: true, SentAt: now.Add(-time.Hour)},
			{MessageID: "s-2", GroupID: "sess_42", ReceiveCount: 0, SentAt: now.Add(-50 * time.Minute)},
			{MessageID: "s-3", GroupID: "sess_7", ReceiveCount: 0, SentAt: now.Add(-time.Minute)},
		},
		[]store.GroupBacklog{
			{GroupID: "sess_7", Messages: 1, OldestSentAt: now.Add(-time.Minute), HeadMessageID: "s-3"},
			{GroupID: "sess_42", Messages: 2, OldestSentAt: now.Add(-time.Hour), HeadMessageID: "s-1", HeadReceiveCount: 4, Blocked: true},
		})
	f.must(err)

	f.must(f.store.RecordError(f.ctx, store.CollectorError{QueueID: f.ids["exports"], Operation: "GetQueueAttributes",
		Code: "AccessDenied", Message: "not authorized", At: now.Add(-time.Minute)}))
}
