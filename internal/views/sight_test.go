package views

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// blindRegion stores what the collector records when it cannot list a region's queues: a
// failed discovery, and an attribute cycle over nothing.
func (f *fixture) blindRegion(region string) {
	f.t.Helper()
	f.must(f.store.SaveOperationStatuses(f.ctx, []store.OperationStatus{{
		Region: region, Operation: "ListQueues", LastFailureAt: now.Add(-10 * time.Second), FailureCode: "AccessDenied",
		FailureMessage: "User: arn:aws:iam::123456789012:user/toolq is not authorized to perform: sqs:listqueues", FailureStatus: 403, FailuresInRow: 3,
	}}))
	f.must(f.store.SaveLoopStatus(f.ctx, store.LoopStatus{Loop: store.RunDiscovery, Region: region, FinishedAt: now.Add(-10 * time.Second), Calls: 1, Failures: 1}))
	f.must(f.store.SaveLoopStatus(f.ctx, store.LoopStatus{Loop: store.RunAttributes, Region: region, FinishedAt: now.Add(-5 * time.Second), LastSuccessAt: now.Add(-5 * time.Second)}))
}

// cloudWatchFailing stores a region whose metrics cycles fail.
func (f *fixture) cloudWatchFailing(region string) {
	f.t.Helper()
	f.must(f.store.SaveOperationStatuses(f.ctx, []store.OperationStatus{{
		Region: region, Operation: "GetMetricData", LastSuccessAt: now.Add(-time.Hour), LastFailureAt: now.Add(-time.Minute),
		FailureCode: "AccessDeniedException", FailureMessage: "not authorized to perform cloudwatch:GetMetricData", FailureStatus: 400,
	}}))
	f.must(f.store.SaveLoopStatus(f.ctx, store.LoopStatus{Loop: store.RunMetrics, Region: region, FinishedAt: now.Add(-time.Minute), Queues: 7, FailedQueues: 7, Calls: 1, Failures: 1}))
}

// TestBlindIsNeverGreen: with no queue seen because listing is denied, an attribute cycle over
// nothing "succeeds", yet the summary, the overview and the status say toolq cannot see.
func TestBlindIsNeverGreen(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.finishedRun(now.Add(-5 * time.Second))
	f.blindRegion("us-east-1")

	sum, err := f.svc.Summary(f.ctx)
	f.must(err)
	text := sum.Text("")
	if strings.Contains(text, "queues healthy") {
		t.Errorf("summary says healthy while blind:\n%s", text)
	}
	for _, want := range []string{
		"toolq: CANNOT SEE us-east-1; ",
		"CANNOT SEE us-east-1: cannot list its queues: ListQueues failed with AccessDenied (needs sqs:ListQueues): User: arn:aws:iam::123456789012:user/toolq is not authorized",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	if len(sum.Sight) != 1 || !sum.Sight[0].Blind || sum.Sight[0].Permission != "sqs:ListQueues" || sum.Sight[0].Code != "AccessDenied" || sum.Sight[0].Since != nil {
		t.Errorf("summary sight = %+v", sum.Sight)
	}
	ov, err := f.svc.Overview(f.ctx)
	f.must(err)
	if !slices.Equal(ov.Freshness.Blind, []string{"us-east-1"}) || len(ov.Sight) != 1 {
		t.Errorf("overview freshness %+v, sight %+v; want us-east-1 blind", ov.Freshness, ov.Sight)
	}
	st, err := f.svc.Status(f.ctx)
	f.must(err)
	if len(st.Regions) != 1 || !st.Regions[0].Blind {
		t.Fatalf("status regions = %+v", st.Regions)
	}
	ops := st.Regions[0].Operations
	if len(ops) < 10 || ops[0].Operation != "ListQueues" || !ops[0].Failing || ops[0].FailureHTTPStatus != 403 || ops[0].Permission != "sqs:ListQueues" {
		t.Errorf("status operations = %+v", ops)
	}
	for _, op := range ops[1:] {
		if op.Called {
			t.Errorf("%s reported as called", op.Operation)
		}
	}
	if loops := st.Regions[0].Loops; len(loops) != 2 || loops[0].Loop != "discovery" || loops[0].OK || !loops[1].OK {
		t.Errorf("status loops = %+v", loops)
	}
}

// TestSomeQueueReadsFailed: a cycle that read some queues but not all is no blindness, but the
// summary never calls it healthy either.
func TestSomeQueueReadsFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.finishedRun(now.Add(-5 * time.Second))
	f.must(f.store.SaveOperationStatuses(f.ctx, []store.OperationStatus{{
		Region: "eu-west-1", Operation: "GetQueueAttributes", LastSuccessAt: now.Add(-6 * time.Second), LastFailureAt: now.Add(-5 * time.Second),
		FailureCode: "HTTP500", FailureMessage: "HTTP 500 from the endpoint, with a body that is not an AWS error", FailureStatus: 500,
	}}))
	f.must(f.store.SaveLoopStatus(f.ctx, store.LoopStatus{Loop: store.RunAttributes, Region: "eu-west-1", FinishedAt: now.Add(-5 * time.Second),
		LastSuccessAt: now.Add(-5 * time.Second), Queues: 10, FailedQueues: 3, Calls: 10, Failures: 3}))
	sum, err := f.svc.Summary(f.ctx)
	f.must(err)
	text := sum.Text("")
	want := "CANNOT READ eu-west-1: 3 of 10 queues could not be read in the last cycle: GetQueueAttributes failed with HTTP500: HTTP 500 from the endpoint"
	if !strings.Contains(text, want) || strings.Contains(text, "queues healthy") || !strings.HasPrefix(text, "toolq: no unhealthy queue among those it could read") {
		t.Errorf("summary:\n%s\nwant a line %q and no \"healthy\"", text, want)
	}
	if len(sum.Sight) != 1 || sum.Sight[0].Blind {
		t.Errorf("sight = %+v, want one problem that is no blindness", sum.Sight)
	}
}

