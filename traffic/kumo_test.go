package traffic

import (
	"context"
	"testing"
	"time"

	"github.com/sivchari/kumo"
)

// TestRunAgainstKumo drives an SQS implementation nobody here wrote: the traffic must work
// against any endpoint, not just the embedded simulator.
func TestRunAgainstKumo(t *testing.T) {
	t.Parallel()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	client := newClient(t, srv.URL)

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for range 2 {
		if _, err := Setup(ctx, client); err != nil {
			t.Fatalf("Setup: %v", err)
		}
	}

	runCtx, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	// kumo keeps its queues in package state that every server of the process shares: a seed of
	// its own per run keeps a repeated run (go test -count=N) from resending the same tool-call
	// ids, which the FIFO queue would deduplicate.
	g := New(client, Options{Seed: time.Now().UnixNano(), Rate: 20, VisibilityTimeout: time.Second, WaitTime: time.Second, Logger: testLogger(t)})
	if err := g.Run(runCtx); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if g.stats.sent.Load() == 0 || g.stats.succeeded.Load() == 0 {
		t.Errorf("sent %d, succeeded %d: want some of both", g.stats.sent.Load(), g.stats.succeeded.Load())
	}
	if n := g.stats.sendErrors.Load(); n > 0 {
		t.Errorf("%d send errors", n)
	}
}
