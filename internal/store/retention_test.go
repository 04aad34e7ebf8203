package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

func count(t *testing.T, s *Store, query string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := s.db.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestPruneRollsUpAndIsIdempotent(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "web-search")
		now := t0
		start := now.Add(-72 * time.Hour)

		// Three days of raw depth samples every 15 s: visible counts up within each minute (0..3),
		// written in one transaction (17,280 of them one by one took most of this test).
		var depths []AttributeSample
		for at := start; at.Before(now); at = at.Add(15 * time.Second) {
			v := int64(at.Sub(start)/(15*time.Second)) % 4
			depths = append(depths, AttributeSample{QueueID: q.ID, At: at, Visible: v, InFlight: 10 - v})
		}
		if err := s.SaveAttributeSamples(ctx, depths); err != nil {
			t.Fatal(err)
		}
		// Three days of one-minute datapoints of one metric of each statistic.
		var pts []MetricPoint
		for at := start; at.Before(now); at = at.Add(time.Minute) {
			m := int64(at.Sub(start) / time.Minute)
			pts = append(pts,
				MetricPoint{QueueID: q.ID, Metric: "NumberOfMessagesSent", At: at, Period: 60, Value: 1},                       // Sum → 5 a bucket
				MetricPoint{QueueID: q.ID, Metric: "ApproximateAgeOfOldestMessage", At: at, Period: 60, Value: float64(m % 5)}, // Maximum → 4
				MetricPoint{QueueID: q.ID, Metric: "SentMessageSize", At: at, Period: 60, Value: float64(100 + 10*(m%5))},      // Average → 120
			)
		}
		if err := s.UpsertMetricPoints(ctx, pts); err != nil {
			t.Fatal(err)
		}
		rawSamples := count(t, s, "SELECT count(*) FROM attribute_samples")
		rawPoints := count(t, s, "SELECT count(*) FROM metric_points")

		res, err := s.Prune(ctx, now, Retention{})
		if err != nil {
			t.Fatalf("Prune: %v", err)
		}
		cutoff := now.Add(-48 * time.Hour) // t0 is on a 5-min boundary, so the aligned cutoff is the same
		wantRolled := int64(24*60*4) + int64(24*60*3)
		if res.RolledUp != wantRolled || res.Deleted != 0 {
			t.Errorf("Prune = %+v; want %d rolled up, none deleted", res, wantRolled)
		}
		samples := count(t, s, "SELECT count(*) FROM attribute_samples")
		points := count(t, s, "SELECT count(*) FROM metric_points")
		if want := rawSamples - 24*60*4 + 24*12; samples != want {
			t.Errorf("depth rows %d → %d; want %d", rawSamples, samples, want)
		}
		if want := rawPoints - 24*60*3 + 3*24*12; points != want {
			t.Errorf("datapoint rows %d → %d; want %d", rawPoints, points, want)
		}

		series, err := s.AttributeSeries(ctx, q.ID, start, cutoff)
		if err != nil {
			t.Fatal(err)
		}
		if len(series) != 24*12 {
			t.Fatalf("rolled-up series has %d rows; want %d", len(series), 24*12)
		}
		for _, a := range series {
			if a.Resolution != 300 || a.Visible != 3 || a.InFlight != 10 || a.At.Minute()%5 != 0 {
				t.Fatalf("roll-up = %+v; want 5-min buckets of maxima (visible 3, in flight 10)", a)
			}
		}
		if raw, _ := s.AttributeSeries(ctx, q.ID, cutoff, now); len(raw) != 48*60*4 || raw[0].Resolution != 0 {
			t.Errorf("raw series after the cutoff has %d rows; want %d raw", len(raw), 48*60*4)
		}

		for metric, want := range map[string]float64{"NumberOfMessagesSent": 5, "ApproximateAgeOfOldestMessage": 4, "SentMessageSize": 120} {
			t.Run(metric, func(t *testing.T) {
				ps, err := s.MetricSeries(ctx, q.ID, metric, start, cutoff)
				if err != nil {
					t.Fatal(err)
				}
				if len(ps) != 24*12 {
					t.Fatalf("%d roll-ups; want %d", len(ps), 24*12)
				}
				for _, p := range ps {
					if p.Period != 300 || p.Value != want {
						t.Fatalf("roll-up = %+v; want period 300, value %v", p, want)
					}
				}
			})
		}

		// Again at the same time: nothing to do.
		again, err := s.Prune(ctx, now, Retention{})
		if err != nil || again != (PruneResult{}) {
			t.Errorf("second Prune = %+v, %v; want nothing done", again, err)
		}
		if n := count(t, s, "SELECT count(*) FROM attribute_samples"); n != samples {
			t.Errorf("second Prune changed depth rows %d → %d", samples, n)
		}

		// 30 days on, the roll-ups go too (and what was raw has been rolled up meanwhile).
		later, err := s.Prune(ctx, now.Add(30*24*time.Hour+time.Hour), Retention{})
		if err != nil {
			t.Fatal(err)
		}
		if later.Deleted == 0 || count(t, s, "SELECT count(*) FROM attribute_samples WHERE at < ?", ms(now.Add(time.Hour))) != 0 {
			t.Errorf("after 30 days: %+v, old rows left: %d", later, count(t, s, "SELECT count(*) FROM attribute_samples WHERE at < ?", ms(now.Add(time.Hour))))
		}
	})
}

