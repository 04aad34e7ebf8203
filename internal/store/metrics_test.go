package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

func TestMetricStat(t *testing.T) {
	t.Parallel()
	tests := []struct{ metric, want string }{
		{"NumberOfMessagesSent", StatSum},
		{"NumberOfEmptyReceives", StatSum},
		{"SentMessageSize", StatAverage},
		{"ApproximateAgeOfOldestMessage", StatMaximum},
		{"ApproximateNumberOfMessagesVisible", StatMaximum},
		{"SomethingNew", StatMaximum},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			if got := MetricStat(tt.metric); got != tt.want {
				t.Errorf("MetricStat(%s) = %s; want %s", tt.metric, got, tt.want)
			}
		})
	}
	if n := len(MetricNames()); n != 11 || !slices.IsSorted(MetricNames()) {
		t.Errorf("MetricNames() has %d names (sorted=%v); want the 11 AWS/SQS metrics sorted", n, slices.IsSorted(MetricNames()))
	}
}

func TestMetricPoints(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a")
		b := addQueue(t, s, "b")
		addQueue(t, s, "no-metrics")

		var pts []MetricPoint
		for i := range 5 {
			at := t0.Add(time.Duration(i) * time.Minute)
			pts = append(pts,
				MetricPoint{QueueID: a.ID, Metric: "NumberOfMessagesSent", At: at, Period: 60, Value: float64(i)},
				MetricPoint{QueueID: a.ID, Metric: "ApproximateAgeOfOldestMessage", At: at, Period: 60, Value: float64(10 * i)},
			)
		}
		pts = append(pts, MetricPoint{QueueID: b.ID, Metric: "NumberOfMessagesSent", At: t0, Period: 60, Value: 1})
		if err := s.UpsertMetricPoints(ctx, pts); err != nil {
			t.Fatalf("UpsertMetricPoints: %v", err)
		}
		// Same key again: replaced, not duplicated.
		if err := s.UpsertMetricPoints(ctx, []MetricPoint{{QueueID: a.ID, Metric: "NumberOfMessagesSent", At: t0, Period: 60, Value: 42}}); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertMetricPoints(ctx, nil); err != nil {
			t.Errorf("UpsertMetricPoints(nil) = %v", err)
		}

		series, err := s.MetricSeries(ctx, a.ID, "NumberOfMessagesSent", t0, t0.Add(3*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var vals []float64
		for _, p := range series {
			vals = append(vals, p.Value)
		}
		if !slices.Equal(vals, []float64{42, 1, 2}) {
			t.Errorf("series = %v; want [42 1 2]", vals)
		}
		if empty, err := s.MetricSeries(ctx, a.ID, "Unknown", t0, t0.Add(time.Hour)); err != nil || empty == nil || len(empty) != 0 {
			t.Errorf("series of an unknown metric = %v, %v; want empty", empty, err)
		}

		latest, err := s.LatestMetricValues(ctx, a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if p := latest["ApproximateAgeOfOldestMessage"]; p.Value != 40 || !p.At.Equal(t0.Add(4*time.Minute)) || p.Period != 60 {
			t.Errorf("latest age = %+v", p)
		}
		if len(latest) != 2 {
			t.Errorf("latest has %d metrics; want 2", len(latest))
		}

		newest, err := s.NewestMetricTimes(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !newest[a.ID].Equal(t0.Add(4*time.Minute)) || !newest[b.ID].Equal(t0) || len(newest) != 2 {
			t.Errorf("NewestMetricTimes = %v", newest)
		}

		if err := s.UpsertMetricPoints(ctx, []MetricPoint{{QueueID: 404, Metric: "NumberOfMessagesSent", At: t0, Period: 60}}); err == nil {
			t.Error("a datapoint of a missing queue was stored")
		}
	})
}

func TestLatestMetricPoints(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a")
		b := addQueue(t, s, "b")
		const age = "ApproximateAgeOfOldestMessage"
		err := s.UpsertMetricPoints(ctx, []MetricPoint{
			{QueueID: a.ID, Metric: age, At: t0, Period: 60, Value: 1},
			{QueueID: a.ID, Metric: age, At: t0.Add(time.Minute), Period: 60, Value: 2},
			{QueueID: a.ID, Metric: "NumberOfMessagesSent", At: t0.Add(time.Hour), Period: 60, Value: 3},
			{QueueID: b.ID, Metric: age, At: t0, Period: 300, Value: 7},
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.LatestMetricPoints(ctx, age)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[a.ID].Value != 2 || got[b.ID].Value != 7 || got[b.ID].Period != 300 {
			t.Errorf("LatestMetricPoints = %+v", got)
		}
	})
}

// TestMetricSeriesOfQueues: one statement reads one metric of the queues asked, each as
// MetricSeries reads it alone; the other queues, metrics and times stay out.
func TestMetricSeriesOfQueues(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a, b, c := addQueue(t, s, "a"), addQueue(t, s, "b"), addQueue(t, s, "c")
		const empty = "NumberOfEmptyReceives"
		err := s.UpsertMetricPoints(ctx, []MetricPoint{
			{QueueID: a.ID, Metric: empty, At: t0.Add(-time.Minute), Period: 60, Value: 9}, // before since
			{QueueID: a.ID, Metric: empty, At: t0.Add(time.Minute), Period: 60, Value: 2},
			{QueueID: a.ID, Metric: empty, At: t0, Period: 300, Value: 5},
			{QueueID: a.ID, Metric: empty, At: t0, Period: 60, Value: 1},
			{QueueID: a.ID, Metric: empty, At: t0.Add(time.Hour), Period: 60, Value: 9}, // at until
			{QueueID: a.ID, Metric: "NumberOfMessagesSent", At: t0, Period: 60, Value: 9},
			{QueueID: b.ID, Metric: empty, At: t0.Add(2 * time.Minute), Period: 60, Value: 3},
			{QueueID: c.ID, Metric: empty, At: t0, Period: 60, Value: 9}, // not asked
		})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.MetricSeriesOfQueues(ctx, []int64{a.ID, b.ID, 404}, empty, t0, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64][]float64{a.ID: {1, 5, 2}, b.ID: {3}}
		if len(got) != len(want) {
			t.Errorf("MetricSeriesOfQueues has %d queues; want %d: %+v", len(got), len(want), got)
		}
		for id, values := range want {
			alone, err := s.MetricSeries(ctx, id, empty, t0, t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var gotValues []float64
			for i, p := range got[id] {
				gotValues = append(gotValues, p.Value)
				if p.QueueID != id || p.Metric != empty || i >= len(alone) || !p.At.Equal(alone[i].At) || p.Period != alone[i].Period {
					t.Errorf("queue %d point %d = %+v; MetricSeries reads %+v", id, i, p, alone)
				}
			}
			if !slices.Equal(gotValues, values) {
				t.Errorf("queue %d values = %v; want %v", id, gotValues, values)
			}
		}
		none, err := s.MetricSeriesOfQueues(ctx, nil, empty, t0, t0.Add(time.Hour))
		if err != nil || len(none) != 0 {
			t.Errorf("no queues: %v, %v", none, err)
		}
	})
}

// TestUpsertMetricPointsInBatches: more points than one statement takes are all stored; a point
// given twice in one call counts once, the later value; a point stored again replaces the value.
func TestUpsertMetricPointsInBatches(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "jobs")
		var pts []MetricPoint
		for i := range metricBatch + 20 {
			pts = append(pts, MetricPoint{QueueID: q.ID, Metric: "NumberOfMessagesSent", At: t0.Add(time.Duration(i) * time.Minute), Period: 60, Value: float64(i)})
		}
		pts = append(pts, MetricPoint{QueueID: q.ID, Metric: "NumberOfMessagesSent", At: t0, Period: 60, Value: 99})
		if err := s.UpsertMetricPoints(ctx, pts); err != nil {
			t.Fatal(err)
		}
		if err := s.UpsertMetricPoints(ctx, []MetricPoint{{QueueID: q.ID, Metric: "NumberOfMessagesSent", At: t0.Add(time.Minute), Period: 60, Value: 7}}); err != nil {
			t.Fatal(err)
		}
		got, err := s.MetricSeries(ctx, q.ID, "NumberOfMessagesSent", t0, t0.Add(24*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != metricBatch+20 || got[0].Value != 99 || got[1].Value != 7 || got[len(got)-1].Value != float64(metricBatch+19) {
			t.Errorf("%d points, first %v, second %v, last %v; want %d, 99, 7, %d", len(got), got[0].Value, got[1].Value, got[len(got)-1].Value, metricBatch+20, metricBatch+19)
		}
	})
}
