package store

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestRecentDepthAgreesWithSQLite: what the depth reads answer from memory is what SQLite
// answers, through writes before and after the memory is loaded, a sample written again at the
// same time (an empty one too), a sample older than the newest (written late), a second store on the same file that
// loads while the first writes, the time window sliding past the memory's start, and a Prune.
func TestRecentDepthAgreesWithSQLite(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, b := addQueue(t, s, "a"), addQueue(t, s, "b")
	save := func(q Queue, at time.Time, visible int64) { t.Helper(); saveDepth(t, s, q, at, visible) }
	check := func(step string, now time.Time) {
		t.Helper()
		for _, window := range []time.Duration{time.Hour, 30 * time.Minute, 5 * time.Minute} {
			for _, id := range []int64{0, a.ID, b.ID} {
				// The overview's window, in whole minutes (read from the minutes' peaks).
				aligned := now.Truncate(time.Minute).Add(-window + time.Minute)
				gotPeaks, err := s.VisiblePeaks(ctx, id, aligned, now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				wantPeaks, err := s.visiblePeaks(ctx, id, aligned, now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gotPeaks, wantPeaks) {
					t.Errorf("%s, %s in whole minutes, queue %d: peaks from memory %v, from SQLite %v", step, window, id, gotPeaks, wantPeaks)
				}
				// The sparklines as values, twice: built, then kept.
				for _, read := range []string{"built", "kept"} {
					gotValues, err := s.VisiblePeakValues(ctx, id, aligned, now, time.Minute)
					if err != nil {
						t.Fatal(err)
					}
					if want := peakValues(wantPeaks); !reflect.DeepEqual(gotValues, want) {
						t.Errorf("%s, %s in whole minutes, queue %d, %s: sparklines from memory %v, from SQLite %v", step, window, id, read, gotValues, want)
					}
				}
				since := now.Add(-window)
				gotPeaks, err = s.VisiblePeaks(ctx, id, since, now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				wantPeaks, err = s.visiblePeaks(ctx, id, since, now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(gotPeaks, wantPeaks) {
					t.Errorf("%s, %s, queue %d: peaks from memory %v, from SQLite %v", step, window, id, gotPeaks, wantPeaks)
				}
				gotBetween, err := s.LatestAttributeSamplesBetween(ctx, id, since, now.Add(-window/3))
				if err != nil {
					t.Fatal(err)
				}
				wantBetween, err := s.latestAttributeSamplesBetween(ctx, id, since, now.Add(-window/3))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(gotBetween) != fmt.Sprint(wantBetween) {
					t.Errorf("%s, %s, queue %d: earlier sample from memory %v, from SQLite %v", step, window, id, gotBetween, wantBetween)
				}
			}
		}
		// The newest empty sample, kept as samples come, against SQLite's, over the sparkline's
		// hour and over the same hour but its last ten minutes.
		for _, until := range []time.Time{now, now.Add(-10 * time.Minute)} {
			got, err := s.LastEmptyTimes(ctx, now.Add(-time.Hour), until)
			if err != nil {
				t.Fatal(err)
			}
			want, err := s.lastEmptyTimes(ctx, msCeil(now.Add(-time.Hour)), ms(until))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s, until %s: newest empty samples from memory %v, from SQLite %v", step, until.Format(time.TimeOnly), got, want)
			}
		}
		got, err := s.LatestAttributeSamples(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.latestAttributeSamples(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: newest samples from memory %v, from SQLite %v", step, got, want)
		}
	}

	now := t0
	for i := range 120 { // half an hour at 15 s, before anything is read
		save(a, now, int64(i%7))
		now = now.Add(15 * time.Second)
	}
	check("loaded after writes", now)
	for i := range 240 { // an hour more, read as it goes
		save(a, now, int64(i%11))
		if i%3 == 0 {
			save(b, now.Add(time.Second), int64(i))
		}
		if i%40 == 0 {
			check(fmt.Sprintf("after %d more", i), now.Add(time.Second))
		}
		now = now.Add(15 * time.Second)
	}
	save(a, now.Add(-15*time.Second), 99)  // the same time again
	save(b, now.Add(-5*time.Minute), 1234) // late: older than b's newest
	check("rewritten and late", now)
	save(a, now, 0) // a's newest empty sample, then the same time again with messages
	check("empty", now)
	save(a, now, 7)
	check("empty no more", now)

	// Raw samples older than an hour are rolled up into 5-min buckets.
	if _, err := s.Prune(ctx, now, Retention{RawFor: 50 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	check("after a prune", now)
	for range 8 {
		save(a, now, 5)
		now = now.Add(15 * time.Second)
	}
	check("written after the prune", now)
	covered, err := s.depth.window(ctx, ms(now.Add(-30*time.Minute)), s.recentDepthSamples, func(depthView) {})
	if err != nil || !covered {
		t.Errorf("the memory does not cover the last half hour (%v): the reads above compared SQLite with itself", err)
	}
}

// TestSparklinesKeptUntilASampleComes reads every queue's sparklines again and again, as pages
// and pushes do, and wants SQLite's answer each time: after each kind of write that changes a
// queue's minutes (a new peak in the minute under way, a late sample in an older minute, a
// sample written again lower, a new queue's first) and after a prune. For a queue whose minutes
// stayed it wants the same list, not one built again, and a minute on, the same list less its
// first minute; and a list once read stays as it was read, whatever is written after.
func TestSparklinesKeptUntilASampleComes(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, b := addQueue(t, s, "a"), addQueue(t, s, "b")
	save := func(q Queue, at time.Time, visible int64) { t.Helper(); saveDepth(t, s, q, at, visible) }
	now := t0.Add(2*time.Hour + 30*time.Second) // half a minute into a minute
	for k := 240; k > 0; k-- {
		save(a, now.Add(-time.Duration(k)*15*time.Second), int64(k%5))
		save(b, now.Add(-time.Duration(k)*15*time.Second), int64(k%3))
	}
	from := now.Truncate(time.Minute).Add(-time.Hour + time.Minute)
	read := func(step string) map[int64][]float64 {
		t.Helper()
		got, err := s.VisiblePeakValues(ctx, 0, from, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want, err := s.visiblePeaks(ctx, 0, from, now, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, peakValues(want)) {
			t.Errorf("%s: sparklines from memory %v, from SQLite %v", step, got, peakValues(want))
		}
		return got
	}
	first := read("first read")
	firstCopy := map[int64][]float64{}
	for id, list := range first {
		firstCopy[id] = slices.Clone(list)
	}
	save(a, now.Add(-time.Second), 40) // a new peak in the minute under way
	second := read("a new peak")
	if &second[b.ID][0] != &first[b.ID][0] {
		t.Error("b's sparkline was built again, though nothing was written to b")
	}
	save(b, now.Add(-2*time.Second), 0) // in the minute under way, under its peak
	if third := read("a sample under the minute's peak"); &third[b.ID][0] != &first[b.ID][0] {
		t.Error("b's sparkline was built again, though its minutes' peaks stayed")
	}
	ahead := now.Add(20 * time.Second)
	save(b, ahead, 77) // after until, as a reader's clock a little behind the collector's sees it
	read("a sample after until")
	now = ahead
	read("until past that sample")
	now = ahead.Add(-10 * time.Second)
	read("until back before it")
	now = ahead
	save(b, now.Add(-20*time.Minute), 99) // late, in an older minute
	read("a late sample")
	save(a, now.Add(-time.Second), 1) // the same time again, lower
	read("a sample written again")
	c := addQueue(t, s, "c")
	save(c, now.Add(-2*time.Second), 3)
	read("a new queue")
	if _, err := s.Prune(ctx, now, Retention{RawFor: 61 * time.Minute}); err != nil { // the memory still covers the hour
		t.Fatal(err)
	}
	before := read("after a prune")
	// A minute on, with no sample since (the collector reads an empty, unchanged queue less
	// often): each list is the one before less the minute that left the hour.
	now, from = now.Add(time.Minute), from.Add(time.Minute)
	after := read("a minute on")
	if len(after[a.ID]) != len(before[a.ID])-1 || &after[a.ID][0] != &before[a.ID][1] {
		t.Error("a minute on, a's sparkline was built again, though nothing was written to a")
	}
	if !reflect.DeepEqual(first, firstCopy) {
		t.Errorf("the sparklines first read changed with the writes after: %v, read as %v", first, firstCopy)
	}
}

// saveDepth stores a depth sample of q as the collector does, with its attributes: visible
// messages, some of them in flight, one delayed.
func saveDepth(t *testing.T, s *Store, q Queue, at time.Time, visible int64) {
	t.Helper()
	if err := s.SaveQueueAttributes(context.Background(), QueueAttributes{QueueID: q.ID, At: at,
		Depth: AttributeSample{Visible: visible, InFlight: visible % 3, Delayed: 1}}); err != nil {
		t.Fatal(err)
	}
}

// peakValues is peaks' depths alone, as VisiblePeakValues gives them.
func peakValues(peaks map[int64][]DepthPeak) map[int64][]float64 {
	out := make(map[int64][]float64, len(peaks))
	for id, list := range peaks {
		for _, p := range list {
			out[id] = append(out[id], float64(p.Visible))
		}
	}
	return out
}

// TestReplicasReadOneAnothersWrites: replicas on PostgreSQL share the database, so what one
// writes (queues, depth samples, message samples, datapoints) is what the other reads next, with
// no memory of its own in between: the reads the overview makes, each read once before the write
// (which is what a cache would keep) and once after, and the newest empty sample.
func TestReplicasReadOneAnothersWrites(t *testing.T) {
	url := pgtest.DB(t)
	ctx := context.Background()
	open := func() *Store {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, reader := open(), open()
	q := addQueue(t, writer, "a")
	read := func() (queues []Queue, latest map[int64]AttributeSample, peaks map[int64][]DepthPeak, samples map[int64]Sample, points map[int64]MetricPoint) {
		t.Helper()
		var err error
		if queues, err = reader.ListQueues(ctx, QueueFilter{}); err != nil {
			t.Fatal(err)
		}
		if latest, err = reader.LatestAttributeSamples(ctx); err != nil {
			t.Fatal(err)
		}
		if peaks, err = reader.VisiblePeaks(ctx, 0, t0.Add(-time.Hour), t0.Add(time.Hour), time.Minute); err != nil {
			t.Fatal(err)
		}
		if samples, err = reader.LatestSamples(ctx); err != nil {
			t.Fatal(err)
		}
		if points, err = reader.LatestMetricPoints(ctx, "ApproximateAgeOfOldestMessage"); err != nil {
			t.Fatal(err)
		}
		return queues, latest, peaks, samples, points
	}
	queues, latest, peaks, samples, points := read()
	if len(queues) != 1 || len(latest) != 0 || len(peaks) != 0 || len(samples) != 0 || len(points) != 0 {
		t.Fatalf("before the writes: %d queues, %v, %v, %v, %v", len(queues), latest, peaks, samples, points)
	}
	b := addQueue(t, writer, "b")
	if err := writer.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: t0, Depth: AttributeSample{Visible: 7}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.SaveQueueAttributes(ctx, QueueAttributes{QueueID: b.ID, At: t0, Depth: AttributeSample{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.SaveSample(ctx, Sample{QueueID: q.ID, At: t0, Seen: 1}, []SampledMessage{{MessageID: "m", SentAt: t0}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := writer.UpsertMetricPoints(ctx, []MetricPoint{{QueueID: q.ID, Metric: "ApproximateAgeOfOldestMessage", At: t0, Period: 60, Value: 42}}); err != nil {
		t.Fatal(err)
	}
	queues, latest, peaks, samples, points = read()
	if len(queues) != 2 {
		t.Errorf("the reader lists %d queues; want 2", len(queues))
	}
	if latest[q.ID].Visible != 7 {
		t.Errorf("the reader's newest depth of a: %+v; want 7 visible", latest[q.ID])
	}
	if len(peaks[q.ID]) != 1 || peaks[q.ID][0].Visible != 7 {
		t.Errorf("the reader's sparkline peaks of a: %+v; want one of 7", peaks[q.ID])
	}
	if samples[q.ID].Seen != 1 {
		t.Errorf("the reader's newest sample of a: %+v; want one seen", samples[q.ID])
	}
	if points[q.ID].Value != 42 {
		t.Errorf("the reader's newest age of a: %+v; want 42", points[q.ID])
	}
	empty, err := reader.LastEmptyTimes(ctx, t0.Add(-time.Hour), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) != 1 || !empty[b.ID].Equal(t0) {
		t.Errorf("the reader's newest empty samples: %v; want b's at %s", empty, t0)
	}
}
