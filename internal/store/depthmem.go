package store

import (
	"context"
	"slices"
	"sync"
	"time"
)

// depthKeep is how much recent depth history the store keeps in memory per queue: the
// overview's hour of sparkline and its growth rule's earlier sample (at most an hour back by
// default), with a margin for a caller whose clock runs a little ahead of the samples'.
const depthKeep = 65 * time.Minute

// recentDepth is every queue's newest depth sample and its raw samples of the last depthKeep,
// in memory. The overview and every push read them: an hour of 15-s samples of a thousand queues
// is 240,000 rows, which SQLite would read and bucket on every page (docs/storage.md, Read side).
//
// The store is the one writer of depth samples, so it keeps the memory as it writes: a sample is
// added once its transaction has committed, Prune clips what it rolled up. The memory is loaded
// from SQLite at the first read that needs it, under the lock that writes also take, so a sample
// committed meanwhile is in the load or added after it; adding one twice is harmless (a sample
// replaces the one of the same queue and time, as INSERT OR REPLACE does). A read that reaches
// further back than the memory covers goes to SQLite.
type recentDepth struct {
	// off: other processes write depth samples too (replicas on PostgreSQL), so the memory
	// would miss theirs; every read goes to the database.
	off bool
	mu  sync.RWMutex
	// latest is each queue's newest sample, raw or roll-up (LatestAttributeSamples); nil until
	// loaded, and again after a Prune rolled samples up.
	latest map[int64]AttributeSample
	// rings are each queue's raw samples at or after since, oldest first; nil until loaded.
	rings map[int64][]depthSample
	// minutes are each queue's highest visible depth per whole minute of its rings (the
	// sparklines' buckets), oldest first, kept as samples are added: a page reads sixty peaks a
	// queue instead of its 240 samples. A minute that began before since is absent.
	minutes map[int64][]minutePeak
	// empty is the time (unix ms) of each queue's newest sample in its ring that showed no
	// message visible or in flight, kept as samples are added (LastEmptyTimes).
	empty  map[int64]int64
	since  int64 // unix ms: every raw sample from here on is in rings
	newest int64 // the newest sample time seen, from which depthKeep is counted

	// values are each queue's minutes' peaks as the sparklines draw them, one for each of its
	// minutes, in the same order: a page's sparkline of a queue is a stretch of them, handed out
	// without a copy. An array once handed out is never written again: a changed minute gives
	// the queue a new array (setMinute), so a reader may keep what it got while the store
	// writes.
	values map[int64][]float64
}

// minuteMS is a sparkline bucket, the width of minutes' peaks.
const minuteMS = int64(time.Minute / time.Millisecond)

// minutePeak is the highest visible depth of one queue's samples in the minute from start.
type minutePeak struct {
	start, visible int64 // unix ms, a whole minute; messages
}

// minutePeakOf returns the highest visible depth of ring's samples in the minute from start, and
// false when it has none there.
func minutePeakOf(ring []depthSample, start int64) (int64, bool) {
	var top int64
	found := false
	for _, d := range ring[firstAt(ring, start):] {
		if d.at >= start+minuteMS {
			break
		}
		top, found = max(top, d.visible), true
	}
	return top, found
}

// setMinute stores the peak of the minute holding at (unix ms) of queue id, from its ring, and
// when the peak changed, or the minute came or went, the queue's values anew: a sample that
// leaves its minute's peak as it was leaves the sparkline as it was too.
func (m *recentDepth) setMinute(id, at int64) {
	start := at - at%minuteMS
	if start < m.since {
		return
	}
	top, ok := minutePeakOf(m.rings[id], start)
	list := m.minutes[id]
	i, found := slices.BinarySearchFunc(list, start, func(p minutePeak, start int64) int { return cmpInt(p.start, start) })
	switch {
	case !ok && found:
		list = slices.Delete(list, i, i+1)
	case !ok:
		return
	case found:
		if list[i].visible == top {
			return
		}
		list[i].visible = top
	default:
		list = slices.Insert(list, i, minutePeak{start: start, visible: top})
	}
	m.minutes[id] = list
	m.values[id] = valuesOf(list)
}

// valuesOf is minutes' peaks as the sparklines draw them, in a new array.
func valuesOf(minutes []minutePeak) []float64 {
	values := make([]float64, len(minutes))
	for i, p := range minutes {
		values[i] = float64(p.visible)
	}
	return values
}

