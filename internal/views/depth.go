package views

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// depthHistory is every queue's recent depth samples, as the snapshot reads them: the newest
// sample of each queue, and the raw samples of the last keep, from which the sparklines, the
// growth rule's earlier sample and the newest empty sample come. An hour of 15-s samples of a
// thousand queues is 240,000 rows: the history reads them once, then at each build only what is
// new, from the database, on SQLite as on a PostgreSQL replica whose collector runs elsewhere.
//
// Only the snapshot's builder uses it, one build at a time; what a build takes from it is
// copied, since the next build changes it.
type depthHistory struct {
	keep   time.Duration
	rings  map[int64][]depthSample // each queue's samples from since on, oldest first; nil until read
	latest map[int64]store.AttributeSample
	since  int64     // unix ms: every sample from here on is in rings
	newest int64     // unix ms: the newest sample time read
	readAt time.Time // when the whole history was last read
}

// depthSample is one depth sample in the history, its time in unix ms.
type depthSample struct {
	at, visible, inFlight, delayed int64
}

func (d depthSample) sample(queueID int64) store.AttributeSample {
	return store.AttributeSample{QueueID: queueID, At: time.UnixMilli(d.at).UTC(), Visible: d.visible, InFlight: d.inFlight, Delayed: d.delayed}
}

const (
	// depthOverlap is how far before the newest sample it holds the history reads again at each
	// build: the collector stores a sample as soon as SQS answers (its commit waits for the
	// writer, milliseconds), so one committed this long after its own time would be missed,
	// until the next whole read. Each build reads about this much of every queue again.
	depthOverlap = 30 * time.Second
	// depthReread is how often the whole history is read again: what an update could miss (a
	// sample committed late, a roll-up that replaced a gone queue's newest sample) is put
	// right within it.
	depthReread = 10 * time.Minute
)

// update brings the history up to now: the whole of it on the first build and every
// depthReread, else the samples from depthOverlap before the newest one held.
func (h *depthHistory) update(ctx context.Context, st *store.Store, now time.Time) error {
	if h.rings == nil || now.Sub(h.readAt) >= depthReread || now.Before(h.readAt) {
		return h.readAll(ctx, st, now)
	}
	from := h.newest - depthOverlap.Milliseconds()
	fresh, err := st.DepthSamplesSince(ctx, time.UnixMilli(from))
	if err != nil {
		return fmt.Errorf("views: depth history: %w", err)
	}
	for id, samples := range fresh {
		h.merge(id, samples)
	}
	h.evict(now)
	return nil
}

// readAll reads the history anew.
func (h *depthHistory) readAll(ctx context.Context, st *store.Store, now time.Time) error {
	since := now.Add(-h.keep)
	var rings map[int64][]store.AttributeSample
	var latest map[int64]store.AttributeSample
	err := concurrently(ctx,
		func(ctx context.Context) (err error) { rings, err = st.DepthSamplesSince(ctx, since); return err },
		func(ctx context.Context) (err error) { latest, err = st.LatestAttributeSamples(ctx); return err },
	)
	if err != nil {
		return fmt.Errorf("views: depth history: %w", err)
	}
	h.rings, h.latest, h.since, h.newest, h.readAt = make(map[int64][]depthSample, len(rings)), latest, since.UnixMilli(), 0, now
	for id, samples := range rings {
		// Room for the samples to come before the oldest go: a ring grows at the end as it is
		// cut at the start (evict), and copies itself only when that room is used up.
		h.rings[id] = make([]depthSample, 0, len(samples)+len(samples)/2)
		h.merge(id, samples)
	}
	return nil
}

// merge adds a queue's samples, oldest first, to its ring: a sample replaces the one of the same
// time, as the store's writes do.
func (h *depthHistory) merge(id int64, samples []store.AttributeSample) {
	ring := h.rings[id]
	for _, a := range samples {
		d := depthSample{at: a.At.UnixMilli(), visible: a.Visible, inFlight: a.InFlight, delayed: a.Delayed}
		h.newest = max(h.newest, d.at)
		if cur, ok := h.latest[id]; !ok || d.at >= cur.At.UnixMilli() {
			h.latest[id] = d.sample(id)
		}
		if d.at < h.since {
			continue
		}
		i, found := slices.BinarySearchFunc(ring, d.at, func(s depthSample, at int64) int { return cmpInt64(s.at, at) })
		if found {
			ring[i] = d
		} else {
			ring = slices.Insert(ring, i, d)
		}
	}
	if len(ring) > 0 {
		h.rings[id] = ring
	}
}