// TestCloudWatchFailureShowsOnEveryQueueOfTheRegion: a region-wide GetMetricData failure is
// stored without a queue; it must still reach each queue of the region, and the oldest-age rule
// says unknown.
func TestCloudWatchFailureShowsOnEveryQueueOfTheRegion(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.finishedRun(now.Add(-5 * time.Second))
	f.queue("jobs")
	f.attrs("jobs", "", 0, 345600, now.Add(-5*time.Second), 12)
	f.cloudWatchFailing("us-east-1")
	q, err := f.svc.Queue(f.ctx, f.idOf("jobs"))
	f.must(err)
	if q.Health.Status != HealthUnknown || !slices.Contains(q.Health.Reasons, "oldest message age unknown: CloudWatch GetMetricData fails (AccessDeniedException)") {
		t.Errorf("health = %+v, want unknown", q.Health)
	}
	if !strings.HasPrefix(q.MetricsProblem, "CloudWatch metrics of jobs are missing (ApproximateAgeOfOldestMessage, ") ||
		!strings.Contains(q.MetricsProblem, "GetMetricData fails in us-east-1 with AccessDeniedException since its last success at 11:00:00 UTC") {
		t.Errorf("metrics problem = %q", q.MetricsProblem)
	}
	ov, err := f.svc.Overview(f.ctx)
	f.must(err)
	if ov.Totals.Unknown != 1 || len(ov.Sight) != 1 || ov.Sight[0].Blind ||
		ov.Sight[0].Problem != "us-east-1: CloudWatch metrics are missing (oldest-message ages, sends, receives): GetMetricData failed with AccessDeniedException (needs cloudwatch:GetMetricData): not authorized to perform cloudwatch:GetMetricData" {
		t.Errorf("totals %+v, sight %+v", ov.Totals, ov.Sight)
	}
	sum, err := f.svc.Summary(f.ctx)
	f.must(err)
	if text := sum.Text(""); !strings.Contains(text, "UNKNOWN jobs: oldest message age unknown") || !strings.HasPrefix(text, "toolq: 1 queue whose health is unknown,") {
		t.Errorf("summary:\n%s", text)
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	var nr *NotReadyError
	if err := f.svc.Ready(f.ctx); !errors.As(err, &nr) || nr.Reason != "the first discovery has not ended yet" {
		t.Errorf("before a discovery: %v", err)
	}
	// A discovery whose every call failed still ends the wait: AWS trouble is shown, not hidden.
	id, err := f.store.StartRun(f.ctx, store.RunDiscovery, now.Add(-time.Second))
	f.must(err)
	f.must(f.store.FinishRun(f.ctx, store.CollectorRun{ID: id, FinishedAt: now, Calls: 1, Errors: 1}))
	if err := f.svc.Ready(f.ctx); err != nil {
		t.Errorf("after a failed discovery: %v, want ready", err)
	}
}

func TestDeadLetterChainAndTier(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("tool-calls")
	f.queue("tool-calls-dlq")
	f.queue("tool-calls-dlq2")
	f.attrs("tool-calls", "tool-calls-dlq", 3, 345600, now.Add(-5*time.Second), 1)
	f.attrs("tool-calls-dlq", "tool-calls-dlq2", 5, 1209600, now.Add(-5*time.Second), 2)
	f.attrs("tool-calls-dlq2", "", 0, 1209600, now.Add(-5*time.Second), 0)
	src, err := f.svc.Queue(f.ctx, f.idOf("tool-calls"))
	f.must(err)
	if !slices.Equal(src.DeadLetterChain, []string{"tool-calls-dlq", "tool-calls-dlq2"}) || src.Tier {
		t.Errorf("source chain %q tier %v", src.DeadLetterChain, src.Tier)
	}
	tier, err := f.svc.Queue(f.ctx, f.idOf("tool-calls-dlq"))
	f.must(err)
	if !slices.Equal(tier.DeadLetterChain, []string{"tool-calls-dlq2"}) || !tier.Tier || !tier.IsDeadLetterQueue {
		t.Errorf("tier chain %q tier %v", tier.DeadLetterChain, tier.Tier)
	}
	final, err := f.svc.Queue(f.ctx, f.idOf("tool-calls-dlq2"))
	f.must(err)
	if len(final.DeadLetterChain) != 0 || final.Tier || !slices.Equal(final.SourceQueues, []string{"tool-calls-dlq"}) {
		t.Errorf("final chain %q tier %v sources %q", final.DeadLetterChain, final.Tier, final.SourceQueues)
	}
}
