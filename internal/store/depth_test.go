package store

import (
	"context"
	"slices"
	"testing"
	"time"
)

// depthRow is one attribute_samples row for the depth-read tests: offset from t0, resolution
// (0 raw, else a roll-up's bucket seconds), visible.
type depthRow struct {
	at         time.Duration
	resolution int
	visible    int64
}

// addDepths writes rows for queueID straight into attribute_samples, roll-ups included, which
// SaveQueueAttributes cannot write.
func addDepths(t *testing.T, s *Store, queueID int64, rows ...depthRow) {
	t.Helper()
	for _, r := range rows {
		_, err := s.wdb.ExecContext(context.Background(), `
			INSERT INTO attribute_samples (queue_id, at, resolution, visible, in_flight, delayed)
			VALUES (?, ?, ?, ?, 0, 0)`, queueID, ms(t0.Add(r.at)), r.resolution, r.visible)
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestDepthSamplesSince: every queue's samples from since on, oldest first, a queue without any
// absent, a roll-up winning over the raw sample of its time, on both engines.
func TestDepthSamplesSince(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a")
		b := addQueue(t, s, "b")
		addQueue(t, s, "quiet")
		addDepths(t, s, a.ID,
			depthRow{-time.Second, 0, 100}, // before since
			depthRow{0, 0, 1},              // since included
			depthRow{time.Minute, 0, 2},
			depthRow{time.Minute, 300, 30}, // a roll-up sharing the time wins
			depthRow{3 * time.Minute, 0, 4},
		)
		addDepths(t, s, b.ID, depthRow{90 * time.Second, 0, 6})
		got, err := s.DepthSamplesSince(ctx, t0)
		if err != nil {
			t.Fatal(err)
		}
		visible := map[int64][]int64{}
		for id, list := range got {
			for i, d := range list {
				if d.QueueID != id || (i > 0 && !list[i-1].At.Before(d.At)) {
					t.Errorf("queue %d: sample %+v out of place", id, d)
				}
				visible[id] = append(visible[id], d.Visible)
			}
		}
		want := map[int64][]int64{a.ID: {1, 30, 4}, b.ID: {6}}
		if len(visible) != len(want) || !slices.Equal(visible[a.ID], want[a.ID]) || !slices.Equal(visible[b.ID], want[b.ID]) {
			t.Errorf("DepthSamplesSince = %v; want %v", visible, want)
		}
		// Within a millisecond of a sample, rounded up: the sample is before since.
		got, err = s.DepthSamplesSince(ctx, t0.Add(time.Microsecond))
		if err != nil {
			t.Fatal(err)
		}
		if len(got[a.ID]) != 2 {
			t.Errorf("since a microsecond after a sample: %v; want the two after it", got[a.ID])
		}
	})
}
