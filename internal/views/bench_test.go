package views

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// BenchmarkOverview measures a snapshot's build (what every change costs once, for every page,
// push and bot) of 200 and of 1,000 queues with an hour of 15-s depth samples each, half of
// them dead-letter queues with a sample of 50 messages. The first build, which reads the hour of
// depth samples whole, comes before the measured ones, which read what is new, as after each
// collector cycle.
func BenchmarkOverview(b *testing.B) {
	for _, pairs := range []int{benchPairs, 5 * benchPairs} {
		b.Run(fmt.Sprintf("queues=%d", 2*pairs), func(b *testing.B) {
			f := benchFixture(b, pairs)
			if _, err := f.svc.Overview(f.ctx); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				ov, err := f.svc.Overview(f.ctx)
				if err != nil || len(ov.Queues) != 2*pairs {
					b.Fatalf("Overview = %d queues, %v", len(ov.Queues), err)
				}
			}
		})
	}
}

// BenchmarkQueueDetail measures one queue's page among the same 200 queues: it should cost what
// one queue costs, not what the overview costs.
func BenchmarkQueueDetail(b *testing.B) {
	f := benchFixture(b, benchPairs)
	for b.Loop() {
		d, err := f.svc.Queue(f.ctx, f.idOf("q-042-dlq"))
		if err != nil || len(d.Sparkline) == 0 {
			b.Fatalf("Queue = %d sparkline points, %v", len(d.Sparkline), err)
		}
	}
}

// benchPairs is how many source queues, each with its dead-letter queue, the benchmarks watch
// unless they say otherwise.
const benchPairs = 100

// benchFixture is the benchmarks' store: pairs of queues with an hour of 15-s depth samples
// each, every dead-letter queue with a sample of 50 messages.
func benchFixture(b *testing.B, pairs int) *fixture {
	b.Helper()
	return benchFixtureAt(b, pairs, filepath.Join(b.TempDir(), "toolq.db"))
}

// benchFixtureAt is benchFixture on the database db names.
func benchFixtureAt(b *testing.B, pairs int, db string) *fixture {
	b.Helper()
	f := newFixtureAt(b, db)
	st := f.store
	var history []store.AttributeSample
	for i := range pairs {
		src, dlq := fmt.Sprintf("q-%03d", i), fmt.Sprintf("q-%03d-dlq", i)
		f.queue(src)
		f.queue(dlq)
		// The hour before in one transaction, the newest reading as the collector stores it.
		for k := 240; k > 0; k-- {
			at := now.Add(-time.Duration(k) * 15 * time.Second)
			history = append(history,
				store.AttributeSample{QueueID: f.ids[src], At: at, Visible: int64(k % 10), InFlight: 1},
				store.AttributeSample{QueueID: f.ids[dlq], At: at, Visible: 3, InFlight: 1})
		}
		f.attrs(src, dlq, 5, 345600, now, 0)
		f.attrs(dlq, "", 0, 1209600, now, 3)
		if _, err := st.SaveSample(f.ctx, store.Sample{QueueID: f.ids[dlq], At: now, Seen: 50}, toolMessages(50, src), nil); err != nil {
			b.Fatal(err)
		}
	}
	f.must(st.SaveAttributeSamples(f.ctx, history))
	f.finishedRun(now)
	return f
}
