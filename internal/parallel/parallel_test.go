package parallel

import (
	"context"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
)

// TestStretchesCoverEveryIndexOnce: for small and large n and several processor counts, every
// index is worked on exactly once, in stretches no more numerous than the processors.
func TestStretchesCoverEveryIndexOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 2, 3, 8} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 3, 7, 1000, 1001} {
			seen := make([]int32, n)
			var stretches atomic.Int32
			err := Stretches(context.Background(), n, func(_ context.Context, from, to int) error {
				stretches.Add(1)
				for i := from; i < to; i++ {
					atomic.AddInt32(&seen[i], 1)
				}
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
			if got := int(stretches.Load()); got > procs || (n > 0 && got == 0) {
				t.Errorf("procs %d, n %d: %d stretches", procs, n, got)
			}
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
