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

func TestVisiblePeaks(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a")
		b := addQueue(t, s, "b")
		addQueue(t, s, "quiet") // no samples: absent from the answer
		addDepths(t, s, a.ID,
			depthRow{-time.Second, 0, 100},                     // before since
			depthRow{0, 0, 1},                                  // at since: bucket 0
			depthRow{15 * time.Second, 0, 7},                   // the minute's peak
			depthRow{45 * time.Second, 0, 2},                   //
			depthRow{60 * time.Second, 0, 3},                   // a new minute starts at since + 1 min
			depthRow{60 * time.Second, 300, 9},                 // a roll-up at the same time counts too
			depthRow{4 * time.Minute, 0, 4},                    // minutes 2 and 3 have no samples: skipped
			depthRow{5 * time.Minute, 0, 5},                    // at until: included
			depthRow{5*time.Minute + time.Millisecond, 0, 100}, // after until
			depthRow{time.Hour, 0, 1},                          // well after until
		)
		addDepths(t, s, b.ID, depthRow{30 * time.Second, 0, 6})
		at := func(d time.Duration) time.Time { return t0.Add(d) }

		tests := []struct {
			name         string
			queueID      int64
			since, until time.Time
			want         map[int64][]DepthPeak
		}{
			{"every queue", 0, t0, at(5 * time.Minute), map[int64][]DepthPeak{
				a.ID: {{t0, 7}, {at(time.Minute), 9}, {at(4 * time.Minute), 4}, {at(5 * time.Minute), 5}},
				b.ID: {{t0, 6}},
			}},
			{"one queue", a.ID, t0, at(90 * time.Second), map[int64][]DepthPeak{
				a.ID: {{t0, 7}, {at(time.Minute), 9}},
			}},
			// A sample is never before since, even within since's millisecond: the first bucket starts
			// at the next millisecond, and the sample at since + 60 s opens the second bucket only at
			// since + 60 s + 1 ms.
			{"since within a millisecond", a.ID, t0.Add(time.Microsecond), at(2 * time.Minute), map[int64][]DepthPeak{
				a.ID: {{at(time.Millisecond), 9}},
			}},
			{"nothing in range", b.ID, at(time.Hour), at(2 * time.Hour), map[int64][]DepthPeak{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.VisiblePeaks(ctx, tt.queueID, tt.since, tt.until, time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(tt.want) {
					t.Errorf("VisiblePeaks = %v; want %v", got, tt.want)
				}
				for id, want := range tt.want {
					if !slices.EqualFunc(got[id], want, func(x, y DepthPeak) bool { return x.Start.Equal(y.Start) && x.Visible == y.Visible }) {
						t.Errorf("queue %d peaks = %v; want %v", id, got[id], want)
					}
				}
			})
		}

		if _, err := s.VisiblePeaks(ctx, 0, t0, at(time.Hour), 0); err == nil {
			t.Error("VisiblePeaks with a zero width: no error")
		}
	})
}

func TestLatestAttributeSamplesBetween(t *testing.T) {
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a")
		b := addQueue(t, s, "b")
		addQueue(t, s, "quiet")
		addDepths(t, s, a.ID,
			depthRow{0, 0, 1},
			depthRow{time.Minute, 0, 2},
			depthRow{2 * time.Minute, 0, 3},
			depthRow{2 * time.Minute, 300, 30}, // a roll-up sharing the newest time wins
			depthRow{3 * time.Minute, 0, 4},
		)
		addDepths(t, s, b.ID, depthRow{90 * time.Second, 0, 6})
		at := func(d time.Duration) time.Time { return t0.Add(d) }

		tests := []struct {
			name         string
			queueID      int64
			since, until time.Time
			want         map[int64]int64 // queue id → visible
		}{
			{"every queue", 0, t0, at(150 * time.Second), map[int64]int64{a.ID: 30, b.ID: 6}},
			{"until included", a.ID, t0, at(time.Minute), map[int64]int64{a.ID: 2}},
			{"since included", a.ID, t0, t0, map[int64]int64{a.ID: 1}},
			{"since within a millisecond", a.ID, t0.Add(time.Microsecond), at(59 * time.Second), map[int64]int64{}},
			{"one queue", b.ID, t0, at(time.Hour), map[int64]int64{b.ID: 6}},
			{"too old", 0, at(4 * time.Minute), at(time.Hour), map[int64]int64{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.LatestAttributeSamplesBetween(ctx, tt.queueID, tt.since, tt.until)
				if err != nil {
					t.Fatal(err)
				}
				vis := map[int64]int64{}
				for id, a := range got {
					vis[id] = a.Visible
					if a.QueueID != id {
						t.Errorf("sample of queue %d filed under %d", a.QueueID, id)
					}
				}
				if len(vis) != len(tt.want) {
					t.Errorf("LatestAttributeSamplesBetween = %v; want %v", vis, tt.want)
				}
				for id, want := range tt.want {
					if vis[id] != want {
						t.Errorf("queue %d visible = %d; want %d", id, vis[id], want)
					}
				}
			})
		}
	})
}
