package replicas

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// member is one replica under test: its store, bus and how often it led.
type member struct {
	rep     *Replica
	bus     *events.Bus
	leading atomic.Int32 // lead functions running now
	terms   atomic.Int32 // lead functions started
	stop    context.CancelFunc
	done    chan struct{}
}

func start(t *testing.T, url, id string) *member {
	t.Helper()
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := &member{bus: events.NewBus(), done: make(chan struct{})}
	m.rep = New(Options{Store: st, Local: m.bus, ID: id, Check: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	m.stop = cancel
	go func() {
		defer close(m.done)
		m.rep.Run(ctx, func(ctx context.Context) {
			m.terms.Add(1)
			m.leading.Add(1)
			<-ctx.Done()
			m.leading.Add(-1)
		})
	}()
	t.Cleanup(func() { cancel(); <-m.done })
	return m
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// TestOneLeaderAndTakeover: of three replicas exactly one leads at any time; when it stops,
// another takes over, and the collectors never overlap.
func TestOneLeaderAndTakeover(t *testing.T) {
	url := pgtest.DB(t)
	ms := []*member{start(t, url, "a"), start(t, url, "b"), start(t, url, "c")}
	var overlap atomic.Bool
	var wg sync.WaitGroup
	watch, stopWatch := context.WithCancel(context.Background())
	wg.Go(func() {
		for watch.Err() == nil {
			n := int32(0)
			for _, m := range ms {
				n += m.leading.Load()
			}
			if n > 1 {
				overlap.Store(true)
			}
			time.Sleep(time.Millisecond)
		}
	})
	leaders := func() []*member {
		var out []*member
		for _, m := range ms {
			if m.leading.Load() == 1 && m.rep.Leader() {
				out = append(out, m)
			}
		}
		return out
	}
	eventually(t, "one leader", func() bool { return len(leaders()) == 1 })
	first := leaders()[0]
	first.stop()
	<-first.done
	eventually(t, "a new leader after the first stopped", func() bool {
		l := leaders()
		return len(l) == 1 && l[0] != first
	})
	stopWatch()
	wg.Wait()
	if overlap.Load() {
		t.Error("two replicas ran their collectors at once")
	}
	if first.rep.Leader() || first.leading.Load() != 0 {
		t.Error("the stopped replica still says it leads")
	}
}

// TestNoticesReachOtherReplicas: an event published on one replica reaches the other's bus,
// once, and not its own bus twice.
func TestNoticesReachOtherReplicas(t *testing.T) {
	url := pgtest.DB(t)
	a, b := start(t, url, "a"), start(t, url, "b")
	onA, endA := a.bus.Subscribe(16)
	defer endA()
	onB, endB := b.bus.Subscribe(16)
	defer endB()
	// Listening starts asynchronously: publish until B has heard one.
	want := events.Event{Kind: events.MoveTasksChanged, QueueID: 7, At: time.UnixMilli(1_700_000_000_000)}
	got := make(chan events.Event, 1)
	go func() {
		for e := range onB {
			if e.Kind == events.MoveTasksChanged {
				got <- e
				return
			}
		}
	}()
	deadline := time.After(10 * time.Second)
	for heard := false; !heard; {
		a.rep.Publish(want)
		select {
		case e := <-got:
			if e.Kind != want.Kind || e.QueueID != want.QueueID || !e.At.Equal(want.At) {
				t.Fatalf("B got %+v; want %+v", e, want)
			}
			heard = true
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatal("B never heard A's event")
		}
	}
	// A's own bus had each event once, from Publish, not again from its own notice.
	time.Sleep(200 * time.Millisecond)
	n := 0
	for len(onA) > 0 {
		<-onA
		n++
	}
	if sent := int(testCounter(a.rep, "sent")); n != sent {
		t.Errorf("A's bus had %d events for %d notices sent; want one each", n, sent)
	}
}

// TestStatusRows: each replica heartbeats a row, the leader marked, and removes it on stop.
func TestStatusRows(t *testing.T) {
	url := pgtest.DB(t)
	a, b := start(t, url, "a"), start(t, url, "b")
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventually(t, "two rows, one leader", func() bool {
		rs, err := st.Replicas(context.Background(), time.Now().Add(-time.Minute))
		return err == nil && len(rs) == 2 && rs[0].Leader && !rs[1].Leader && !rs[0].LeaderSince.IsZero()
	})
	a.stop()
	<-a.done
	b.stop()
	<-b.done
	rs, err := st.Replicas(context.Background(), time.Time{})
	if err != nil || len(rs) != 0 {
		t.Errorf("rows after both stopped = %+v, %v; want none", rs, err)
	}
}

// TestSQLiteLeadsAlone: on SQLite the one dashboard leads at once and for good.
func TestSQLiteLeadsAlone(t *testing.T) {
	st, err := store.Open(context.Background(), t.TempDir()+"/toolq.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	bus := events.NewBus()
	r := New(Options{Store: st, Local: bus, Check: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	var terms atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx, func(ctx context.Context) { terms.Add(1); <-ctx.Done() })
	}()
	eventually(t, "leading", r.Leader)
	time.Sleep(100 * time.Millisecond) // several checks
	cancel()
	<-done
	if terms.Load() != 1 {
		t.Errorf("lead ran %d times; want once", terms.Load())
	}
	onBus, end := bus.Subscribe(1)
	defer end()
	r.Publish(events.Event{Kind: events.AuditAppended})
	if e := <-onBus; e.Kind != events.AuditAppended {
		t.Errorf("local event = %+v", e)
	}
}

func testCounter(r *Replica, direction string) float64 {
	var m dto.Metric
	r.notices.WithLabelValues(direction).Write(&m)
	return m.GetCounter().GetValue()
}
