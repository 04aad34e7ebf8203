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
	g := New(client, Options{Seed: 1, Rate: 20, VisibilityTimeout: time.Second, WaitTime: time.Second, Logger: testLogger(t)})
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
