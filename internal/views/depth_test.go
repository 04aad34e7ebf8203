package views

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// TestDepthHistoryAgreesWithTheStore: what the snapshot takes from its depth history (each
// queue's newest sample, sparkline, growth rule's earlier sample and newest empty sample) is what
// the store's samples say when read whole, through writes before and after the first read, a
// sample written again at the same time (an empty one too), a sample written late within the
// history's overlap, one written later still (in after the next whole read), the clock sliding
// past the history's start, and a prune.
func TestDepthHistoryAgreesWithTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a, b := f.queue("a"), f.queue("b")
	h := depthHistory{keep: growthBack(DefaultThresholds().GrowthWindow) + 5*time.Minute}
	save := func(id int64, at time.Time, visible int64) {
		t.Helper()
		f.must(f.store.SaveQueueAttributes(f.ctx, store.QueueAttributes{QueueID: id, At: at, Depth: store.AttributeSample{Visible: visible}}))
	}
	check := func(step string, at time.Time) {
		t.Helper()
		f.must(h.update(f.ctx, f.store, at))
		got, want := historyReadings(&h, at), storeReadings(t, f, at, []int64{a, b})
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: from the history\n%s\nfrom the store\n%s", step, got, want)
		}
	}

	clock := now.Add(-2 * time.Hour)
	for i := range 120 { // half an hour at 15 s, before anything is read
		save(a, clock, int64(i%7))
		clock = clock.Add(15 * time.Second)
	}
	check("read after writes", clock)
	for i := range 240 { // an hour more, read as it goes
		save(a, clock, int64(i%11))
		if i%3 == 0 {
			save(b, clock.Add(time.Second), int64(i))
		}
		if i%40 == 0 {
			check(fmt.Sprintf("after %d more", i), clock.Add(time.Second))
		}
		clock = clock.Add(15 * time.Second)
	}
	save(a, clock.Add(-15*time.Second), 99)   // the same time again
	save(b, clock.Add(-20*time.Second), 1234) // late, within the overlap
	check("rewritten and late", clock)
	save(a, clock, 0) // a's newest empty sample, then the same time again with messages
	check("empty", clock)
	save(a, clock, 7)
	check("empty no more", clock)

	save(b, clock.Add(-5*time.Minute), 4321) // later than the overlap reaches back
	f.must(h.update(f.ctx, f.store, clock))
	if historyReadings(&h, clock).String() == storeReadings(t, f, clock, []int64{a, b}).String() {
		t.Error("a sample written later than the overlap was read at once: the test no longer tests the reread")
	}
	check("the next whole read", clock.Add(depthReread))

	// The collector rolls raw samples up after two days, long before they reach the history; a
	// roll-up within its reach (here after 50 min) shows from the next whole read on.
	clock = clock.Add(depthReread)
	for _, rawFor := range []time.Duration{2 * time.Hour, 50 * time.Minute} {
		if _, err := f.store.Prune(f.ctx, clock, store.Retention{RawFor: rawFor}); err != nil {
			t.Fatal(err)
		}
		for range 8 {
			save(a, clock, 5)
			clock = clock.Add(15 * time.Second)
		}
		if rawFor > h.keep {
			check("after a prune", clock)
		}
	}
	check("after a prune within reach, at the next whole read", clock.Add(depthReread))
}

// depthReadings are what the snapshot reads of the depth history at one instant, by queue id.
type depthReadings struct {
	Latest  map[int64]store.AttributeSample
	Peaks   map[int64][]float64
	Earlier map[int64]store.AttributeSample
	Empty   map[int64]time.Time
}

func (r depthReadings) String() string {
	return fmt.Sprintf("latest %v\npeaks %v\nearlier %v\nempty %v", r.Latest, r.Peaks, r.Earlier, r.Empty)
}

// historyReadings reads h as a snapshot at at does.
func historyReadings(h *depthHistory, at time.Time) depthReadings {
	rd := &readings{now: at, clock: newHorizon(at)}
	rd.readHistory(h, DefaultThresholds().GrowthWindow)
	return depthReadings{Latest: rd.latest, Peaks: rd.peaks, Earlier: rd.earlier, Empty: rd.empty}
}

// storeReadings computes what historyReadings should read, from each queue's samples as the
// store answers them one queue at a time, by the rules' own words.
func storeReadings(t *testing.T, f *fixture, at time.Time, ids []int64) depthReadings {
	t.Helper()
	latest, err := f.store.LatestAttributeSamples(f.ctx)
	f.must(err)
	r := depthReadings{Latest: latest, Peaks: map[int64][]float64{}, Earlier: map[int64]store.AttributeSample{}, Empty: map[int64]time.Time{}}
	window := DefaultThresholds().GrowthWindow
	from := at.Truncate(time.Minute).Add(-sparklineWindow + time.Minute)
	for _, id := range ids {
		series, err := f.store.AttributeSeries(f.ctx, id, at.Add(-3*time.Hour), at.Add(time.Millisecond))
		f.must(err)
		bucket := time.Time{}
		for _, s := range series {
			s.Resolution = 0 // the history keeps no resolution
			if !s.At.Before(from) {
				if b := s.At.Truncate(time.Minute); b.Equal(bucket) {
					r.Peaks[id][len(r.Peaks[id])-1] = max(r.Peaks[id][len(r.Peaks[id])-1], float64(s.Visible))
				} else {
					bucket = b
					r.Peaks[id] = append(r.Peaks[id], float64(s.Visible))
				}
			}
			// The newest sample at least window old and at most growthBack: later ones replace
			// earlier ones (a roll-up after the raw sample of its time).
			if !s.At.After(at.Add(-window)) && !s.At.Before(at.Add(-growthBack(window))) {
				r.Earlier[id] = s
			}
			if !s.At.Before(at.Add(-sparklineWindow)) && s.Visible+s.InFlight == 0 {
				r.Empty[id] = s.At
			}
		}
	}
	return r
}
