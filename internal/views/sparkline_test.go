package views

import (
	"slices"
	"testing"
	"time"
)

// depth is a depth sample for these tests: how long before the view it was taken, and its
// visible count.
type depth struct {
	ago     time.Duration
	visible int64
}

// TestSparkline: the overview and the queue page draw each of the last 60 whole minutes, the
// current one included, as the minute's highest visible depth, oldest first, skipping minutes
// without samples; with the clock on the minute, a sample an hour old is out and one taken now is
// the current minute's.
func TestSparkline(t *testing.T) {
	t.Parallel()
	everyMinute := func(last int64) []depth {
		var ds []depth
		for k := range 60 {
			ds = append(ds, depth{time.Hour - time.Duration(k)*time.Minute, int64(k)})
		}
		return append(ds, depth{0, last})
	}
	tests := []struct {
		name    string
		offset  time.Duration // of the view's clock from the fixtures' now
		samples []depth
		want    []float64
	}{
		{"none", 0, nil, []float64{}},
		{"each minute's peak", 0, []depth{{90 * time.Second, 5}, {75 * time.Second, 9}, {60 * time.Second, 1}, {30 * time.Second, 4}}, []float64{9, 4}},
		{"minutes without samples skipped", 0, []depth{{50 * time.Minute, 3}, {10 * time.Minute, 6}}, []float64{3, 6}},
		{"an hour ago out, 59 minutes in", 0, []depth{{61 * time.Minute, 100}, {time.Hour, 4}, {59 * time.Minute, 5}, {30 * time.Minute, 6}}, []float64{5, 6}},
		{"a sample at now after a gap", 0, []depth{{30 * time.Second, 2}, {0, 7}}, []float64{2, 7}},
		{"a sample at now is the current minute's", 0, everyMinute(100), append(seq(60)[1:], 100)},
		{"a smaller sample at now too", 0, everyMinute(0), append(seq(60)[1:], 0)},
		{"future samples left out", 0, []depth{{30 * time.Second, 2}, {-time.Second, 50}}, []float64{2}},
		// With a clock between milliseconds, the hour starts after the sample taken one hour before
		// the fixtures' now, and minutes are counted from that start.
		{"a clock between milliseconds", 500 * time.Microsecond, []depth{{time.Hour, 1}, {59*time.Minute + 30*time.Second, 2}, {59 * time.Minute, 3}, {0, 5}}, []float64{3, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc = New(Options{Store: f.store, Now: func() time.Time { return now.Add(tt.offset) }})
			f.queue("jobs")
			for _, d := range tt.samples {
				f.attrs("jobs", "", 0, 345600, now.Add(-d.ago), d.visible)
			}
			ov, err := f.svc.Overview(f.ctx)
			if err != nil || len(ov.Queues) != 1 {
				t.Fatalf("Overview = %+v, %v", ov.Queues, err)
			}
			if got := ov.Queues[0].Sparkline; !slices.Equal(got, tt.want) {
				t.Errorf("overview sparkline = %v; want %v", got, tt.want)
			}
			d, err := f.svc.Queue(f.ctx, f.idOf("jobs"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Sparkline, tt.want) {
				t.Errorf("queue page sparkline = %v; want %v", d.Sparkline, tt.want)
			}
		})
	}
}

// seq returns 0, 1, …, n-1.
func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)
	}
	return out
}

// TestGrowth: a dead-letter queue is growing when it is deeper now than at its newest sample at
// least GrowthWindow (15 min) old, looking back no further than the sparkline's hour.
func TestGrowth(t *testing.T) {
	t.Parallel()
	const deep = "5 messages in the dead-letter queue"
	tests := []struct {
		name    string
		earlier []depth
		reasons []string
	}{
		{"no earlier sample", nil, []string{deep}},
		{"earlier at the cutoff", []depth{{15 * time.Minute, 2}}, []string{deep, "growing: 2 → 5 messages in 14 min"}},
		{"the newest old enough", []depth{{20 * time.Minute, 1}, {16 * time.Minute, 3}, {14 * time.Minute, 9}}, []string{deep, "growing: 3 → 5 messages in 15 min"}},
		{"too recent", []depth{{15*time.Minute - time.Second, 1}}, []string{deep}},
		{"an hour old", []depth{{time.Hour, 1}}, []string{deep, "growing: 1 → 5 messages in 59 min"}},
		{"older than the hour", []depth{{time.Hour + time.Millisecond, 1}}, []string{deep}},
		{"shrinking", []depth{{20 * time.Minute, 9}}, []string{deep}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.queue("jobs")
			f.queue("jobs-dlq")
			f.attrs("jobs", "jobs-dlq", 3, 345600, now.Add(-5*time.Second), 0)
			for _, d := range tt.earlier {
				f.attrs("jobs-dlq", "", 0, 1209600, now.Add(-d.ago), d.visible)
			}
			f.attrs("jobs-dlq", "", 0, 1209600, now.Add(-5*time.Second), 5)
			ov, err := f.svc.Overview(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(ov.Queues, func(q QueueSummary) bool { return q.Name == "jobs-dlq" })
			if got := ov.Queues[i].Health.Reasons; !slices.Equal(got, tt.reasons) {
				t.Errorf("overview reasons = %q; want %q", got, tt.reasons)
			}
			d, err := f.svc.Queue(f.ctx, f.idOf("jobs-dlq"))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Health.Reasons, tt.reasons) {
				t.Errorf("queue page reasons = %q; want %q", d.Health.Reasons, tt.reasons)
			}
		})
	}
}
