package views

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Summary returns what a chatops bot posts: the unhealthy queues, the dead-letter queues that
// hold messages and the running redrives.
func (s *Service) Summary(ctx context.Context) (Summary, error) {
	now := s.clock()
	snap, err := s.gather(ctx, now, 0)
	if err != nil {
		return Summary{}, err
	}
	qs, err := s.summaries(ctx, snap)
	if err != nil {
		return Summary{}, err
	}
	sum := Summary{
		GeneratedAt:      now,
		Unhealthy:        []QueueSummary{},
		DeadLetterQueues: []DLQDepth{},
		RunningRedrives:  []Redrive{},
	}
	if sum.Freshness, err = s.freshness(ctx, now); err != nil {
		return Summary{}, err
	}
	if sum.Cost, err = s.cost(ctx); err != nil {
		return Summary{}, err
	}
	for _, q := range qs {
		if q.Health.Status != HealthOK {
			sum.Unhealthy = append(sum.Unhealthy, q)
		}
		if q.IsDeadLetterQueue && !q.Gone && q.Visible > 0 {
			sum.DeadLetterQueues = append(sum.DeadLetterQueues, DLQDepth{Name: q.Name, Visible: q.Visible})
		}
	}
	slices.SortStableFunc(sum.DeadLetterQueues, func(a, b DLQDepth) int {
		return cmp.Or(cmp.Compare(b.Visible, a.Visible), cmp.Compare(a.Name, b.Name))
	})
	for _, t := range snap.tasks {
		sum.RunningRedrives = append(sum.RunningRedrives, redriveOf(t, now))
	}
	return sum, nil
}

// summaryLines bounds each list in Text so that a bad day still fits in one chat message.
const summaryLines = 10

// Text renders a Summary as plain text for chat: a headline, then one line per unhealthy queue,
// dead-letter queue and running redrive. Queue names are AWS-validated; the reasons were made
// safe when they were written.
func (s Summary) Text() string {
	var b strings.Builder
	var dlqTotal int64
	for _, d := range s.DeadLetterQueues {
		dlqTotal += d.Visible
	}
	if len(s.Unhealthy) == 0 {
		b.WriteString("toolq: all queues healthy")
	} else {
		fmt.Fprintf(&b, "toolq: %s", plural(int64(len(s.Unhealthy)), "unhealthy queue"))
	}
	fmt.Fprintf(&b, ", %s in dead-letter queues", plural(dlqTotal, "message"))
	if n := len(s.RunningRedrives); n > 0 {
		fmt.Fprintf(&b, ", %s running", plural(int64(n), "redrive"))
	}
	switch {
	case s.Freshness.UpdatedAt.IsZero():
		b.WriteString(" (no data yet)")
	case s.Freshness.Stale:
		fmt.Fprintf(&b, " (STALE: data is %s old)", humanDuration(time.Duration(s.Freshness.AgeSeconds*float64(time.Second))))
	default:
		fmt.Fprintf(&b, " (data %s old)", humanDuration(time.Duration(s.Freshness.AgeSeconds*float64(time.Second))))
	}
	b.WriteByte('\n')

	for i, q := range s.Unhealthy {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more unhealthy\n", len(s.Unhealthy)-i)
			break
		}
		fmt.Fprintf(&b, "%s %s: %s\n", strings.ToUpper(q.Health.Status), q.Name, strings.Join(q.Health.Reasons, "; "))
	}
	for i, d := range s.DeadLetterQueues {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more dead-letter queues\n", len(s.DeadLetterQueues)-i)
			break
		}
		fmt.Fprintf(&b, "DLQ %s: %s\n", d.Name, plural(d.Visible, "message"))
	}
	for i, r := range s.RunningRedrives {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more redrives\n", len(s.RunningRedrives)-i)
			break
		}
		fmt.Fprintf(&b, "REDRIVE %s: %d/%d moved (%.0f%%)", nameFromARN(r.SourceARN), r.Moved, r.ToMove, r.Percent)
		if r.SecondsLeft != nil {
			fmt.Fprintf(&b, ", about %s left", humanDuration(time.Duration(math.Ceil(*r.SecondsLeft))*time.Second))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
