package views

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// TestSnapshotReadsAsComputedFromScratch: for random fleets and clock instants, the snapshot a
// Service keeps (rebuilt only at a change or its Until) shows what a snapshot computed from
// scratch at the same instant shows: each queue's summary (health and reasons, ages,
// sparkline, advice), the problems, totals, scopes and freshness. The fleets hold what makes
// judgements change with the clock alone: gone queues, data turning stale, errors leaving their
// window, ages whose datapoints age, growing dead-letter queues, queues just emptied and just
// found, and samples taken long ago.
func TestSnapshotReadsAsComputedFromScratch(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 42))
			f := newFixture(t)
			clock := now
			at := func() time.Time { return clock }
			bus := events.NewBus()
			kept := New(Options{Store: f.store, Now: at, Changes: bus, Lag: -1})
			scratch := func() *Snapshot {
				t.Helper()
				snap, err := New(Options{Store: f.store, Now: at}).Snapshot(f.ctx)
				f.must(err)
				return snap
			}
			randomFleet(t, f, r, clock, 80)
			builds := map[uint64]bool{}
			for step := range 120 {
				if step%40 == 39 { // the store changes now and then, as a cycle writes, and says so
					randomFleet(t, f, r, clock, 0)
					bus.Publish(events.Event{Kind: events.QueuesChanged, At: clock})
				}
				// Mostly reads close together, as pages come; now and then a long wait.
				wait := time.Duration(r.IntN(3_000)) * time.Millisecond
				if r.IntN(5) == 0 {
					wait = time.Duration(r.IntN(90_000)) * time.Millisecond
				}
				clock = clock.Add(wait)
				got, err := kept.Snapshot(f.ctx)
				f.must(err)
				builds[got.Seq] = true
				want := scratch()
				if diff := snapshotDiff(got, want); diff != "" {
					t.Fatalf("step %d at %s: the kept snapshot (built at %s, until %s) differs from one computed now: %s",
						step, clock.Format(time.TimeOnly), got.At.Format(time.TimeOnly), got.Until.Format(time.TimeOnly), diff)
				}
			}
			// The test must let snapshots serve more than once, or it compares scratch with itself.
			if len(builds) > 90 {
				t.Errorf("%d builds in 120 reads: the snapshot never served twice", len(builds))
			}
		})
	}
}

// snapshotDiff says how two snapshots differ in what they show; "" when they do not.
func snapshotDiff(got, want *Snapshot) string {
	g, w := got.Overview, want.Overview
	if len(g.Queues) != len(w.Queues) {
		return fmt.Sprintf("%d queues, want %d", len(g.Queues), len(w.Queues))
	}
	for i := range w.Queues {
		if !reflect.DeepEqual(g.Queues[i], w.Queues[i]) {
			return fmt.Sprintf("queue %d:\n got %+v\nwant %+v", i, g.Queues[i], w.Queues[i])
		}
	}
	// The summary says when it was computed: the kept one earlier.
	gs, ws := got.Summary(want.At), want.Summary(want.At)
	gs.GeneratedAt = ws.GeneratedAt
	for name, pair := range map[string][2]any{
		"problems": {g.Problems, w.Problems}, "totals": {g.Totals, w.Totals}, "scopes": {g.Scopes, w.Scopes},
		"sight": {g.Sight, w.Sight}, "cost": {g.Cost, w.Cost},
		"freshness": {got.FreshnessAt(want.At), want.FreshnessAt(want.At)},
		"summary":   {gs, ws},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			return fmt.Sprintf("%s:\n got %+v\nwant %+v", name, pair[0], pair[1])
		}
	}
	return ""
}

