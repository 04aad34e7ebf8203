package views

import (
	"cmp"
	"context"
	"slices"
	"time"
)

// Snapshot is the read side's picture of every watched queue at one instant: each queue's
// summary with its health, reasons and advice, the problems that need a person, the totals, what
// toolq cannot see, the cost of watching and the freshness. It is built once per change (a
// collector cycle, a sample, a move task) and read by everything that shows it: the pages and
// their pushes, the API, the notifier and /metrics, so that they show the same numbers by
// construction. A snapshot never changes once built: share it, never write to it.
type Snapshot struct {
	// Seq numbers a Service's snapshots, from 1, in the order they were built.
	Seq uint64
	// At is the instant the snapshot shows. Until is the earliest instant at which something it
	// shows would read differently with the clock alone (data turning stale, an age's text, an
	// error leaving its window, a sparkline's minute): it is rebuilt then. Zero: never.
	At, Until time.Time
	// Overview is every queue, unhealthy first, with what the overview page shows around them.
	// Its Freshness is as of At: FreshnessAt counts its age to another instant.
	Overview Overview

	readings *readings
	byID     map[int64]int // index into Overview.Queues
	summary  Summary       // what the chat bots' summary says, as of At
	// build numbers the build among those begun; changes is how many changes the Service had
	// been told of when it began.
	build, changes uint64
}

// Queue returns one queue's summary.
func (snap *Snapshot) Queue(id int64) (QueueSummary, bool) {
	i, ok := snap.byID[id]
	if !ok {
		return QueueSummary{}, false
	}
	return snap.Overview.Queues[i], true
}

// Queues returns the queues that match q, in the overview's order.
func (snap *Snapshot) Queues(q QueueQuery) []QueueSummary {
	out := []QueueSummary{}
	for _, sum := range snap.Overview.Queues {
		if q.DLQOnly && !sum.IsDeadLetterQueue {
			continue
		}
		if q.Misconfigured && !sum.Misconfigured() {
			continue
		}
		if len(q.Health) > 0 && !slices.Contains(q.Health, sum.Health.Status) {
			continue
		}
		if !sum.InScope(q.Account, q.Region) {
			continue
		}
		out = append(out, sum)
	}
	return out
}

// FreshnessAt is the snapshot's freshness with its age counted to now.
func (snap *Snapshot) FreshnessAt(now time.Time) Freshness {
	f := snap.Overview.Freshness
	f.Blind = slices.Clone(f.Blind)
	if !f.UpdatedAt.IsZero() {
		f.AgeSeconds = seconds(now.Sub(f.UpdatedAt))
	}
	return f
}

// Summary is what a chatops bot posts, as of the snapshot, its freshness's age counted to now;
// the caller may set its dead-letter queues' links (the slice is its own).
func (snap *Snapshot) Summary(now time.Time) Summary {
	sum := snap.summary
	sum.Freshness = snap.FreshnessAt(now)
	sum.DeadLetterQueues = slices.Clone(sum.DeadLetterQueues)
	return sum
}

// recentRedrives is how many of each dead-letter queue's newest move tasks a snapshot holds.
const recentRedrives = 10

// Redrives returns a dead-letter queue's newest move tasks (at most recentRedrives), newest
// first, as of the snapshot.
func (snap *Snapshot) Redrives(queueID int64) []Redrive {
	tasks := snap.readings.redrives[queueID]
	out := make([]Redrive, len(tasks))
	for i, t := range tasks {
		out[i] = snap.withOutcome(redriveOf(t, snap.At))
	}
	return out
}

// Advice returns the advice of the snapshot's queues that aq asks for, worst first.
func (snap *Snapshot) Advice(aq AdviceQuery) []Advice {
	out := []Advice{}
	for _, q := range snap.Overview.Queues {
		if aq.QueueID != 0 && q.ID != aq.QueueID {
			continue
		}
		for _, a := range q.Advice {
			if aq.Rule == "" || a.Rule == aq.Rule {
				out = append(out, a)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Advice) int {
		return cmp.Or(cmp.Compare(b.Severity.Rank(), a.Severity.Rank()), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Region, b.Region))
	})
	return out
}

// build reads the store and computes a snapshot of now.
func (s *Service) build(ctx context.Context, mem *buildMemory, now time.Time) (*Snapshot, error) {
	rd, err := s.read(ctx, mem, now)
	if err != nil {
		return nil, err
	}
	queues, err := s.summaries(ctx, rd)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{At: now, readings: rd, byID: make(map[int64]int, len(queues))}
	for i, q := range queues {
		snap.byID[q.ID] = i
	}
	sight := rd.sight.problems()
	snap.Overview = Overview{Queues: queues, Totals: totals(queues), Cost: costOf(rd), Sight: sight,
		Freshness: freshnessOf(rd, s.th.StaleAfter)}
	snap.Overview.Problems = problems(queues, sight)
	snap.Overview.Scopes = scopes(queues, snap.Overview.Freshness.Blind)
	if snap.summary, err = s.botSummary(ctx, snap); err != nil {
		return nil, err
	}
	snap.Until = rd.clock.until
	return snap, nil
}

// freshnessOf says how old the newest attribute cycle is at the readings' instant, and which
// regions toolq cannot see. Before the first cycle it is stale with a zero UpdatedAt.
func freshnessOf(rd *readings, staleAfter time.Duration) Freshness {
	f := Freshness{Stale: true, Blind: blindRegions(rd.sight.problems())}
	if rd.run == nil {
		return f
	}
	f.UpdatedAt, f.AgeSeconds = rd.run.FinishedAt.UTC(), seconds(rd.now.Sub(rd.run.FinishedAt))
	f.Stale = rd.clock.past(rd.run.FinishedAt.Add(staleAfter))
	return f
}
