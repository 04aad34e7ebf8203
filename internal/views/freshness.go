package views

import (
	"context"
	"math"
	"time"
)

// Freshness says how old the newest attribute cycle that read something is, and which regions
// toolq cannot see, as the current snapshot has it, its age counted to now. Before the first
// cycle it is stale with a zero UpdatedAt.
func (s *Service) Freshness(ctx context.Context) (Freshness, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Freshness{}, err
	}
	return snap.FreshnessAt(s.clock()), nil
}

// seconds turns a duration into seconds rounded to a tenth, never negative (clocks skew).
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return math.Round(d.Seconds()*10) / 10
}
