package store

import (
	"context"
	"testing"
	"time"
)

// TestOwnReceivesBetween: what each sample raised, in its range only, oldest first, on both engines.
func TestOwnReceivesBetween(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "web-search-dlq")
		for i, taken := range []int{3, 5, 7} {
			if _, err := s.SaveSample(ctx, Sample{QueueID: q.ID, Kind: SampleDeadLetter, At: t0.Add(time.Duration(i) * time.Minute),
				Seen: taken, ApproxVisible: int64(taken), Receives: 1, MessagesTaken: taken}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.OwnReceivesBetween(ctx, q.ID, t0.Add(time.Minute), t0.Add(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].MessagesTaken != 5 || got[1].MessagesTaken != 7 || !got[0].At.Equal(t0.Add(time.Minute)) {
			t.Errorf("own receives = %+v, want 5 then 7 from t0+1m", got)
		}
	})
}