// randomFleet adds a few queues in random states, their depth samples up to history times 45 s
// before clock (the collector writes a sample as it reads it: a fleet found later has no
// history before it), and a cycle that finished at clock.
func randomFleet(t *testing.T, f *fixture, r *rand.Rand, clock time.Time, history int) {
	t.Helper()
	ctx := context.Background()
	for range 4 {
		name := fmt.Sprintf("q-%d", len(f.ids))
		dlq := name + "-dlq"
		f.queue(dlq)
		id, err := f.store.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Name: name, ARN: account + name, URL: "https://sqs/" + name,
			FirstSeen: clock.Add(-time.Duration(r.IntN(30)) * time.Minute), LastSeen: clock}) // found lately, or not
		f.must(err)
		f.ids[name] = id
		newest := clock.Add(-time.Duration(r.IntN(120)) * time.Second) // fresh, or turning stale
		if history == 0 {
			newest = clock
		}
		for k := r.IntN(history + 1); k >= 0; k-- {
			at := newest.Add(-time.Duration(k) * 45 * time.Second)
			visible := int64(r.IntN(3))
			if r.IntN(4) == 0 {
				visible = 0 // emptied now and then
			}
			f.attrs(name, dlq, 2+r.IntN(4), 345600, at, visible*int64(r.IntN(20)))
			f.attrs(dlq, "", 0, 1209600, at, int64(k/10*r.IntN(3))) // growing, or not
		}
		if r.IntN(3) == 0 {
			f.must(f.store.UpsertMetricPoints(ctx, []store.MetricPoint{{QueueID: f.ids[name], Metric: metricOldestAge,
				At: clock.Add(-time.Duration(r.IntN(20)) * time.Minute), Period: 60, Value: float64(r.IntN(4000))}}))
		}
		if r.IntN(3) == 0 {
			_, err := f.store.SaveSample(ctx, store.Sample{QueueID: f.ids[dlq], Kind: store.SampleDeadLetter,
				At: clock.Add(-time.Duration(r.IntN(20)) * time.Minute), Seen: 3, ApproxVisible: 3, Receives: 1, MessagesTaken: 3},
				toolMessages(3, name), nil)
			f.must(err)
		}
		if r.IntN(3) == 0 {
			f.must(f.store.RecordError(ctx, store.CollectorError{QueueID: f.ids[name], Operation: "GetQueueAttributes",
				Code: "Throttling", Message: "slow down", At: clock.Add(-time.Duration(r.IntN(6*60)) * time.Second)}))
		}
		if r.IntN(5) == 0 {
			f.must(f.store.MarkQueueGone(ctx, f.ids[name], clock.Add(-time.Duration(r.IntN(3*3600))*time.Second)))
		}
	}
	f.finishedRun(clock.Add(-time.Duration(r.IntN(60)) * time.Second))
}

// TestReadNeverWaitsOnABuild: with the product's default Lag, a read while a build holds the
// builder (a change waits, and the clock passed the snapshot's Until) is served the snapshot it
// has at once, with its freshness counted to the read's instant; with a negative Lag the same
// read waits for the build.
func TestReadNeverWaitsOnABuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	clock := now
	bus := events.NewBus()
	s := New(Options{Store: f.store, Now: func() time.Time { return clock }, Changes: bus})
	first, err := s.Snapshot(f.ctx)
	f.must(err)
	bus.Publish(events.Event{Kind: events.QueuesChanged, At: clock})
	clock = clock.Add(time.Hour) // past every Until
	s.snaps.mu.Lock()            // a build under way
	got, err := s.Snapshot(f.ctx)
	s.snaps.mu.Unlock()
	f.must(err)
	if got != first {
		t.Fatalf("a read during a build got snapshot %d, want the current one, %d", got.Seq, first.Seq)
	}
	if fr := got.FreshnessAt(clock); !first.Overview.Freshness.UpdatedAt.IsZero() && fr.AgeSeconds < 3600 {
		t.Errorf("the served snapshot's age is %v s an hour on, want its age counted to now", fr.AgeSeconds)
	}

	waiting := New(Options{Store: f.store, Now: func() time.Time { return clock }, Changes: bus, Lag: -1})
	before, err := waiting.Snapshot(f.ctx)
	f.must(err)
	bus.Publish(events.Event{Kind: events.QueuesChanged, At: clock})
	after, err := waiting.Snapshot(f.ctx)
	f.must(err)
	if after == before {
		t.Error("with a negative Lag a read after a change was served the snapshot before it")
	}
}
