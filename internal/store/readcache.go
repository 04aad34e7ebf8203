package store

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
)

// The overview reads every queue, each queue's newest sample and newest age of the oldest message
// on every page and every push, though these change at most once a collector cycle. The store is
// their one writer, so it can tell when they changed: each write bumps the generation of the
// table it wrote to once it has committed, and a read caches its answer with the generation it
// saw before it read. A read whose generation is still current answers from the cache; any
// write since makes the next read go to SQLite. (A write that commits while a read runs makes
// the generation newer than the read's answer, so the answer is never kept past that write.)
// One write is laid over the cached answer instead: a queue's attributes, which every attribute
// cycle writes for every queue (layAttributes).

// generations count the committed writes to the tables whose reads are cached.
type generations struct {
	queues  atomic.Uint64 // queues (and so the redrive sources of each)
	samples atomic.Uint64 // samples, their messages and group backlogs
	metrics atomic.Uint64 // metric_points
}

// cached is one cached answer and the generation it was read at.
type cached[T any] struct {
	gen uint64
	val T
}

// readCache holds the cached answers.
type readCache struct {
	// off: other processes write these tables too (replicas on PostgreSQL), whose writes no
	// generation counts; the cached reads below always read. nearMax and groups stay on.
	off    bool
	mu     sync.Mutex
	queues map[QueueFilter]cached[[]Queue]
	// queueAt is where each queue is in each cached list, by id: an attribute cycle lays a
	// thousand queues' attributes, and finding each by a walk of the list cost 8 ms of CPU a cycle.
	queueAt       map[QueueFilter]map[int64]int
	latestSamples *cached[map[int64]Sample]
	latestMetric  map[string]cached[map[int64]MetricPoint]
	// What NearMaxCounts and GroupsOfSamples found of each sample: a sample never changes once
	// stored, so these stay until Prune.
	nearMax map[int64]int
	groups  map[int64][]GroupBacklog
	// attributes are what SaveQueueAttributes wrote of each queue whose redrive policy it left
	// as it was, laid over the cached queue lists as they are read: an attribute cycle writes
	// every queue's attributes, and a list read again from SQLite after each (17 ms at 1,000
	// queues) was most of the next page's time. One a queue, the newest.
	attributes map[int64]laidAttributes
}

// laidAttributes are a queue's attributes as written, when they were read from SQS, and the
// generation of the queue lists they were laid over.
type laidAttributes struct {
	attrs map[string]string
	at    int64 // unix ms
	gen   uint64
}

// cachedRead answers from the cache entry get returns when its generation is gen's current one,
// else reads and keeps the answer with the generation seen before reading; it returns that
// generation with the answer.
func cachedRead[T any](c *readCache, gen *atomic.Uint64, get func() (cached[T], bool), put func(cached[T]), read func() (T, error)) (T, uint64, error) {
	g := gen.Load()
	if c.off {
		v, err := read()
		return v, g, err
	}
	c.mu.Lock()
	e, ok := get()
	c.mu.Unlock()
	if ok && e.gen == g {
		return e.val, g, nil
	}
	v, err := read()
	if err != nil {
		return v, g, err
	}
	c.mu.Lock()
	if e, ok := get(); !ok || e.gen <= g {
		put(cached[T]{gen: g, val: v})
	}
	c.mu.Unlock()
	return v, g, nil
}

// cachedQueues is ListQueues through the cache, with the attributes written since laid over.
// The queues are shared with every caller: their maps and slices must not be changed.
func (s *Store) cachedQueues(ctx context.Context, f QueueFilter, read func() ([]Queue, error)) ([]Queue, error) {
	c := &s.cache
	qs, gen, err := cachedRead(c, &s.gen.queues,
		func() (cached[[]Queue], bool) { e, ok := c.queues[f]; return e, ok },
		func(e cached[[]Queue]) {
			if c.queues == nil {
				c.queues, c.queueAt = map[QueueFilter]cached[[]Queue]{}, map[QueueFilter]map[int64]int{}
			}
			at := make(map[int64]int, len(e.val))
			for i, q := range e.val {
				at[q.ID] = i
			}
			c.queues[f], c.queueAt[f] = e, at
		}, read)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(qs)
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range out {
		// Attributes laid at an older generation were written before the list was read (a
		// generation ends with a write that reads the database again), so the list has them.
		if l, ok := c.attributes[out[i].ID]; ok && l.gen == gen {
			out[i].Attributes, out[i].AttributesAt = l.attrs, fromMS(l.at)
		}
	}
	return out, nil
}

// layAttributes lays a queue's newly written attributes (read from SQS at at, unix ms; decoded
// by attrs, called only when they can be laid) over the cached queue lists, and reports false
// when it cannot, for the writer to make the next list read the database instead: the cache is
// off, no list of generation gen (the writer's, seen before it wrote) holds the queue, the write
// changed its redrive policy, from which the other queues' sources are read, or attrs failed.
func (c *readCache) layAttributes(gen uint64, id int64, at int64, dlq string, maxReceiveCount int, attrs func() (map[string]string, error)) bool {
	if c.off {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.attributes, id) // this write's attributes are laid, or read from the database
	for f, e := range c.queues {
		if e.gen != gen {
			continue
		}
		i, ok := c.queueAt[f][id]
		if !ok {
			continue
		}
		if q := e.val[i]; q.DeadLetterTargetARN != dlq || q.MaxReceiveCount != maxReceiveCount {
			return false
		}
		decoded, err := attrs()
		if err != nil {
			return false
		}
		if c.attributes == nil {
			c.attributes = map[int64]laidAttributes{}
		}
		c.attributes[id] = laidAttributes{attrs: decoded, at: at, gen: gen}
		return true
	}
	return false
}

// cachedLatestSamples is LatestSamples through the cache.
func (s *Store) cachedLatestSamples(read func() (map[int64]Sample, error)) (map[int64]Sample, error) {
	c := &s.cache
	m, _, err := cachedRead(c, &s.gen.samples,
		func() (cached[map[int64]Sample], bool) {
			if c.latestSamples == nil {
				return cached[map[int64]Sample]{}, false
			}
			return *c.latestSamples, true
		},
		func(e cached[map[int64]Sample]) { c.latestSamples = &e }, read)
	return maps.Clone(m), err
}

// cachedLatestMetric is LatestMetricPoints through the cache.
func (s *Store) cachedLatestMetric(metric string, read func() (map[int64]MetricPoint, error)) (map[int64]MetricPoint, error) {
	c := &s.cache
	m, _, err := cachedRead(c, &s.gen.metrics,
		func() (cached[map[int64]MetricPoint], bool) { e, ok := c.latestMetric[metric]; return e, ok },
		func(e cached[map[int64]MetricPoint]) {
			if c.latestMetric == nil {
				c.latestMetric = map[string]cached[map[int64]MetricPoint]{}
			}
			c.latestMetric[metric] = e
		}, read)
	return maps.Clone(m), err
}

// uncachedSamples returns the sample ids whose near-max counts (groups: groups) are
// not cached yet.
func (c *readCache) uncachedSamples(ids []int64, groups bool) []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var missing []int64
	for _, id := range ids {
		var ok bool
		if groups {
			_, ok = c.groups[id]
		} else {
			_, ok = c.nearMax[id]
		}
		if !ok {
			missing = append(missing, id)
		}
	}
	return missing
}

// forgetSamples drops what is cached of samples: Prune deleted some.
func (c *readCache) forgetSamples() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nearMax, c.groups = nil, nil
}
