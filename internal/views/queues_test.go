package views

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

func TestResolveQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("web-search")
	gone := f.queue("old-queue")
	f.must(f.store.MarkQueueGone(f.ctx, gone, now))
	// The same name in a second region.
	_, err := f.store.UpsertQueue(f.ctx, store.Queue{Region: "eu-west-1", Name: "twin", ARN: "arn:aws:sqs:eu-west-1:123456789012:twin", LastSeen: now})
	f.must(err)
	f.queue("twin")

	tests := []struct {
		ref     string
		want    string
		wantErr error
	}{
		{"web-search", "web-search", nil},
		{account + "web-search", "web-search", nil},
		{"old-queue", "old-queue", nil},
		{"twin", "", ErrAmbiguous},
		{"arn:aws:sqs:eu-west-1:123456789012:twin", "twin", nil},
		{"nope", "", ErrNotFound},
		{account + "nope", "", ErrNotFound},
		{"", "", ErrNotFound},
		{"../../etc/passwd", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			q, err := f.svc.ResolveQueue(f.ctx, tt.ref)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v; want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || q.Name != tt.want {
				t.Errorf("ResolveQueue = %q, %v; want %q", q.Name, err, tt.want)
			}
		})
	}
}

func TestOverview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	ov, err := f.svc.Overview(f.ctx)
	if err != nil {
		t.Fatal(err)
	}

	var order []string
	for _, q := range ov.Queues {
		order = append(order, string(q.Health.Status)+" "+q.Name)
	}
	want := []string{
		"critical exports-dlq", "critical tool-calls-dlq.fifo",
		"warning exports", "warning notifications", "warning tool-calls.fifo",
		"ok web-search", "ok web-search-dlq",
	}
	if !slices.Equal(order, want) {
		t.Errorf("order =\n%q\nwant\n%q", order, want)
	}

	by := map[string]QueueSummary{}
	for _, q := range ov.Queues {
		by[q.Name] = q
	}
	reasons := map[string][]string{
		"exports-dlq": {"150 messages in the dead-letter queue",
			"retention 4 d is not longer than source exports's 4 d: messages can expire before anyone looks"},
		"tool-calls-dlq.fifo": {"3 messages in the dead-letter queue", "growing: 1 → 3 messages in 15 min"},
		"exports":             {"1 collector error in 5 min (last: AccessDenied on GetQueueAttributes)"},
		"notifications":       {"oldest message is 10 min old"},
		"tool-calls.fifo":     {"group sess_42 blocked: head failed 4 times", "1 message near maxReceiveCount 5"},
		"web-search":          {},
	}
	for name, want := range reasons {
		if got := by[name].Health.Reasons; !slices.Equal(got, want) {
			t.Errorf("%s reasons = %q; want %q", name, got, want)
		}
	}

	// A DLQ problem counts once, on the DLQ's row; its source's row points to it.
	if got := by["exports"].Health.Notes; !slices.Equal(got, []string{"150 messages in its dead-letter queue exports-dlq"}) {
		t.Errorf("exports notes = %q", got)
	}
	tc := by["tool-calls.fifo"]
	if tc.DeadLetterQueue == nil || *tc.DeadLetterQueue != "tool-calls-dlq.fifo" || tc.DeadLetterQueueDepth == nil || *tc.DeadLetterQueueDepth != 3 {
		t.Errorf("tool-calls.fifo DLQ = %v/%v", tc.DeadLetterQueue, tc.DeadLetterQueueDepth)
	}
	if tc.MaxReceiveCount == nil || *tc.MaxReceiveCount != 5 || !tc.FIFO || tc.IsDeadLetterQueue {
		t.Errorf("tool-calls.fifo = %+v", tc)
	}
	if d := by["tool-calls-dlq.fifo"]; !d.IsDeadLetterQueue || !slices.Equal(d.SourceQueues, []string{"tool-calls.fifo"}) {
		t.Errorf("DLQ sources = %v", d.SourceQueues)
	}
	if n := by["notifications"]; n.OldestMessageAgeSeconds == nil || *n.OldestMessageAgeSeconds != 600 || n.DeadLetterQueue != nil {
		t.Errorf("notifications = %+v", n)
	}
	if a := by["notifications"].Advice; len(a) != 1 || a[0].Rule != "no-dlq" {
		t.Errorf("notifications' advice = %+v, want no-dlq", a)
	}
	if sp := tc.Sparkline; len(sp) == 0 || len(sp) > 60 {
		t.Errorf("sparkline has %d points; want 1..60", len(sp))
	}
	if by["tool-calls-dlq.fifo"].Sparkline[len(by["tool-calls-dlq.fifo"].Sparkline)-1] != 3 {
		t.Errorf("sparkline does not end on the newest depth: %v", by["tool-calls-dlq.fifo"].Sparkline)
	}
	if tc.SampledAt == nil || !tc.SampledAt.Equal(now.Add(-5*time.Second)) {
		t.Errorf("SampledAt = %v", tc.SampledAt)
	}

	// Misconfigured: the queues without a dead-letter queue whose attributes were read (the
	// advisor's no-dlq), notifications among them. One message is in flight in each of the four
	// working queues.
	wantTotals := Totals{Queues: 7, Visible: 10 + 3 + 2 + 0 + 40 + 0 + 150, InFlight: 4, DLQMessages: 153, Warning: 3, Critical: 2, Misconfigured: 2}
	if ov.Totals != wantTotals {
		t.Errorf("totals = %+v; want %+v", ov.Totals, wantTotals)
	}
	if ov.Freshness.Stale || ov.Freshness.AgeSeconds != 5 || !ov.Freshness.UpdatedAt.Equal(now.Add(-5*time.Second)) {
		t.Errorf("freshness = %+v", ov.Freshness)
	}
	if ov.Cost.At != nil || ov.Cost.TotalUSDPerDay != 0 {
		t.Errorf("cost before an estimate = %+v", ov.Cost)
	}

	f.must(f.store.SetCostEstimate(f.ctx, store.CostEstimate{At: now, TotalUSDPerDay: 0.15, SQSUSDPerDay: 0.03, CloudWatchUSDPerDay: 0.12}))
	ov, err = f.svc.Overview(f.ctx)
	if err != nil || ov.Cost.At == nil || ov.Cost.TotalUSDPerDay != 0.15 {
		t.Errorf("cost = %+v, %v", ov.Cost, err)
	}
}

