package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunsAndErrors(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "q")

		if _, err := s.LatestRun(ctx, RunAttributes); !errors.Is(err, ErrNotFound) {
			t.Errorf("LatestRun before any = %v; want ErrNotFound", err)
		}
		first, err := s.StartRun(ctx, RunAttributes, t0)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishRun(ctx, CollectorRun{ID: first, FinishedAt: t0.Add(time.Second), Queues: 3, Calls: 4, Errors: 1}); err != nil {
			t.Fatal(err)
		}
		// A run still going does not count as the latest.
		if _, err := s.StartRun(ctx, RunAttributes, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, err := s.LatestRun(ctx, RunAttributes)
		if err != nil {
			t.Fatal(err)
		}
		want := CollectorRun{ID: first, Kind: RunAttributes, StartedAt: t0, FinishedAt: t0.Add(time.Second), Queues: 3, Calls: 4, Errors: 1}
		if got != want {
			t.Errorf("LatestRun = %+v; want %+v", got, want)
		}
		if runs, err := s.RunsSince(ctx, RunAttributes, t0); err != nil || len(runs) != 1 || runs[0] != want {
			t.Errorf("RunsSince = %+v, %v; want the finished run alone", runs, err)
		}
		if runs, err := s.RunsSince(ctx, RunAttributes, t0.Add(time.Second)); err != nil || len(runs) != 0 {
			t.Errorf("RunsSince after its start = %+v, %v; want none", runs, err)
		}
		if _, err := s.LatestRun(ctx, RunMetrics); !errors.Is(err, ErrNotFound) {
			t.Errorf("LatestRun(metrics) = %v; want ErrNotFound", err)
		}
		if err := s.FinishRun(ctx, CollectorRun{ID: 404, FinishedAt: t0}); !errors.Is(err, ErrNotFound) {
			t.Errorf("FinishRun(404) = %v; want ErrNotFound", err)
		}

		for i, e := range []CollectorError{
			{RunID: first, QueueID: q.ID, Operation: "GetQueueAttributes", Code: "AccessDenied", Message: "no", At: t0},
			{RunID: first, Operation: "ListQueues", Code: "transport", Message: "reset", At: t0.Add(time.Minute)},
			{QueueID: q.ID, Operation: "GetMetricData", Code: "Throttling", At: t0.Add(-time.Hour)},
		} {
			if err := s.RecordError(ctx, e); err != nil {
				t.Fatalf("RecordError %d: %v", i, err)
			}
		}
		tests := []struct {
			name    string
			queueID int64
			since   time.Time
			want    []string
		}{
			{"all recent", 0, t0, []string{"ListQueues", "GetQueueAttributes"}},
			{"one queue", q.ID, t0.Add(-2 * time.Hour), []string{"GetQueueAttributes", "GetMetricData"}},
			{"none", q.ID, t0.Add(time.Hour), []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				es, err := s.ErrorsSince(ctx, tt.queueID, tt.since)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{}
				for _, e := range es {
					got = append(got, e.Operation)
				}
				if len(got) != len(tt.want) || (len(got) > 0 && got[0] != tt.want[0]) {
					t.Errorf("ErrorsSince = %v; want %v", got, tt.want)
				}
			})
		}
	})
}

func TestCostEstimate(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		if _, err := s.GetCostEstimate(ctx); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetCostEstimate before any = %v; want ErrNotFound", err)
		}
		for _, c := range []CostEstimate{
			{At: t0, SQSRequestsPerDay: 1, TotalUSDPerDay: 1},
			{At: t0.Add(time.Hour), SQSRequestsPerDay: 86400, MetricsPerDay: 11520, SQSUSDPerDay: 0.03456, CloudWatchUSDPerDay: 0.1152, TotalUSDPerDay: 0.14976},
		} {
			if err := s.SetCostEstimate(ctx, c); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetCostEstimate(ctx)
			if err != nil || !got.At.Equal(c.At) || got.TotalUSDPerDay != c.TotalUSDPerDay || got.MetricsPerDay != c.MetricsPerDay {
				t.Errorf("GetCostEstimate = %+v, %v; want %+v", got, err, c)
			}
		}
	})
}

// TestLatestRunSkipsRunsThatCollectedNothing: a run whose every call failed (the endpoint down)
// stored nothing new, so freshness must keep counting from the last run that collected
// something, and Prune must keep that run even when failed runs came after it.
func TestLatestRunSkipsRunsThatCollectedNothing(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		runs := []struct {
			name          string
			calls, errors int
			useful        bool
		}{
			{"partial failure", 7, 3, true},
			{"every call failed", 7, 7, false},
			{"nothing to call", 0, 0, true},
			{"more errors than calls", 2, 3, false},
		}
		for _, tt := range runs {
			t.Run(tt.name, func(t *testing.T) {
				s := open(t)
				ok, err := s.StartRun(ctx, RunAttributes, t0.Add(-10*24*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.FinishRun(ctx, CollectorRun{ID: ok, FinishedAt: t0.Add(-10 * 24 * time.Hour), Queues: 7, Calls: 7}); err != nil {
					t.Fatal(err)
				}
				id, err := s.StartRun(ctx, RunAttributes, t0.Add(-9*24*time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				if err := s.FinishRun(ctx, CollectorRun{ID: id, FinishedAt: t0.Add(-9 * 24 * time.Hour), Queues: 7, Calls: tt.calls, Errors: tt.errors}); err != nil {
					t.Fatal(err)
				}
				want := ok
				if tt.useful {
					want = id
				}
				for _, step := range []string{"before prune", "after prune"} {
					if step == "after prune" {
						if _, err := s.Prune(ctx, t0, Retention{}); err != nil {
							t.Fatal(err)
						}
					}
					got, err := s.LatestRun(ctx, RunAttributes)
					if err != nil || got.ID != want {
						t.Errorf("%s: LatestRun = run %d, %v; want run %d", step, got.ID, err, want)
					}
				}
			})
		}
	})
}