func TestPruneSamplesRunsAndErrors(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		old := addQueue(t, s, "old-dlq")
		busy := addQueue(t, s, "busy-dlq")
		addQueue(t, s, "never-sampled")

		// old-dlq: samples 3, 2 and 1 days ago: only the newest stays, with its messages.
		for i, days := range []int{3, 2, 1} {
			msgs := dlqMessages(3)
			msgs[0].MessageID = fmt.Sprintf("only-in-%d", i)
			if _, err := s.SaveSample(ctx, Sample{QueueID: old.ID, At: t0.Add(-time.Duration(days) * 24 * time.Hour)}, msgs, nil); err != nil {
				t.Fatal(err)
			}
		}
		// busy-dlq: a sample a minute for the last two hours, with groups.
		for i := range 120 {
			groups := []GroupBacklog{{GroupID: "g", Messages: 1}}
			if _, err := s.SaveSample(ctx, Sample{QueueID: busy.ID, At: t0.Add(-time.Duration(i) * time.Minute)}, dlqMessages(2), groups); err != nil {
				t.Fatal(err)
			}
		}
		for _, days := range []int{10, 9, 1} {
			id, err := s.StartRun(ctx, RunAttributes, t0.Add(-time.Duration(days)*24*time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if days != 1 {
				if err := s.FinishRun(ctx, CollectorRun{ID: id, FinishedAt: t0.Add(-time.Duration(days) * 24 * time.Hour)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.RecordError(ctx, CollectorError{RunID: id, Operation: "op", At: t0.Add(-time.Duration(days) * 24 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
		}

		res, err := s.Prune(ctx, t0, Retention{SamplesFor: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, "SELECT count(*) FROM samples WHERE queue_id = ?", old.ID); n != 1 {
			t.Errorf("old-dlq keeps %d samples; want its newest only", n)
		}
		latest, err := s.LatestSample(ctx, old.ID)
		if err != nil || !latest.At.Equal(t0.Add(-24*time.Hour)) {
			t.Errorf("old-dlq newest = %+v, %v", latest, err)
		}
		if msgs, _ := s.SampleMessages(ctx, latest.ID, MessageFilter{}); len(msgs) != 3 || msgs[2].MessageID != "only-in-2" {
			t.Errorf("newest sample's messages = %+v", msgs)
		}
		// Messages only older samples saw are gone; shared ones stay.
		if n := count(t, s, "SELECT count(*) FROM messages WHERE message_id IN ('only-in-0', 'only-in-1')"); n != 0 {
			t.Errorf("%d messages of pruned samples remain", n)
		}
		if n := count(t, s, "SELECT count(*) FROM samples WHERE queue_id = ?", busy.ID); n != 61 {
			t.Errorf("busy-dlq keeps %d samples; want the last hour's 61", n)
		}
		if n := count(t, s, "SELECT count(*) FROM group_backlog"); n != 61 {
			t.Errorf("group rows = %d; want 61 (cascaded)", n)
		}
		if n := count(t, s, "SELECT count(*) FROM sample_messages"); n != 61*2+3 {
			t.Errorf("sample_messages rows = %d; want %d", n, 61*2+3)
		}
		// Runs: the 10-day-old one goes; the 9-day-old one is the newest finished run and stays; the
		// unfinished one is recent.
		if n := count(t, s, "SELECT count(*) FROM collector_runs"); n != 2 {
			t.Errorf("runs left = %d; want 2", n)
		}
		if r, err := s.LatestRun(ctx, RunAttributes); err != nil || !r.FinishedAt.Equal(t0.Add(-9*24*time.Hour)) {
			t.Errorf("LatestRun after prune = %+v, %v", r, err)
		}
		if n := count(t, s, "SELECT count(*) FROM collector_errors"); n != 1 {
			t.Errorf("errors left = %d; want 1", n)
		}
		if res.Deleted == 0 {
			t.Errorf("Prune = %+v", res)
		}
		again, err := s.Prune(ctx, t0, Retention{SamplesFor: time.Hour})
		if err != nil || again != (PruneResult{}) {
			t.Errorf("second Prune = %+v, %v; want nothing done", again, err)
		}
	})
}
