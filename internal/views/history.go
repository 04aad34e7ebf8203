package views

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// RedriveMark is a move task of a dead-letter queue within a chart's range: when it started,
// when it ended (nil while it runs) and what it moved, for the charts' markers.
type RedriveMark struct {
	StartedAt time.Time
	EndedAt   *time.Time
	Moved     int64
	Status    string
}

// RedriveMarks returns the move tasks of a queue that overlap [since, until), oldest first.
func (s *Service) RedriveMarks(ctx context.Context, queueID int64, since, until time.Time) ([]RedriveMark, error) {
	tasks, err := s.store.ListMoveTasks(ctx, queueID, maxRedrives)
	if err != nil {
		return nil, fmt.Errorf("views: redrive marks: %w", err)
	}
	out := []RedriveMark{}
	for _, t := range tasks {
		m := RedriveMark{StartedAt: t.StartedAt.UTC(), Moved: t.Moved, Status: string(t.Status)}
		if !t.Running() {
			end := t.UpdatedAt.UTC()
			m.EndedAt = &end
		}
		if !m.StartedAt.Before(until) || (m.EndedAt != nil && m.EndedAt.Before(since)) {
			continue
		}
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b RedriveMark) int { return a.StartedAt.Compare(b.StartedAt) })
	return out, nil
}

// movedBetween estimates how many messages the move tasks took out of the queue in [from, to),
// spreading each task's count evenly over its run (SQS reports a running total, not when each
// message moved).
func movedBetween(marks []RedriveMark, from, to, now time.Time) float64 {
	var n float64
	for _, m := range marks {
		end := now
		if m.EndedAt != nil {
			end = *m.EndedAt
		}
		run := end.Sub(m.StartedAt)
		if run <= 0 || m.Moved == 0 {
			continue
		}
		lo, hi := m.StartedAt, end
		if from.After(lo) {
			lo = from
		}
		if to.Before(hi) {
			hi = to
		}
		overlap := hi.Sub(lo)
		if overlap > 0 {
			n += float64(m.Moved) * float64(overlap) / float64(run)
		}
	}
	return n
}

// Arrivals returns the messages arriving in a dead-letter queue over [since, until), one point
// per attribute sample: the rise of its depth since the sample before, plus what move tasks took
// out meanwhile. CloudWatch's NumberOfMessagesSent does not count the messages SQS moves to a
// DLQ after maxReceiveCount receives, so the depth is the only witness of those.
func (s *Service) Arrivals(ctx context.Context, queueID int64, since, until time.Time) (Series, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return Series{}, err
	}
	out := Series{Queue: q.Name, Name: SeriesArrivals, Since: since.UTC(), Until: until.UTC(), Points: []Point{}}
	samples, err := s.store.AttributeSeries(ctx, q.ID, since, until)
	if err != nil {
		return Series{}, fmt.Errorf("views: arrivals: %w", err)
	}
	marks, err := s.RedriveMarks(ctx, q.ID, since, until)
	if err != nil {
		return Series{}, err
	}
	now := s.clock()
	var prev *store.AttributeSample
	for i := range samples {
		a := &samples[i]
		if prev != nil && !a.At.After(prev.At) {
			continue // a coarser resolution of the same instant
		}
		if prev != nil {
			rise := float64(a.Held()-prev.Held()) + movedBetween(marks, prev.At, a.At, now)
			if rise > 0.5 {
				out.Points = append(out.Points, Point{At: a.At.UTC(), Value: float64(int64(rise + 0.5))})
			}
		}
		prev = a
	}
	return out, nil
}

// ReceivesSplit splits a queue's NumberOfMessagesReceived over [since, until) into the
// dashboard's own receives (what its samples raised, at each sample's time) and everyone else's
// (each CloudWatch minute less the samples within it). On a dead-letter queue nobody else
// should receive at all.
func (s *Service) ReceivesSplit(ctx context.Context, queueID int64, since, until time.Time) (own, others Series, err error) {
	all, err := s.Series(ctx, queueID, "NumberOfMessagesReceived", since, until)
	if err != nil {
		return Series{}, Series{}, err
	}
	takes, err := s.store.OwnReceivesBetween(ctx, queueID, since, until)
	if err != nil {
		return Series{}, Series{}, fmt.Errorf("views: receives: %w", err)
	}
	own = Series{Queue: all.Queue, Name: SeriesOwnReceives, Since: all.Since, Until: all.Until, Points: []Point{}}
	others = Series{Queue: all.Queue, Name: SeriesOthersReceives, Since: all.Since, Until: all.Until, Points: []Point{}}
	for _, t := range takes {
		if t.MessagesTaken > 0 {
			own.Points = append(own.Points, Point{At: t.At.UTC(), Value: float64(t.MessagesTaken)})
		}
	}
	for _, p := range all.Points {
		v := p.Value
		for _, t := range takes {
			if !t.At.Before(p.At) && t.At.Before(p.At.Add(time.Minute)) {
				v -= float64(t.MessagesTaken)
			}
		}
		others.Points = append(others.Points, Point{At: p.At, Value: max(v, 0)})
	}
	return own, others, nil
}

// Names of the series the views derive rather than read from CloudWatch.
const (
	SeriesArrivals       = "Arrivals"
	SeriesOwnReceives    = "ReceivedByToolq"
	SeriesOthersReceives = "ReceivedByOthers"
)
