package views

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// sampleDue says when q's next message sample comes after latest (nil before the first).
func (s *Service) sampleDue(ctx context.Context, q store.Queue, latest *store.Sample) (SampleDue, error) {
	var cad store.Cadences
	switch e, err := s.store.GetCostEstimate(ctx); {
	case err == nil:
		cad = e.Cadences
	case !errors.Is(err, store.ErrNotFound):
		return SampleDue{}, fmt.Errorf("views: next sample of %s: %w", q.Name, err)
	}
	return sampleDueOf(q, latest, cad, s.clock()), nil
}

// sampleDueOf is sampleDue from the collector's cadences. A source queue (one with a
// RedrivePolicy, or one opted in that is nobody's DLQ) follows PeekSource, a dead-letter queue
// PeekDeadLetter. A sample that is late is due now: the collector takes it on its next round.
func sampleDueOf(q store.Queue, latest *store.Sample, cad store.Cadences, now time.Time) SampleDue {
	switch {
	case !q.PeekEnabled:
		return SampleDue{Off: true, Paused: q.PeekPaused}
	case q.PeekPaused != "":
		return SampleDue{Paused: q.PeekPaused}
	}
	every := cad.PeekDeadLetter
	if q.DeadLetterTargetARN != "" || (latest != nil && latest.Kind == store.SampleSource) {
		every = cad.PeekSource
	}
	if every <= 0 {
		return SampleDue{}
	}
	out := SampleDue{Every: int64(every / time.Second)}
	at := now
	if latest != nil {
		if next := latest.At.Add(every); next.After(now) {
			at = next
		}
	}
	at = at.UTC()
	out.At = &at
	return out
}
