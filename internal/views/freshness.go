package views

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// Freshness says how old the newest attribute cycle that read something is, and which regions
// toolq cannot see. Before the first cycle it is stale with a zero UpdatedAt.
func (s *Service) Freshness(ctx context.Context) (Freshness, error) {
	sight, err := s.readSight(ctx)
	if err != nil {
		return Freshness{}, fmt.Errorf("views: %w", err)
	}
	return s.freshness(ctx, s.clock(), sight)
}

func (s *Service) freshness(ctx context.Context, now time.Time, sight sightFacts) (Freshness, error) {
	f := Freshness{Stale: true, Blind: blindRegions(sight.problems())}
	run, err := s.store.LatestRun(ctx, store.RunAttributes)
	if errors.Is(err, store.ErrNotFound) {
		return f, nil
	}
	if err != nil {
		return Freshness{}, fmt.Errorf("views: freshness: %w", err)
	}
	age := now.Sub(run.FinishedAt)
	f.UpdatedAt, f.AgeSeconds, f.Stale = run.FinishedAt.UTC(), seconds(age), age > s.th.StaleAfter
	return f, nil
}

// seconds turns a duration into seconds rounded to a tenth, never negative (clocks skew).
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return math.Round(d.Seconds()*10) / 10
}