// buildIndexes computes every queue's minutes and newest empty sample from its ring.
func (m *recentDepth) buildIndexes() {
	m.minutes = make(map[int64][]minutePeak, len(m.rings))
	m.values = make(map[int64][]float64, len(m.rings))
	m.empty = make(map[int64]int64, len(m.rings))
	for id, ring := range m.rings {
		m.setEmpty(id)
		var list []minutePeak
		for _, d := range ring {
			start := d.at - d.at%minuteMS
			if start < m.since {
				continue
			}
			if n := len(list); n > 0 && list[n-1].start == start {
				list[n-1].visible = max(list[n-1].visible, d.visible)
				continue
			}
			list = append(list, minutePeak{start: start, visible: d.visible})
		}
		m.minutes[id], m.values[id] = list, valuesOf(list)
	}
}

// setEmpty finds the newest sample of queue id's ring without messages.
func (m *recentDepth) setEmpty(id int64) {
	ring := m.rings[id]
	for i := len(ring) - 1; i >= 0; i-- {
		if d := ring[i]; d.visible+d.inFlight == 0 {
			m.empty[id] = d.at
			return
		}
	}
	delete(m.empty, id)
}

// clipMinutes drops the minutes that began before since, and the empty samples before it.
func (m *recentDepth) clipMinutes() {
	for id, at := range m.empty {
		if at < m.since {
			delete(m.empty, id)
		}
	}
	for id, list := range m.minutes {
		i := firstMinute(list, m.since)
		if i == len(list) {
			delete(m.minutes, id)
			delete(m.values, id)
			continue
		}
		m.minutes[id], m.values[id] = slices.Clip(list[i:]), slices.Clip(m.values[id][i:])
	}
}

// depthSample is one raw depth sample in memory.
type depthSample struct {
	at                         int64 // unix ms
	visible, inFlight, delayed int64
}

func (d depthSample) sample(queueID int64) AttributeSample {
	return AttributeSample{QueueID: queueID, At: fromMS(d.at), Visible: d.visible, InFlight: d.inFlight, Delayed: d.delayed}
}