func TestQueuesFilter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	tests := []struct {
		name string
		q    QueueQuery
		want []string
	}{
		{"all", QueueQuery{}, []string{"exports-dlq", "tool-calls-dlq.fifo", "exports", "notifications", "tool-calls.fifo", "web-search", "web-search-dlq"}},
		{"critical", QueueQuery{Health: []HealthStatus{HealthCritical}}, []string{"exports-dlq", "tool-calls-dlq.fifo"}},
		{"unhealthy", QueueQuery{Health: []HealthStatus{HealthWarning, HealthCritical}}, []string{"exports-dlq", "tool-calls-dlq.fifo", "exports", "notifications", "tool-calls.fifo"}},
		{"DLQs", QueueQuery{DLQOnly: true}, []string{"exports-dlq", "tool-calls-dlq.fifo", "web-search-dlq"}},
		{"healthy DLQs", QueueQuery{DLQOnly: true, Health: []HealthStatus{HealthOK}}, []string{"web-search-dlq"}},
		{"none", QueueQuery{Health: []HealthStatus{"bogus"}}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			qs, err := f.svc.Queues(f.ctx, tt.q)
			if err != nil || qs == nil {
				t.Fatalf("Queues = %v, %v", qs, err)
			}
			got := []string{}
			for _, q := range qs {
				got = append(got, q.Name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Queues(%+v) = %v; want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestQueueDetail(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	d, err := f.svc.Queue(f.ctx, f.idOf("tool-calls.fifo"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Attributes["MessageRetentionPeriod"] != "345600" || d.AttributesAt == nil {
		t.Errorf("attributes = %v at %v", d.Attributes, d.AttributesAt)
	}
	want := PeekStatus{Enabled: true, Kind: "source", LastSampleAt: d.Peek.LastSampleAt, Seen: 4, ApproxVisible: 10, Coverage: 0.4,
		ReceivesLastHour: 2, ReceivesLastDay: 2, MessagesTakenLastDay: 4, OwnReceiveLimit: d.Peek.OwnReceiveLimit}
	if d.MaxReceiveCount == nil || d.Peek.OwnReceiveLimit == nil || *d.Peek.OwnReceiveLimit != store.OwnReceiveLimit(*d.MaxReceiveCount) {
		t.Errorf("ownReceiveLimit = %v for maxReceiveCount %d; want maxReceiveCount − 2", d.Peek.OwnReceiveLimit, d.MaxReceiveCount)
	}
	if d.Peek != want || d.Peek.LastSampleAt == nil {
		t.Errorf("peek = %+v; want %+v", d.Peek, want)
	}
	if d.Redrive != nil {
		t.Errorf("a source queue has a redrive: %+v", d.Redrive)
	}
	if d.Freshness.Stale {
		t.Errorf("freshness = %+v", d.Freshness)
	}

	ws, err := f.svc.Queue(f.ctx, f.idOf("web-search"))
	if err != nil {
		t.Fatal(err)
	}
	if m := ws.Metrics["NumberOfMessagesSent"]; m.Value != 30 || m.Period != 60 || len(ws.Metrics) != 2 {
		t.Errorf("metrics = %+v", ws.Metrics)
	}

	ex, err := f.svc.Queue(f.ctx, f.idOf(account+"exports"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Errors) != 1 || ex.Errors[0].Code != "AccessDenied" {
		t.Errorf("errors = %+v", ex.Errors)
	}

	dlq := f.ids["exports-dlq"]
	_, err = f.store.UpsertMoveTask(f.ctx, store.MoveTask{QueueID: dlq, TaskHandle: "h", Status: store.MoveTaskRunning,
		SourceARN: account + "exports-dlq", Moved: 50, ToMove: 150, StartedAt: now.Add(-50 * time.Second)})
	f.must(err)
	dd, err := f.svc.Queue(f.ctx, f.idOf("exports-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	if dd.Redrive == nil || !dd.Redrive.Running || !dd.RunningRedrive {
		t.Errorf("DLQ redrive = %+v (runningRedrive %v)", dd.Redrive, dd.RunningRedrive)
	}

	if _, err := f.svc.Queue(f.ctx, f.idOf("nope")); !errors.Is(err, ErrNotFound) {
		t.Errorf("Queue(nope) = %v; want ErrNotFound", err)
	}
}

// TestQueueDetailMatchesOverview: a queue page reads only its own queue's depth series, and must
// still say of the queue exactly what the overview says (sparkline, growth, health).
func TestQueueDetailMatchesOverview(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	// A sample taken at the very instant of the view ends the overview's sparkline: the queue
	// page's narrower read must reach it too.
	f.attrs("web-search-dlq", "", 0, 14*86400, now, 9)
	ov, err := f.svc.Overview(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range ov.Queues {
		t.Run(row.Name, func(t *testing.T) {
			d, err := f.svc.Queue(f.ctx, f.idOf(row.Name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d.QueueSummary, row) {
				t.Errorf("queue page summary =\n%+v\nwant the overview's row\n%+v", d.QueueSummary, row)
			}
		})
	}
}

// TestJSONListsAreNeverNull checks the API contract on an empty store and on the scenario: lists
// marshal as [] and maps as {}, never null.
func TestJSONListsAreNeverNull(t *testing.T) {
	t.Parallel()
	for _, filled := range []bool{false, true} {
		f := newFixture(t)
		f.queue("lonely")
		if filled {
			f.scenario()
		}
		results := map[string]func() (any, error){
			"overview": func() (any, error) { return f.svc.Overview(f.ctx) },
			"queues":   func() (any, error) { return f.svc.Queues(f.ctx, QueueQuery{Health: []HealthStatus{"none"}}) },
			"queue":    func() (any, error) { return f.svc.Queue(f.ctx, f.idOf("lonely")) },
			"series": func() (any, error) {
				return f.svc.Series(f.ctx, f.idOf("lonely"), "NumberOfMessagesSent", now.Add(-time.Hour), now)
			},
			"groups":   func() (any, error) { return f.svc.Groups(f.ctx, f.idOf("lonely")) },
			"messages": func() (any, error) { return f.svc.Messages(f.ctx, f.idOf("lonely"), MessageQuery{}) },
			"redrives": func() (any, error) { return f.svc.Redrives(f.ctx, f.idOf("lonely")) },
			"audit":    func() (any, error) { return f.svc.Audit(f.ctx, AuditQuery{}) },
			"summary":  func() (any, error) { return f.svc.Summary(f.ctx) },
		}
		for name, fn := range results {
			v, err := fn()
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			js, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s: marshal: %v", name, err)
			}
			for _, field := range []string{"queues", "reasons", "sourceQueues", "attributes", "metrics", "errors", "points", "groups", "tools", "messages", "unhealthy", "deadLetterQueues", "runningRedrives"} {
				if strings.Contains(string(js), `"`+field+`":null`) {
					t.Errorf("filled=%v %s: %q is null in %s", filled, name, field, js)
				}
			}
			if string(js) == "null" {
				t.Errorf("filled=%v %s marshals to null", filled, name)
			}
		}
	}
}

func TestFreshness(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	fr, err := f.svc.Freshness(f.ctx)
	if err != nil || !fr.Stale || !fr.UpdatedAt.IsZero() {
		t.Errorf("before any run = %+v, %v; want stale with zero UpdatedAt", fr, err)
	}
	f.finishedRun(now.Add(-2 * time.Minute))
	fr, err = f.svc.Freshness(f.ctx)
	if err != nil || !fr.Stale || fr.AgeSeconds != 120 {
		t.Errorf("2 min old = %+v, %v; want stale, 120 s", fr, err)
	}
	f.finishedRun(now.Add(-10 * time.Second))
	fr, err = f.svc.Freshness(f.ctx)
	if err != nil || fr.Stale || fr.AgeSeconds != 10 {
		t.Errorf("10 s old = %+v, %v; want fresh, 10 s", fr, err)
	}
	js, _ := json.Marshal(fr)
	if !strings.Contains(string(js), `"updatedAt":"2026-03-01T11:59:50Z"`) {
		t.Errorf("freshness JSON = %s; want an RFC 3339 UTC time", js)
	}
}

// TestOldestAgeOfDeadLetterQueue: CloudWatch's ApproximateAgeOfOldestMessage skips messages
// received three times or more, so it reads 0 for a DLQ full of old messages: a DLQ's age comes
// from its newest sample alone (the age at the sample's time), while the queue holds messages.
func TestOldestAgeOfDeadLetterQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		sampleAt   time.Time
		visible    int64
		cloudWatch float64
		want       *float64
	}{
		{"sample, whatever CloudWatch says", now.Add(-time.Minute), 4, 0, ptr(9 * 60.0)},
		{"CloudWatch older than the sample is not used", now.Add(-time.Minute), 4, 3600, ptr(9 * 60.0)},
		{"sample too old to count", now.Add(-20 * time.Minute), 4, 0, nil},
		{"an empty queue has no age", now.Add(-time.Minute), 0, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.queue("jobs-dlq")
			f.queue("jobs")
			f.attrs("jobs", "jobs-dlq", 3, 345600, now.Add(-5*time.Second), 0)
			f.attrs("jobs-dlq", "", 0, 1209600, now.Add(-5*time.Second), tt.visible)
			if tt.visible == 0 {
				f.empty("jobs-dlq", now.Add(-4*time.Second))
			}
			f.must(f.store.UpsertMetricPoints(f.ctx, []store.MetricPoint{
				{QueueID: f.ids["jobs-dlq"], Metric: "ApproximateAgeOfOldestMessage", At: now.Add(-2 * time.Minute), Period: 60, Value: tt.cloudWatch},
			}))
			msgs := toolMessages(10, "jobs") // sent 10 … 1 minutes before now
			_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: f.ids["jobs-dlq"], Kind: store.SampleDeadLetter, At: tt.sampleAt, Seen: 10, ApproxVisible: 10}, msgs, nil)
			f.must(err)
			q, err := f.svc.Queue(f.ctx, f.idOf("jobs-dlq"))
			f.must(err)
			if !equalPtr(q.OldestMessageAgeSeconds, tt.want) {
				t.Fatalf("oldestMessageAgeSeconds = %v, want %v", deref(q.OldestMessageAgeSeconds), deref(tt.want))
			}
			if tt.want != nil && (q.OldestMessageAgeSource != "sample" || q.OldestMessageAgeAt == nil || !q.OldestMessageAgeAt.Equal(tt.sampleAt)) {
				t.Errorf("age source %q at %v, want the sample at %v", q.OldestMessageAgeSource, q.OldestMessageAgeAt, tt.sampleAt)
			}
		})
	}
}

// TestOldestAgeOfWorkingQueue: a working queue's age is CloudWatch's alone, with its minute; an
// old sample does not override it, and an empty queue has none.
func TestOldestAgeOfWorkingQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		visible int64
		pointAt time.Time
		want    *float64
	}{
		{"CloudWatch's newest datapoint", 3, now.Add(-2 * time.Minute), ptr(73.0)},
		{"too old a datapoint", 3, now.Add(-time.Hour), nil},
		{"an empty queue", 0, now.Add(-2 * time.Minute), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.queue("jobs")
			f.attrs("jobs", "", 0, 345600, now.Add(-5*time.Second), tt.visible)
			if tt.visible == 0 {
				f.empty("jobs", now.Add(-4*time.Second))
			}
			f.must(f.store.UpsertMetricPoints(f.ctx, []store.MetricPoint{
				{QueueID: f.ids["jobs"], Metric: "ApproximateAgeOfOldestMessage", At: tt.pointAt, Period: 60, Value: 73},
			}))
			// A sample of older messages (the source was opted in) does not count.
			_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: f.ids["jobs"], Kind: store.SampleSource, At: now.Add(-3 * time.Minute), Seen: 10, ApproxVisible: 10}, toolMessages(10, "jobs"), nil)
			f.must(err)
			q, err := f.svc.Queue(f.ctx, f.idOf("jobs"))
			f.must(err)
			if !equalPtr(q.OldestMessageAgeSeconds, tt.want) {
				t.Fatalf("oldestMessageAgeSeconds = %v, want %v", deref(q.OldestMessageAgeSeconds), deref(tt.want))
			}
			if tt.want != nil && (q.OldestMessageAgeSource != "cloudwatch" || !q.OldestMessageAgeAt.Equal(tt.pointAt)) {
				t.Errorf("age source %q at %v, want CloudWatch's minute %v", q.OldestMessageAgeSource, q.OldestMessageAgeAt, tt.pointAt)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
