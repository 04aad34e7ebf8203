package views

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// How the Service keeps its current snapshot. With a change bus (Options.Changes), Run builds
// the next snapshot soon after each change, at most one a MinInterval, and at each Until, and
// announces it on the bus. By default a read never waits for a build: it is served the current
// snapshot, whose freshness says how old what it shows is, however long the next build takes
// (at 10,000 queues a build takes seconds on a loaded machine, and pages that waited on it took
// as long). With a Lag, a read that comes while a change waits for Run is served the snapshot
// before it for up to Lag, then waits for a new one; a negative Lag makes every read after a
// change wait (tests that read what they just stored). Only the first read, before any
// snapshot, waits for one. Without a bus every read builds a snapshot of its own.

// DefaultMinInterval is the default of Options.MinInterval.
const DefaultMinInterval = time.Second

// snapshots is the Service's current snapshot and what it needs to know to replace it.
type snapshots struct {
	bus         *events.Bus
	minInterval time.Duration
	lag         time.Duration // 0: unbounded, a read never waits; < 0: none

	current atomic.Pointer[Snapshot]
	// changes counts the change events seen; changedAt is the wall-clock time (unix ns) of the
	// first one since the newest build began, 0 when none.
	changes   atomic.Uint64
	changedAt atomic.Int64
	changed   chan struct{} // a change came: Run builds
	builds    atomic.Uint64 // builds begun

	mu     sync.Mutex  // one build at a time
	memory buildMemory // under mu
	seq    uint64      // under mu
	stop   func()      // ends the bus watch
}

// buildMemory is what a build leaves the next: the depth history, and what each newest message
// sample holds, which never changes once stored.
type buildMemory struct {
	history depthHistory
	samples map[int64]*sampleFacts // by sample id, the newest samples' of the last build
	// outcomes is what the redrives' outcomes are counted from (outcomes.go).
	outcomes outcomeMemory
}

// sampleFacts is what the snapshot counts in one message sample: its messages near
// maxReceiveCount, its FIFO groups, (for the deepest dead-letter queues) its triage, and (once
// /metrics asked, under Service.breakdowns) its breakdown.
type sampleFacts struct {
	nearMax   int
	groups    []store.GroupBacklog
	triage    *Triage
	breakdown *SampleBreakdown
}

// invalidates reports whether an event changes what a snapshot shows.
func invalidates(k events.Kind) bool {
	switch k {
	case events.QueuesChanged, events.MetricsChanged, events.SampleTaken, events.MoveTasksChanged:
		return true
	}
	return false
}

// watch follows the bus's changes.
func (m *snapshots) watch() {
	if m.bus == nil {
		return
	}
	m.changed = make(chan struct{}, 1)
	m.stop = m.bus.Watch(func(ev events.Event) {
		if !invalidates(ev.Kind) {
			return
		}
		m.changes.Add(1)
		m.changedAt.CompareAndSwap(0, time.Now().UnixNano())
		select {
		case m.changed <- struct{}{}:
		default:
		}
	})
}

// serves reports whether snap may answer a read at now, given lag.
func (m *snapshots) serves(snap *Snapshot, now time.Time, lag time.Duration) bool {
	if snap == nil || m.bus == nil {
		return false
	}
	if lag == 0 {
		return true // Run builds the next; the snapshot's freshness says its age
	}
	if !snap.Until.IsZero() && !now.Before(snap.Until) {
		return false
	}
	if m.changes.Load() == snap.changes {
		return true
	}
	since := m.changedAt.Load()
	return lag > 0 && since != 0 && time.Since(time.Unix(0, since)) < lag
}

// Snapshot returns the current snapshot, building one first when there is none or, with a Lag,
// when the clock passed its Until or it misses a change older than Lag.
func (s *Service) Snapshot(ctx context.Context) (*Snapshot, error) {
	m := &s.snaps
	asked := m.builds.Load()
	if snap := m.current.Load(); m.serves(snap, s.clock(), m.lag) {
		return snap, nil
	}
	return s.rebuild(ctx, asked, m.lag)
}

// rebuild builds a snapshot, unless one that began after the read (asked: the builds begun
// before it) is still good when the read's turn comes.
func (s *Service) rebuild(ctx context.Context, asked uint64, lag time.Duration) (*Snapshot, error) {
	m := &s.snaps
	m.mu.Lock()
	defer m.mu.Unlock()
	if snap := m.current.Load(); snap != nil && snap.build > asked && (m.bus == nil || m.serves(snap, s.clock(), lag)) {
		return snap, nil
	}
	build := m.builds.Add(1)
	changes := m.changes.Load()
	m.changedAt.Store(0)
	snap, err := s.build(ctx, &m.memory, s.clock())
	if err != nil {
		return nil, err
	}
	m.seq++
	snap.Seq, snap.build, snap.changes = m.seq, build, changes
	m.current.Store(snap)
	if m.bus != nil {
		m.bus.Publish(events.Event{Kind: events.SnapshotBuilt, At: snap.At})
	}
	return snap, nil
}

// Run keeps the current snapshot current until ctx ends: it builds one after each change (at
// most one a MinInterval) and at each Until, and announces each on the bus. It needs
// Options.Changes; it returns nil once ctx ends, and never stops on a failed build (the next
// change or a second later tries again).
func (s *Service) Run(ctx context.Context) error {
	m := &s.snaps
	if m.bus == nil {
		return errors.New("views: Run needs Options.Changes")
	}
	defer m.stop()
	var last time.Time // when the newest build began, on the wall clock
	for {
		last = time.Now()
		var wake <-chan time.Time
		snap, err := s.rebuild(ctx, m.builds.Load(), -1)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			s.log.Warn("views: build the snapshot", "err", err)
			wake = time.After(time.Second)
		case !snap.Until.IsZero():
			wake = time.After(max(snap.Until.Sub(s.clock()), minRebuild))
		}
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
			continue
		case <-m.changed:
		}
		// Let the rest of a cycle's changes come: one build for them all.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(last.Add(m.minInterval))):
		}
	}
}

// minRebuild is the least time between two builds for the clock alone: a text that counts
// seconds ("data is 50 s old") is rebuilt each second, not faster.
const minRebuild = 100 * time.Millisecond
