package views

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// Freshness says how old the newest attribute cycle is. Before the first cycle it is stale with
// a zero UpdatedAt.
func (s *Service) Freshness(ctx context.Context) (Freshness, error) {
	return s.freshness(ctx, s.clock())
}

func (s *Service) freshness(ctx context.Context, now time.Time) (Freshness, error) {
	run, err := s.store.LatestRun(ctx, store.RunAttributes)
	if errors.Is(err, store.ErrNotFound) {
		return Freshness{Stale: true}, nil
	}
	if err != nil {
		return Freshness{}, fmt.Errorf("views: freshness: %w", err)
	}
	age := now.Sub(run.FinishedAt)
	return Freshness{
		UpdatedAt:  run.FinishedAt.UTC(),
		AgeSeconds: seconds(age),
		Stale:      age > s.th.StaleAfter,
	}, nil
}

// seconds turns a duration into seconds rounded to a tenth, never negative (clocks skew).
func seconds(d time.Duration) float64 {
	if d < 0 {
		return 0
	}
	return math.Round(d.Seconds()*10) / 10
}
