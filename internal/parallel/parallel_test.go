package parallel

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestStretchesCoverEveryIndexOnce: for small and large n and several processor counts, every
// index is worked on exactly once, by no more goroutines at once than there are processors.
func TestStretchesCoverEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 3, 7, 1000, 1001} {
			seen := make([]int32, n)
			var stretches, running, most atomic.Int32
			err := Stretches(context.Background(), n, func(_ context.Context, from, to int) error {
				stretches.Add(1)
				now := running.Add(1)
				defer running.Add(-1)
				for m := most.Load(); now > m && !most.CompareAndSwap(m, now); m = most.Load() {
				}
				for i := from; i < to; i++ {
					atomic.AddInt32(&seen[i], 1)
				}
				runtime.Gosched() // let the others take theirs meanwhile
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("procs %d, n %d: index %d worked on %d times", procs, n, i, c)
				}
			}
			if n > 0 && stretches.Load() == 0 {
				t.Errorf("procs %d, n %d: no stretch", procs, n)
			}
			if got := int(most.Load()); got > procs {
				t.Errorf("procs %d, n %d: %d stretches at once", procs, n, got)
			}
		}
	}
}

// TestStretchesOneEachUpToTheProcessors: with no more indexes than processors, each index is a
// stretch of its own and all run at once (gzip's stretches rely on it to compress in parallel).
func TestStretchesOneEachUpToTheProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	for n := 1; n <= 4; n++ {
		var arrived atomic.Int32
		all := make(chan struct{})
		err := Stretches(context.Background(), n, func(_ context.Context, from, to int) error {
			if to != from+1 {
				t.Errorf("n %d: stretch [%d, %d)", n, from, to)
			}
			if int(arrived.Add(1)) == n {
				close(all)
			}
			select { // every stretch waits for the others: they must all be running
			case <-all:
				return nil
			case <-time.After(10 * time.Second):
				return fmt.Errorf("n %d: %d stretches running, not all at once", n, arrived.Load())
			}
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestStretchesReturnTheFirstError: a failing stretch's error comes back, and the others see
// their context cancelled.
func TestStretchesReturnTheFirstError(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	boom := errors.New("boom")
	err := Stretches(context.Background(), 10, func(ctx context.Context, from, _ int) error {
		if from == 0 {
			return boom
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Stretches = %v; want boom", err)
	}
}
