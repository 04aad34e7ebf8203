package views

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

func TestSeries(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.queue("web-search")
	f.queue("other")
	// CloudWatch backfill for the hour before the dashboard started, one point a minute...
	var pts []store.MetricPoint
	for i := range 10 {
		at := now.Add(-time.Duration(20-i) * time.Minute)
		pts = append(pts,
			store.MetricPoint{QueueID: id, Metric: "ApproximateNumberOfMessagesVisible", At: at, Period: 60, Value: 100 + float64(i)},
			store.MetricPoint{QueueID: id, Metric: "NumberOfMessagesSent", At: at, Period: 60, Value: float64(i)},
		)
	}
	// ...which overlaps the first attribute samples (taken from 12 min ago on).
	for i := range 3 {
		at := now.Add(-time.Duration(12-i) * time.Minute)
		f.attrs("web-search", "", 0, 345600, at, int64(i))
	}
	f.must(f.store.UpsertMetricPoints(f.ctx, pts))

	since, until := now.Add(-time.Hour), now
	tests := []struct {
		metric string
		want   []float64
	}{
		// Datapoints before the first sample (20..13 min ago), then the samples.
		{"ApproximateNumberOfMessagesVisible", []float64{100, 101, 102, 103, 104, 105, 106, 107, 0, 1, 2}},
		{"ApproximateNumberOfMessagesNotVisible", []float64{1, 1, 1}},
		{"ApproximateNumberOfMessagesDelayed", []float64{0, 0, 0}},
		{"NumberOfMessagesSent", []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{"NumberOfEmptyReceives", []float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			s, err := f.svc.Series(f.ctx, f.idOf("web-search"), tt.metric, since, until)
			if err != nil {
				t.Fatal(err)
			}
			got := []float64{}
			for _, p := range s.Points {
				got = append(got, p.Value)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("points = %v; want %v", got, tt.want)
			}
			if !slices.IsSortedFunc(s.Points, func(a, b Point) int { return a.At.Compare(b.At) }) {
				t.Error("points are not in time order")
			}
			if s.Queue != "web-search" || s.Name != tt.metric || !s.Since.Equal(since) || !s.Until.Equal(until) {
				t.Errorf("series header = %+v", s)
			}
		})
	}

	// Before any sample, a depth series is the backfill alone.
	s, err := f.svc.Series(f.ctx, f.idOf("web-search"), "ApproximateNumberOfMessagesVisible", since, now.Add(-13*time.Minute))
	if err != nil || len(s.Points) != 7 {
		t.Errorf("backfill-only series = %d points, %v; want 7", len(s.Points), err)
	}

	for _, bad := range []string{"", "approximatenumberofmessagesvisible", "Bogus", "NumberOfMessagesSent; DROP TABLE"} {
		if _, err := f.svc.Series(f.ctx, f.idOf("web-search"), bad, since, until); !errors.Is(err, ErrUnknownMetric) {
			t.Errorf("Series(%q) = %v; want ErrUnknownMetric", bad, err)
		}
	}
	if s, err := f.svc.Series(f.ctx, f.idOf("web-search"), "NumberOfMessagesSent", until, since); err != nil || len(s.Points) != 0 {
		t.Errorf("reversed range = %d points, %v; want none", len(s.Points), err)
	}
	if _, err := f.svc.Series(f.ctx, f.idOf("nope"), "NumberOfMessagesSent", since, until); !errors.Is(err, ErrNotFound) {
		t.Errorf("series of a missing queue = %v; want ErrNotFound", err)
	}
	if names := MetricNames(); len(names) != 11 || !slices.Contains(names, "ApproximateAgeOfOldestMessage") {
		t.Errorf("MetricNames = %v", names)
	}
}
