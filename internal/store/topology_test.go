package store

import (
	"context"
	"slices"
	"testing"
)

// TestEventSourceMappingsReplacedPerRegion: a complete listing of a region's mappings replaces
// that region's, and leaves the other regions' alone.
func TestEventSourceMappingsReplacedPerRegion(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		web, notify := addQueue(t, s, "web-search"), addQueue(t, s, "notifications")
		m := EventSourceMapping{UUID: "u1", QueueARN: web.ARN, FunctionARN: "arn:aws:lambda:us-east-1:1:function:f",
			State: "Enabled", BatchSize: 10, ReportBatchItemFailures: true, MaximumConcurrency: 5, FunctionTimeoutSeconds: 30, ReadAt: t0}
		other := m
		other.UUID, other.QueueARN = "u2", notify.ARN
		if err := s.ReplaceEventSourceMappings(ctx, "us-east-1", []EventSourceMapping{m, other}); err != nil {
			t.Fatal(err)
		}
		tokyo := m
		tokyo.UUID, tokyo.QueueARN = "u3", "arn:aws:sqs:ap-northeast-1:123456789012:web-search"
		if err := s.ReplaceEventSourceMappings(ctx, "ap-northeast-1", []EventSourceMapping{tokyo}); err != nil {
			t.Fatal(err)
		}
		got, err := s.EventSourceMappings(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 || got[2].QueueARN != web.ARN || got[2].Region != "us-east-1" || !got[2].ReportBatchItemFailures || got[2].MaximumConcurrency != 5 || !got[2].ReadAt.Equal(t0) {
			t.Fatalf("mappings = %+v", got)
		}
		// A region read again without web-search's mapping loses it; the other region keeps its own.
		if err := s.ReplaceEventSourceMappings(ctx, "us-east-1", []EventSourceMapping{other}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.EventSourceMappings(ctx)
		if len(got) != 2 || got[0].UUID != "u3" || got[1].UUID != "u2" {
			t.Fatalf("after us-east-1 was read again: %+v", got)
		}
	})
}

func TestEventBridgeTargetsMakeEventBridgeDeadLetterQueues(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		audit, dlq := addQueue(t, s, "tool-call-audit"), addQueue(t, s, "tool-call-audit-dlq")
		target := EventBridgeTarget{BusName: "mcp", RuleName: "tool-call-completed", RuleARN: "arn:aws:events:us-east-1:1:rule/mcp/tool-call-completed",
			RuleState: "ENABLED", TargetID: "audit", TargetARN: audit.ARN, DeadLetterARN: dlq.ARN, MaxEventAgeSeconds: 3600, MaxRetryAttempts: 3, ReadAt: t0}
		if err := s.ReplaceEventBridgeTargets(ctx, "us-east-1", []EventBridgeTarget{target}); err != nil {
			t.Fatal(err)
		}
		got, err := s.GetQueue(ctx, dlq.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.IsEventBridgeDeadLetterQueue() || got.IsDeadLetterQueue() || !slices.Equal(got.EventBridgeRuleARNs, []string{target.RuleARN}) {
			t.Errorf("the target's DLQ: EventBridge DLQ %v (rules %v), SQS DLQ %v", got.IsEventBridgeDeadLetterQueue(), got.EventBridgeRuleARNs, got.IsDeadLetterQueue())
		}
		if q, _ := s.GetQueue(ctx, audit.ID); q.IsEventBridgeDeadLetterQueue() {
			t.Errorf("the target itself is no DLQ")
		}
		targets, err := s.EventBridgeTargets(ctx)
		if err != nil || len(targets) != 1 || targets[0].Region != "us-east-1" || targets[0].MaxEventAgeSeconds != 3600 {
			t.Fatalf("targets = %+v, %v", targets, err)
		}
		// Another region's reading leaves this one alone; a new reading of it replaces it.
		if err := s.ReplaceEventBridgeTargets(ctx, "eu-west-1", nil); err != nil {
			t.Fatal(err)
		}
		if targets, _ := s.EventBridgeTargets(ctx); len(targets) != 1 {
			t.Errorf("eu-west-1's reading removed us-east-1's targets")
		}
		if err := s.ReplaceEventBridgeTargets(ctx, "us-east-1", nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.GetQueue(ctx, dlq.ID); got.IsEventBridgeDeadLetterQueue() {
			t.Errorf("still an EventBridge DLQ after its target went")
		}
	})
}

func TestQueueAlarmsReplacedPerRegion(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := QueueAlarm{AlarmName: "dlq-depth", QueueName: "web-search-dlq", MetricName: "ApproximateNumberOfMessagesVisible",
			State: "ALARM", StateUpdatedAt: t0, ActionsEnabled: true, ReadAt: t0}
		if err := s.ReplaceQueueAlarms(ctx, "us-east-1", []QueueAlarm{a}); err != nil {
			t.Fatal(err)
		}
		got, err := s.QueueAlarms(ctx)
		if err != nil || len(got) != 1 || got[0].Region != "us-east-1" || got[0].State != "ALARM" || !got[0].ActionsEnabled || !got[0].StateUpdatedAt.Equal(t0) {
			t.Fatalf("alarms = %+v, %v", got, err)
		}
		if err := s.ReplaceQueueAlarms(ctx, "us-east-1", nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.QueueAlarms(ctx); len(got) != 0 {
			t.Errorf("alarms after an empty reading = %+v", got)
		}
	})
}