// evict drops the samples older than keep. A ring keeps its array: the samples to come are
// appended in the room behind, and when that is used up, append copies what is left, without the
// dropped ones, into an array of twice its length.
func (h *depthHistory) evict(now time.Time) {
	cut := now.Add(-h.keep).UnixMilli()
	if cut <= h.since {
		return
	}
	h.since = cut
	for id, ring := range h.rings {
		i, _ := slices.BinarySearchFunc(ring, cut, func(s depthSample, at int64) int { return cmpInt64(s.at, at) })
		if i == len(ring) {
			delete(h.rings, id)
			continue
		}
		h.rings[id] = ring[i:]
	}
}

// latestSamples returns a copy of each queue's newest sample.
func (h *depthHistory) latestSamples() map[int64]store.AttributeSample {
	out := make(map[int64]store.AttributeSample, len(h.latest))
	for id, a := range h.latest {
		out[id] = a
	}
	return out
}

// sparklines returns every queue's highest visible depth of each minute with samples from from
// (a whole minute) up to now, oldest first, as the overview's sparklines draw them, and tells
// clock when a sample after now (clocks skew) comes within; when from moves on is the
// caller's to tell.
func (h *depthHistory) sparklines(clock *horizon, from time.Time) map[int64][]float64 {
	lo, hi := from.UnixMilli(), clock.now.UnixMilli()
	const minute = int64(time.Minute / time.Millisecond)
	out := make(map[int64][]float64, len(h.rings))
	for id, ring := range h.rings {
		var peaks []float64
		bucket := int64(-1)
		next := firstAfter(ring, hi)
		if next < len(ring) {
			clock.change(time.UnixMilli(ring[next].at))
		}
		for _, d := range ring[firstAt(ring, lo):next] {
			if b := (d.at - lo) / minute; b != bucket {
				bucket = b
				peaks = append(peaks, float64(d.visible))
			} else if v := float64(d.visible); v > peaks[len(peaks)-1] {
				peaks[len(peaks)-1] = v
			}
		}
		if len(peaks) > 0 {
			out[id] = peaks
		}
	}
	return out
}

// earlier returns every queue's newest sample at most back and at least window old, the growth
// rule's earlier sample, and tells clock when another sample will be it: when the next one
// becomes window old, or when this one becomes older than back.
func (h *depthHistory) earlier(clock *horizon, back, window time.Duration) map[int64]store.AttributeSample {
	lo, hi := msCeil(clock.now.Add(-back)), clock.now.Add(-window).UnixMilli()
	out := make(map[int64]store.AttributeSample, len(h.rings))
	for id, ring := range h.rings {
		next := firstAfter(ring, hi)
		if next < len(ring) {
			clock.change(time.UnixMilli(ring[next].at).Add(window))
		}
		if next > 0 && ring[next-1].at >= lo {
			e := ring[next-1]
			out[id] = e.sample(id)
			clock.change(time.UnixMilli(e.at).Add(back + time.Nanosecond))
		}
	}
	return out
}

// lastEmpty returns, for every queue with one, the time of its newest sample of the last back
// without a message visible or in flight, and tells clock when that changes with the clock
// alone: a sample after now (clocks skew) comes within, or this one becomes older than back.
func (h *depthHistory) lastEmpty(clock *horizon, back time.Duration) map[int64]time.Time {
	lo, hi := msCeil(clock.now.Add(-back)), clock.now.UnixMilli()
	out := map[int64]time.Time{}
	for id, ring := range h.rings {
		next := firstAfter(ring, hi)
		if next < len(ring) {
			clock.change(time.UnixMilli(ring[next].at))
		}
		for i := next - 1; i >= 0 && ring[i].at >= lo; i-- {
			if d := ring[i]; d.visible+d.inFlight == 0 {
				out[id] = time.UnixMilli(d.at).UTC()
				clock.change(time.UnixMilli(d.at).Add(back + time.Nanosecond))
				break
			}
		}
	}
	return out
}

// msCeil is t in unix ms, rounded up: a window that starts at t holds no sample before it.
func msCeil(t time.Time) int64 {
	ms := t.UnixMilli()
	if time.UnixMilli(ms).Before(t) {
		ms++
	}
	return ms
}

// firstAt is the index of ring's first sample at or after at (unix ms); firstAfter of its first
// sample after at.
func firstAt(ring []depthSample, at int64) int {
	i, _ := slices.BinarySearchFunc(ring, at, func(s depthSample, at int64) int { return cmpInt64(s.at, at) })
	return i
}

func firstAfter(ring []depthSample, at int64) int { return firstAt(ring, at+1) }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
