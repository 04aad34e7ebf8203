package views

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

func TestEvaluateHealth(t *testing.T) {
	t.Parallel()
	th := DefaultThresholds()
	fresh := &store.AttributeSample{At: now.Add(-5 * time.Second)}
	busy := &store.AttributeSample{At: now.Add(-5 * time.Second), Visible: 3}
	depth := func(v int64, ago time.Duration) *store.AttributeSample {
		return &store.AttributeSample{At: now.Add(-ago), Visible: v}
	}
	int64p := func(v int64) *int64 { return &v }
	dlq := store.Queue{Name: "web-search-dlq", SourceARNs: []string{account + "web-search"},
		Attributes: map[string]string{"MessageRetentionPeriod": "1209600"}}
	source := store.Queue{Name: "web-search", MaxReceiveCount: 3, DeadLetterTargetARN: account + "web-search-dlq",
		Attributes: map[string]string{"MessageRetentionPeriod": "345600"}}
	plain := store.Queue{Name: "notifications"}
	newQueue := store.Queue{Name: "notifications", FirstSeen: now.Add(-2 * time.Minute)}

	tests := []struct {
		name    string
		facts   healthFacts
		status  HealthStatus
		reasons []string
	}{
		{"healthy", healthFacts{Queue: plain, Latest: fresh}, HealthOK, []string{}},
		{"no data yet", healthFacts{Queue: plain}, HealthWarning, []string{"no data yet"}},
		{"stale", healthFacts{Queue: plain, Latest: depth(0, 95*time.Second)}, HealthWarning, []string{"data is 1 min old"}},
		{"stale seconds", healthFacts{Queue: plain, Latest: depth(0, 50*time.Second)}, HealthWarning, []string{"data is 50 s old"}},
		{"an empty, quiet queue read every minute is not stale at 95 s", healthFacts{Queue: plain, Latest: depth(0, 95*time.Second), StaleAfter: 3 * time.Minute},
			HealthOK, []string{}},
		{"stale past its own cadence", healthFacts{Queue: plain, Latest: depth(0, 200*time.Second), StaleAfter: 3 * time.Minute},
			HealthWarning, []string{"data is 3 min old"}},
		{"just filled: empty 2 min ago, so no message is older", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			EmptyAt: now.Add(-2 * time.Minute)}, HealthOK, []string{}},
		{"filled long enough ago to need the datapoint", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			EmptyAt: now.Add(-6 * time.Minute)}, HealthUnknown, []string{"oldest message age unknown: no CloudWatch datapoint in 15 min"}},
		{"a slower age cadence widens the window", healthFacts{Queue: plain, Latest: busy, AgeWindow: 45 * time.Minute,
			OldestAge: &store.MetricPoint{At: now.Add(-40 * time.Minute), Value: 360}}, HealthWarning, []string{"oldest message is 6 min old"}},
		{"gone", healthFacts{Queue: store.Queue{Name: "old", GoneAt: now.Add(-3 * time.Hour)}, Latest: depth(5, 3*time.Hour)},
			HealthWarning, []string{"queue no longer exists (gone 3 h ago)"}},
		{"DLQ holds messages", healthFacts{Queue: dlq, Latest: depth(3, 0)}, HealthWarning,
			[]string{"3 messages in the dead-letter queue"}},
		{"DLQ one message", healthFacts{Queue: dlq, Latest: depth(1, 0)}, HealthWarning,
			[]string{"1 message in the dead-letter queue"}},
		{"DLQ critical depth", healthFacts{Queue: dlq, Latest: depth(100, 0)}, HealthCritical,
			[]string{"100 messages in the dead-letter queue"}},
		{"DLQ growing", healthFacts{Queue: dlq, Latest: depth(5, 0), Earlier: depth(2, 15*time.Minute)}, HealthCritical,
			[]string{"5 messages in the dead-letter queue", "growing: 2 → 5 messages in 15 min"}},
		// The collector's peek holds a DLQ's messages in flight for seconds once a minute: an
		// attribute read then sees none visible, and the DLQ still holds them all.
		{"DLQ whose messages are all in flight (a peek under way)", healthFacts{Queue: dlq, Latest: &store.AttributeSample{At: now, InFlight: 5}},
			HealthWarning, []string{"5 messages in the dead-letter queue"}},
		{"DLQ partly in flight and delayed", healthFacts{Queue: dlq, Latest: &store.AttributeSample{At: now, Visible: 60, InFlight: 30, Delayed: 10}},
			HealthCritical, []string{"100 messages in the dead-letter queue"}},
		{"DLQ read in flight is not growing against one read visible", healthFacts{Queue: dlq, Latest: &store.AttributeSample{At: now, Visible: 5},
			Earlier: &store.AttributeSample{At: now.Add(-15 * time.Minute), InFlight: 5}}, HealthWarning, []string{"5 messages in the dead-letter queue"}},
		{"DLQ shrinking", healthFacts{Queue: dlq, Latest: depth(2, 0), Earlier: depth(5, 15*time.Minute)}, HealthWarning,
			[]string{"2 messages in the dead-letter queue"}},
		{"source whose DLQ holds messages: the DLQ's row counts it", healthFacts{Queue: source, Latest: fresh, DLQName: "web-search-dlq", DLQHeld: int64p(4)},
			HealthOK, []string{}},
		{"source whose DLQ is empty", healthFacts{Queue: source, Latest: fresh, DLQName: "web-search-dlq", DLQHeld: int64p(0)},
			HealthOK, []string{}},
		{"oldest warning", healthFacts{Queue: plain, Latest: busy, OldestAge: &store.MetricPoint{At: now.Add(-time.Minute), Value: 360}},
			HealthWarning, []string{"oldest message is 6 min old"}},
		{"oldest critical", healthFacts{Queue: plain, Latest: busy, OldestAge: &store.MetricPoint{At: now.Add(-time.Minute), Value: 7200}},
			HealthCritical, []string{"oldest message is 2 h old"}},
		{"oldest young", healthFacts{Queue: plain, Latest: busy, OldestAge: &store.MetricPoint{At: now.Add(-time.Minute), Value: 30}},
			HealthOK, []string{}},
		{"oldest from an old datapoint is ignored", healthFacts{Queue: plain, Latest: busy, OldestAge: &store.MetricPoint{At: now.Add(-time.Hour), Value: 7200}},
			HealthOK, []string{}},
		{"an empty queue has no oldest message", healthFacts{Queue: plain, Latest: fresh, CloudWatchExpected: true,
			OldestAge: &store.MetricPoint{At: now.Add(-time.Minute), Value: 7200}}, HealthOK, []string{}},
		{"CloudWatch failing: the age rule is unknown, not fine", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			CloudWatchFailure: &store.OperationStatus{FailureCode: "AccessDenied"}},
			HealthUnknown, []string{"oldest message age unknown: CloudWatch GetMetricData fails (AccessDenied)"}},
		{"no recent datapoint: unknown", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			OldestAge: &store.MetricPoint{At: now.Add(-time.Hour), Value: 10}},
			HealthUnknown, []string{"oldest message age unknown: no CloudWatch datapoint in 15 min"}},
		{"a queue watched for minutes has no datapoint yet", healthFacts{Queue: newQueue, Latest: busy, CloudWatchExpected: true},
			HealthUnknown, []string{"oldest message age unknown: no CloudWatch datapoint yet (watched for 2 min)"}},
		{"a recent datapoint wins over a failure since", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			OldestAge:         &store.MetricPoint{At: now.Add(-time.Minute), Value: 360},
			CloudWatchFailure: &store.OperationStatus{FailureCode: "Throttling"}},
			HealthWarning, []string{"oldest message is 6 min old"}},
		{"CloudWatch failing since a young datapoint: fine while that proves it", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			OldestAge:         &store.MetricPoint{At: now.Add(-time.Minute), Value: 30},
			CloudWatchFailure: &store.OperationStatus{FailureCode: "RequestError"}},
			HealthOK, []string{}},
		{"CloudWatch failing since a young datapoint that no longer proves it: unknown, not fine", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			OldestAge:         &store.MetricPoint{At: now.Add(-10 * time.Minute), Value: 30},
			CloudWatchFailure: &store.OperationStatus{FailureCode: "RequestError"}},
			HealthUnknown, []string{"oldest message age unknown: CloudWatch GetMetricData fails (RequestError)"}},
		{"CloudWatch failing since a datapoint that would be old by now: unknown", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			OldestAge:         &store.MetricPoint{At: now.Add(-2 * time.Minute), Value: 240},
			CloudWatchFailure: &store.OperationStatus{FailureCode: "RequestError"}},
			HealthUnknown, []string{"oldest message age unknown: CloudWatch GetMetricData fails (RequestError)"}},
		{"unknown is worse than ok, better than warning", healthFacts{Queue: plain, Latest: busy, CloudWatchExpected: true,
			Errors: []store.CollectorError{{Operation: "GetQueueAttributes", Code: "Throttling"}}},
			HealthWarning, []string{"oldest message age unknown: no CloudWatch datapoint in 15 min", "1 collector error in 5 min (last: Throttling on GetQueueAttributes)"}},
		{"oldest on a DLQ is not a rule", healthFacts{Queue: dlq, Latest: fresh, OldestAge: &store.MetricPoint{At: now, Value: 7200}},
			HealthOK, []string{}},
		{"blocked group", healthFacts{Queue: plain, Latest: fresh, BlockedGroups: []store.GroupBacklog{{GroupID: "sess_42", HeadReceiveCount: 5}}},
			HealthWarning, []string{"group sess_42 blocked: head failed 5 times"}},
		{"hostile group id", healthFacts{Queue: plain, Latest: fresh, BlockedGroups: []store.GroupBacklog{{GroupID: "a\nb\u202e@here", HeadReceiveCount: 1}}},
			HealthWarning, []string{"group a b @here blocked: head failed 1 time"}},
		{"many blocked groups", healthFacts{Queue: plain, Latest: fresh, BlockedGroups: []store.GroupBacklog{{GroupID: "a", HeadReceiveCount: 2}, {GroupID: "b", HeadReceiveCount: 2}, {GroupID: "c", HeadReceiveCount: 2}, {GroupID: "d"}, {GroupID: "e"}}},
			HealthWarning, []string{"group a blocked: head failed 2 times", "group b blocked: head failed 2 times", "group c blocked: head failed 2 times", "2 more groups blocked"}},
		{"near max receive", healthFacts{Queue: source, Latest: fresh, NearMax: 2}, HealthWarning,
			[]string{"2 messages near maxReceiveCount 3"}},
		{"collector errors", healthFacts{Queue: plain, Latest: fresh, Errors: []store.CollectorError{{Operation: "GetQueueAttributes", Code: "AccessDenied"}, {Operation: "x"}}},
			HealthWarning, []string{"2 collector errors in 5 min (last: AccessDenied on GetQueueAttributes)"}},
		{"DLQ retention not longer than source", healthFacts{Queue: store.Queue{Name: "exports-dlq", SourceARNs: []string{"s"}, Attributes: map[string]string{"MessageRetentionPeriod": "345600"}},
			Latest: fresh, Sources: []store.Queue{source}},
			HealthWarning, []string{"retention 4 d is not longer than source web-search's 4 d: messages can expire before anyone looks"}},
		{"DLQ retention longer", healthFacts{Queue: dlq, Latest: fresh, Sources: []store.Queue{source}}, HealthOK, []string{}},
		{"FIFO DLQ retention resets on move", healthFacts{Queue: store.Queue{Name: "d.fifo", FIFO: true, SourceARNs: []string{"s"}, Attributes: map[string]string{"MessageRetentionPeriod": "60"}},
			Latest: fresh, Sources: []store.Queue{source}}, HealthOK, []string{}},
		{"worst rule wins", healthFacts{Queue: dlq, Latest: depth(200, 2*time.Minute)}, HealthCritical,
			[]string{"data is 2 min old", "200 messages in the dead-letter queue"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.facts.Now = now
			h := evaluateHealth(tt.facts, th)
			if h.Status != tt.status || !slices.Equal(h.Reasons, tt.reasons) {
				t.Errorf("health = %s %q; want %s %q", h.Status, h.Reasons, tt.status, tt.reasons)
			}
			wantNotes := []string{}
			if tt.facts.DLQHeld != nil && *tt.facts.DLQHeld > 0 {
				wantNotes = []string{fmt.Sprintf("%d messages in its dead-letter queue %s", *tt.facts.DLQHeld, tt.facts.DLQName)}
			}
			if !slices.Equal(h.Notes, wantNotes) {
				t.Errorf("notes = %q; want %q", h.Notes, wantNotes)
			}
		})
	}
}

func TestThresholdsDefaults(t *testing.T) {
	t.Parallel()
	got := Thresholds{DLQDepthCritical: 5}.withDefaults()
	want := DefaultThresholds()
	want.DLQDepthCritical = 5
	if got != want {
		t.Errorf("withDefaults = %+v; want %+v", got, want)
	}
}
