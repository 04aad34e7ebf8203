// Package parallel runs work over the indexes of a slice on every processor: the overview's
// thousand summaries, fingerprints and row renderings are each independent of the others, and a
// page is served sooner when both cores of a small machine share them.
package parallel

import (
	"context"
	"runtime"
	"sync/atomic"

	"golang.org/x/sync/errgroup"
)

// Stretches calls work over [0, n) in stretches of consecutive indexes, on every processor at
// once (no more goroutines than processors, nor than indexes), and returns the first error;
// after an error, ctx is cancelled and no further stretch starts. Each index is in exactly one
// stretch, so work may write its results at its own indexes of a slice without a lock.
//
// There are several stretches per processor, each goroutine taking the next one left: a
// processor that something else holds up for a while (a read running beside, the garbage
// collector) then does fewer, and the others do not wait idle at the end for its share.
func Stretches(ctx context.Context, n int, work func(ctx context.Context, from, to int) error) error {
	if n <= 0 {
		return nil
	}
	runs := min(runtime.GOMAXPROCS(0), n)
	if runs == 1 {
		return work(ctx, 0, n)
	}
	stretches := min(n, runs*stretchesPerProcessor)
	var next atomic.Int64
	g, ctx := errgroup.WithContext(ctx)
	for range runs {
		g.Go(func() error {
			for {
				i := int(next.Add(1)) - 1
				if i >= stretches {
					return nil
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := work(ctx, i*n/stretches, (i+1)*n/stretches); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// stretchesPerProcessor is how many stretches each processor's share is cut into.
const stretchesPerProcessor = 8