// added records a raw sample that has just been committed.
func (m *recentDepth) added(a AttributeSample) {
	if m.off {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	at := ms(a.At)
	if m.latest != nil {
		if cur, ok := m.latest[a.QueueID]; !ok || at > ms(cur.At) || at == ms(cur.At) {
			a.At, a.Resolution = fromMS(at), 0
			m.latest[a.QueueID] = a
		}
	}
	if m.rings == nil || at < m.since {
		return
	}
	ring := m.rings[a.QueueID]
	s := depthSample{at: at, visible: a.Visible, inFlight: a.InFlight, delayed: a.Delayed}
	i, found := slices.BinarySearchFunc(ring, at, func(d depthSample, at int64) int { return cmpInt(d.at, at) })
	switch {
	case found:
		ring[i] = s
	case i == len(ring):
		ring = append(ring, s)
	default:
		ring = slices.Insert(ring, i, s)
	}
	m.rings[a.QueueID] = ring
	m.setMinute(a.QueueID, at)
	switch newest, ok := m.empty[a.QueueID]; {
	case s.visible+s.inFlight == 0 && (!ok || at > newest):
		m.empty[a.QueueID] = at
	case s.visible+s.inFlight != 0 && ok && at == newest: // the newest empty sample was replaced
		m.setEmpty(a.QueueID)
	}
	if at > m.newest {
		m.newest = at
		m.evict()
	}
}

// evict drops the samples older than depthKeep before the newest, now and then: a ring is cut
// when its oldest sample is a tenth of depthKeep past the cut, so that the cut is amortized.
func (m *recentDepth) evict() {
	cut := m.newest - depthKeep.Milliseconds()
	if cut-m.since < depthKeep.Milliseconds()/10 {
		return
	}
	for id, ring := range m.rings {
		i, _ := slices.BinarySearchFunc(ring, cut, func(d depthSample, at int64) int { return cmpInt(d.at, at) })
		if i == len(ring) {
			delete(m.rings, id)
			continue
		}
		m.rings[id] = slices.Clip(ring[i:])
	}
	m.since = cut
	m.clipMinutes()
}

// pruned records that Prune rolled up (and deleted) the raw samples before cutoff: the newest
// sample of a queue may now be a roll-up, so latest is loaded again, and the memory covers no
// time before cutoff any more.
func (m *recentDepth) pruned(cutoff int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latest = nil
	if m.rings == nil || cutoff <= m.since {
		return
	}
	for id, ring := range m.rings {
		i, _ := slices.BinarySearchFunc(ring, cutoff, func(d depthSample, at int64) int { return cmpInt(d.at, at) })
		m.rings[id] = slices.Clip(ring[i:])
	}
	m.since = cutoff
	m.clipMinutes()
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// latestSamples returns each queue's newest sample, loading them with load first if needed.
func (m *recentDepth) latestSamples(ctx context.Context, load func(context.Context) (map[int64]AttributeSample, error)) (map[int64]AttributeSample, error) {
	if m.off {
		return load(ctx)
	}
	m.mu.RLock()
	if m.latest != nil {
		out := make(map[int64]AttributeSample, len(m.latest))
		for id, a := range m.latest {
			out[id] = a
		}
		m.mu.RUnlock()
		return out, nil
	}
	m.mu.RUnlock()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.latest == nil {
		latest, err := load(ctx)
		if err != nil {
			return nil, err
		}
		m.latest = latest
	}
	out := make(map[int64]AttributeSample, len(m.latest))
	for id, a := range m.latest {
		out[id] = a
	}
	return out, nil
}

// depthView is what a read of the memory sees, under its read lock: every queue's ring, its
// minutes' peaks, their values and its newest empty sample (recentDepth's fields of those
// names).
type depthView struct {
	rings   map[int64][]depthSample
	minutes map[int64][]minutePeak
	values  map[int64][]float64
	empty   map[int64]int64
}

// sparklines returns every queue's minutes' peaks from from (unix ms, a whole minute) to until
// (unix ms), as values, oldest first; a queue without any is absent. It reports false when the
// memory does not cover from. A queue none of whose samples is newer than until (the minute of
// until then holds all of its samples so far) gets a stretch of its values, shared with every
// other reader, which must not change it; a queue sampled after until gets its peaks up to
// until, made for the read.
func (m *recentDepth) sparklines(ctx context.Context, from, until int64, load func(ctx context.Context, since int64) (map[int64][]depthSample, error)) (map[int64][]float64, bool, error) {
	var out map[int64][]float64
	covered, err := m.window(ctx, from, load, func(v depthView) {
		out = make(map[int64][]float64, len(v.rings))
		for id, ring := range v.rings {
			minutes := v.minutes[id]
			var list []float64
			if len(ring) == 0 || ring[len(ring)-1].at <= until {
				values := v.values[id]
				list = values[firstMinute(minutes, from):len(values):len(values)]
			} else {
				list = slices.Clip(minutePeaksOf(ring, minutes, from, until, minuteValue))
			}
			if len(list) > 0 {
				out[id] = list
			}
		}
	})
	return out, covered, err
}

// minutePeaksOf is the peak of each minute of minutes from from to until (unix ms), oldest first,
// made by point of its start and its peak: the minute that holds until only of ring's samples up
// to until.
func minutePeaksOf[P any](ring []depthSample, minutes []minutePeak, from, until int64, point func(start, visible int64) P) []P {
	i := firstMinute(minutes, from)
	list := make([]P, 0, len(minutes)-i) // one allocation a queue, not one per doubling
	for _, p := range minutes[i:] {
		if p.start > until {
			break
		}
		if p.start+minuteMS > until { // the minute of until: only its samples up to until
			var top int64
			found := false
			for _, d := range ring[firstAt(ring, p.start):] {
				if d.at > until {
					break
				}
				top, found = max(top, d.visible), true
			}
			if found {
				list = append(list, point(p.start, top))
			}
			break
		}
		list = append(list, point(p.start, p.visible))
	}
	return list
}

// firstMinute returns the index of the first of minutes that starts at or after at (unix ms).
func firstMinute(minutes []minutePeak, at int64) int {
	i, _ := slices.BinarySearchFunc(minutes, at, func(p minutePeak, at int64) int { return cmpInt(p.start, at) })
	return i
}

// minuteValue is a minute's peak as a sparkline draws it.
func minuteValue(_, visible int64) float64 { return float64(visible) }

// window calls read with the memory, under the read lock, when it covers every raw sample from
// from (unix ms) on, loading it with load first when it was never loaded. It reports false
// when it does not cover from: the caller then reads SQLite.
func (m *recentDepth) window(ctx context.Context, from int64, load func(ctx context.Context, since int64) (map[int64][]depthSample, error), read func(v depthView)) (bool, error) {
	if m.off {
		return false, nil
	}
	m.mu.RLock()
	if m.rings != nil {
		defer m.mu.RUnlock()
		if from < m.since {
			return false, nil
		}
		read(depthView{rings: m.rings, minutes: m.minutes, values: m.values, empty: m.empty})
		return true, nil
	}
	m.mu.RUnlock()
	m.mu.Lock()
	if m.rings == nil {
		// The first window read decides what the memory covers: its own start, and as much
		// before as is kept, so that a slightly earlier read later is covered too.
		since := from - depthKeep.Milliseconds()/10
		rings, err := load(ctx, since)
		if err != nil {
			m.mu.Unlock()
			return false, err
		}
		m.rings, m.since = rings, since
		m.buildIndexes()
		for _, ring := range rings {
			if n := len(ring); n > 0 && ring[n-1].at > m.newest {
				m.newest = ring[n-1].at
			}
		}
	}
	m.mu.Unlock()
	return m.window(ctx, from, load, read)
}
