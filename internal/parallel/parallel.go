// Package parallel runs work over the indexes of a slice on every processor: the overview's
// thousand summaries, fingerprints and row renderings are each independent of the others, and a
// page is served sooner when both cores of a small machine share them.
package parallel

import (
	"context"
	"runtime"

	"golang.org/x/sync/errgroup"
)

// Stretches calls work over [0, n) in stretches of consecutive indexes, one per processor (no
// more than there are indexes), all at once, and returns the first error; after an error, ctx
// is cancelled for the stretches still running. Each index is in exactly one stretch, so work
// may write its results at its own indexes of a slice without a lock.
func Stretches(ctx context.Context, n int, work func(ctx context.Context, from, to int) error) error {
	if n <= 0 {
		return nil
	}
	runs := min(runtime.GOMAXPROCS(0), n)
	if runs == 1 {
		return work(ctx, 0, n)
	}
	size := (n + runs - 1) / runs
	g, ctx := errgroup.WithContext(ctx)
	for from := 0; from < n; from += size {
		to := min(from+size, n)
		g.Go(func() error { return work(ctx, from, to) })
	}
	return g.Wait()
}
