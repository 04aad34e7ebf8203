package views

import (
	"reflect"
	"testing"
	"time"
)

func TestProblemsCountEachOnce(t *testing.T) {
	t.Parallel()
	dlq := QueueSummary{Name: "web-search-dlq", Region: "us-east-1", SourceQueues: []string{"web-search"}, Health: Health{Findings: []Finding{
		{Kind: ProblemDeadLetter, Status: HealthWarning, Reason: "3 messages in the dead-letter queue"},
		{Kind: ProblemDeadLetter, Status: HealthCritical, Reason: "growing: 1 → 3 messages in 5 min"},
	}}}
	fifo := QueueSummary{Name: "tool-calls.fifo", Region: "us-east-1", Health: Health{Findings: []Finding{
		{Kind: ProblemBlocked, Status: HealthWarning, Reason: "group a blocked: head received 2 times"},
		{Kind: ProblemBlocked, Status: HealthWarning, Reason: "group b blocked: head received 3 times"},
		{Kind: ProblemUnknown, Status: HealthUnknown, Reason: "oldest message age unknown: no CloudWatch datapoint yet"},
	}}}
	ok := QueueSummary{Name: "web-search", Health: Health{Notes: []string{"3 messages in its dead-letter queue web-search-dlq"}}}
	sight := []SightProblem{{Region: "eu-west-1", Blind: true, Problem: "eu-west-1: ListQueues fails with AccessDenied"}}

	got := problems([]QueueSummary{ok, fifo, dlq}, sight)
	want := []struct {
		kind     ProblemKind
		queue    string
		severity HealthStatus
		text     string
	}{
		{ProblemDeadLetter, "web-search-dlq", HealthCritical, "3 messages in the dead-letter queue; growing: 1 → 3 messages in 5 min (from web-search)"},
		{ProblemSight, "", HealthCritical, "eu-west-1: ListQueues fails with AccessDenied"},
		{ProblemBlocked, "tool-calls.fifo", HealthWarning, "group a blocked: head received 2 times; group b blocked: head received 3 times"},
	}
	if len(got) != len(want) {
		t.Fatalf("problems = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Kind != w.kind || g.Queue != w.queue || g.Severity != w.severity || g.Text != w.text {
			t.Errorf("problem %d = %+v, want %+v", i, g, w)
		}
	}
	if c, w := ProblemCounts(got); c != 2 || w != 1 {
		t.Errorf("counts = %d critical, %d warning; want 2, 1", c, w)
	}
}

// TestSummaryProblemsAreTheOverviews: the summary a bot posts and the overview a person reads list
// the same problems, in the same order, with the same words.
func TestSummaryProblemsAreTheOverviews(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("jobs-dlq")
	f.queue("jobs")
	f.attrs("jobs", "jobs-dlq", 3, 345600, now.Add(-5*time.Second), 2)
	f.attrs("jobs-dlq", "", 0, 1209600, now.Add(-5*time.Second), 4)
	ov, err := f.svc.Overview(f.ctx)
	f.must(err)
	sum, err := f.svc.Summary(f.ctx)
	f.must(err)
	if len(ov.Problems) == 0 {
		t.Fatal("the overview lists no problem; the fixture's DLQ holds 4 messages")
	}
	if !reflect.DeepEqual(sum.Problems, ov.Problems) {
		t.Errorf("summary problems %+v\noverview problems %+v", sum.Problems, ov.Problems)
	}
}

// TestProblemsOfOneSeverityAreOrderedByGrowthAndSize: among problems of one kind and severity,
// what grows comes first, then the largest, so the deepest dead-letter queue tops the list
// whatever its name.
func TestProblemsOfOneSeverityAreOrderedByGrowthAndSize(t *testing.T) {
	t.Parallel()
	dlq := func(name string, depth float64, growing bool) QueueSummary {
		fs := []Finding{{Kind: ProblemDeadLetter, Status: HealthWarning, Reason: "messages in the dead-letter queue", Size: depth}}
		if growing {
			fs = append(fs, Finding{Kind: ProblemDeadLetter, Status: HealthWarning, Reason: "growing", Size: depth, Growing: true})
		}
		return QueueSummary{Name: name, Health: Health{Findings: fs}}
	}
	got := problems([]QueueSummary{
		dlq("a-small-dlq", 4, false),
		dlq("b-deep-dlq", 59, false),
		dlq("c-growing-dlq", 2, true),
		dlq("d-mid-dlq", 12, false),
		dlq("e-tied-dlq", 12, false),
	}, nil)
	var names []string
	for _, p := range got {
		names = append(names, p.Queue)
	}
	want := []string{"c-growing-dlq", "b-deep-dlq", "d-mid-dlq", "e-tied-dlq", "a-small-dlq"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
}
