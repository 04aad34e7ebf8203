package store

import (
	"context"
	"testing"
	"time"
)

func TestOperationStatusesKeepTheNewest(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		failed := OperationStatus{
			Region: "us-east-1", Operation: "ListQueues", LastFailureAt: t0.Add(time.Minute),
			FailureCode: "AccessDenied", FailureMessage: "not authorized", FailureStatus: 403, FailuresInRow: 2,
		}
		ok := OperationStatus{Region: "us-east-1", Operation: "GetMetricData", LastSuccessAt: t0}
		if err := s.SaveOperationStatuses(ctx, []OperationStatus{failed, ok}); err != nil {
			t.Fatal(err)
		}
		// A late writer with an older failure and an older success changes neither.
		late := OperationStatus{Region: "us-east-1", Operation: "ListQueues", LastSuccessAt: t0, LastFailureAt: t0,
			FailureCode: "Throttling", FailuresInRow: 2}
		if err := s.SaveOperationStatuses(ctx, []OperationStatus{late}); err != nil {
			t.Fatal(err)
		}
		got, err := s.OperationStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("statuses = %+v", got)
		}
		lq := got[1]
		if lq.Operation != "ListQueues" || lq.FailureCode != "AccessDenied" || !lq.LastFailureAt.Equal(failed.LastFailureAt) ||
			!lq.LastSuccessAt.Equal(t0) || lq.FailureStatus != 403 || !lq.Failing() {
			t.Errorf("ListQueues = %+v", lq)
		}
		if got[0].Failing() {
			t.Errorf("GetMetricData = %+v, want not failing", got[0])
		}
		// A newer success ends the failure.
		if err := s.SaveOperationStatuses(ctx, []OperationStatus{{Region: "us-east-1", Operation: "ListQueues", LastSuccessAt: t0.Add(2 * time.Minute)}}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.OperationStatuses(ctx)
		if got[1].Failing() || got[1].FailureCode != "AccessDenied" {
			t.Errorf("after a success: %+v, want the old failure kept but not failing", got[1])
		}
	})
}

func TestLoopStatuses(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		if err := s.SaveLoopStatus(ctx, LoopStatus{Loop: RunAttributes, Region: "eu-west-1", FinishedAt: t0, LastSuccessAt: t0, Queues: 3, Calls: 3}); err != nil {
			t.Fatal(err)
		}
		// A failed cycle keeps the last success.
		if err := s.SaveLoopStatus(ctx, LoopStatus{Loop: RunAttributes, Region: "eu-west-1", FinishedAt: t0.Add(15 * time.Second), Queues: 3, FailedQueues: 3, Calls: 3, Failures: 3}); err != nil {
			t.Fatal(err)
		}
		got, err := s.LoopStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := LoopStatus{Loop: RunAttributes, Region: "eu-west-1", FinishedAt: t0.Add(15 * time.Second), LastSuccessAt: t0, Queues: 3, FailedQueues: 3, Calls: 3, Failures: 3}
		if len(got) != 1 || got[0] != want {
			t.Errorf("loop statuses = %+v, want [%+v]", got, want)
		}
	})
}

func TestLatestFinishedRunCountsFailedRuns(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		id, err := s.StartRun(ctx, RunDiscovery, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.LatestFinishedRun(ctx, RunDiscovery); err == nil {
			t.Fatal("an unfinished run counts as finished")
		}
		if err := s.FinishRun(ctx, CollectorRun{ID: id, FinishedAt: t0.Add(time.Second), Calls: 2, Errors: 2}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LatestRun(ctx, RunDiscovery); err == nil {
			t.Error("LatestRun counts a run whose every call failed")
		}
		if r, err := s.LatestFinishedRun(ctx, RunDiscovery); err != nil || r.ID != id {
			t.Errorf("LatestFinishedRun = %+v, %v", r, err)
		}
	})
}

// TestForgetScopesExcept: the statuses of scopes no longer watched go, those of the watched
// scopes stay whole.
func TestForgetScopesExcept(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		s := open(t)
		ctx := context.Background()
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		for _, scope := range []string{"us-east-1", "prod/us-east-1", "eu-west-1"} {
			if err := s.SaveOperationStatuses(ctx, []OperationStatus{{Region: scope, Operation: "ListQueues", LastFailureAt: t0, FailureCode: "AccessDenied"}}); err != nil {
				t.Fatal(err)
			}
			if err := s.SaveLoopStatus(ctx, LoopStatus{Loop: RunDiscovery, Region: scope, FinishedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		n, err := s.ForgetScopesExcept(ctx, []string{"prod/us-east-1", "eu-west-1"})
		if err != nil || n != 2 {
			t.Fatalf("ForgetScopesExcept = %d, %v; want the 2 rows of us-east-1", n, err)
		}
		ops, err := s.OperationStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		loops, err := s.LoopStatuses(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(ops) != 2 || len(loops) != 2 || ops[0].Region != "eu-west-1" || ops[1].Region != "prod/us-east-1" ||
			!ops[1].Failing() || loops[1].Region != "prod/us-east-1" {
			t.Errorf("left: operations %+v, loops %+v; want eu-west-1's and prod/us-east-1's, as they were", ops, loops)
		}
		if n, err := s.ForgetScopesExcept(ctx, nil); err != nil || n != 0 {
			t.Errorf("ForgetScopesExcept(nil) = %d, %v; want nothing forgotten", n, err)
		}
	})
}
