package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// TestRecentDepthAgreesWithSQLite: what the depth reads answer from memory is what SQLite
// answers, through writes before and after the memory is loaded, a sample written again at the
// same time, a sample older than the newest (written late), a second store on the same file that
// loads while the first writes, the time window sliding past the memory's start, and a Prune.
func TestRecentDepthAgreesWithSQLite(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	a, b := addQueue(t, s, "a"), addQueue(t, s, "b")
	save := func(q Queue, at time.Time, visible int64) {
		t.Helper()
		if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: at, Depth: AttributeSample{Visible: visible, InFlight: visible % 3, Delayed: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string, now time.Time) {
		t.Helper()
		for _, window := range []time.Duration{time.Hour, 30 * time.Minute, 5 * time.Minute} {
			for _, id := range []int64{0, a.ID, b.ID} {
				since := now.Add(-window)
				gotPeaks, err := s.VisiblePeaks(ctx, id, since, now, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				wantPeaks, err := s.visiblePeaks(ctx, id, since, now, time.Minute)
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
	covered, err := s.depth.window(ctx, ms(now.Add(-30*time.Minute)), s.recentDepthSamples, func(map[int64][]depthSample) {})
	if err != nil || !covered {
		t.Errorf("the memory does not cover the last half hour (%v): the reads above compared SQLite with itself", err)
	}
}
