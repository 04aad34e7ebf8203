package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestConcurrentWriters runs the collector's loops, the API's audit writes, readers and Prune at
// once, as the dashboard does: none may fail with SQLITE_BUSY (run it with -race).
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		var queues []Queue
		for i := range 8 {
			queues = append(queues, addQueue(t, s, fmt.Sprintf("q-%d", i)))
		}
		const rounds = 40
		var wg sync.WaitGroup
		errs := make(chan error, 1024)
		run := func(name string, fn func(i int) error) {
			wg.Go(func() {
				for i := range rounds {
					if err := fn(i); err != nil {
						errs <- fmt.Errorf("%s round %d: %w", name, i, err)
						return
					}
				}
			})
		}
		at := func(i int) time.Time { return t0.Add(time.Duration(i) * 15 * time.Second) }

		run("attributes", func(i int) error {
			for _, q := range queues {
				if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: at(i), Attributes: map[string]string{"k": "v"}, Depth: AttributeSample{Visible: int64(i)}}); err != nil {
					return err
				}
			}
			return nil
		})
		run("metrics", func(i int) error {
			var pts []MetricPoint
			for _, q := range queues {
				pts = append(pts, MetricPoint{QueueID: q.ID, Metric: fmt.Sprintf("M%d", i%3), At: at(i), Period: 60, Value: 1})
			}
			return s.UpsertMetricPoints(ctx, pts)
		})
		run("peek", func(i int) error {
			_, err := s.SaveSample(ctx, Sample{QueueID: queues[i%len(queues)].ID, At: at(i)}, dlqMessages(20), nil)
			return err
		})
		run("runs", func(i int) error {
			id, err := s.StartRun(ctx, RunAttributes, at(i))
			if err == nil {
				err = s.FinishRun(ctx, CollectorRun{ID: id, FinishedAt: at(i)})
			}
			return err
		})
		run("audit", func(i int) error {
			_, err := s.AppendAudit(ctx, AuditEntry{At: at(i), Actor: "bot", Action: "redrive.start", Result: AuditAccepted})
			return err
		})
		run("prune", func(i int) error {
			_, err := s.Prune(ctx, at(i).Add(49*time.Hour), Retention{})
			return err
		})
		for range 3 {
			run("reader", func(i int) error {
				if _, err := s.LatestAttributeSamples(ctx); err != nil {
					return err
				}
				_, err := s.ListQueues(ctx, QueueFilter{})
				return err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := count(t, s, "SELECT count(*) FROM audit_log"); n != rounds {
			t.Errorf("audit rows = %d; want %d", n, rounds)
		}
	})
}
