package views

import (
	"github.com/toolq/toolq/internal/arn"

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
		Sight:            snap.sight.problems(),
	}
	if sum.Freshness, err = s.freshness(ctx, now, snap.sight); err != nil {
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

// Text renders a Summary as plain text for chat: a headline, then one line per region toolq
// cannot fully read, per unhealthy queue (worst first; a source's DLQ problem is the DLQ's line,
// which the source's points to) and per running redrive. It never says "healthy" while any read
// failed in the last cycles. Queue names are AWS-validated; the reasons were made safe when they
// were written.
func (s Summary) Text() string {
	var b strings.Builder
	var dlqTotal int64
	for _, d := range s.DeadLetterQueues {
		dlqTotal += d.Visible
	}
	blind := blindRegions(s.Sight)
	b.WriteString("toolq: ")
	if len(blind) > 0 {
		fmt.Fprintf(&b, "CANNOT SEE %s; ", strings.Join(blind, ", "))
	}
	unknown := 0
	for _, q := range s.Unhealthy {
		if q.Health.Status == HealthUnknown {
			unknown++
		}
	}
	switch unhealthy := len(s.Unhealthy) - unknown; {
	case unhealthy > 0 && unknown > 0:
		fmt.Fprintf(&b, "%s, %d unknown", plural(int64(unhealthy), "unhealthy queue"), unknown)
	case unhealthy > 0:
		b.WriteString(plural(int64(unhealthy), "unhealthy queue"))
	case unknown > 0:
		fmt.Fprintf(&b, "%s whose health is unknown", plural(int64(unknown), "queue"))
	case len(s.Sight) > 0:
		b.WriteString("no unhealthy queue among those it could read")
	default:
		b.WriteString("all queues healthy")
	}
	fmt.Fprintf(&b, ", %s in dead-letter queues", plural(dlqTotal, "message"))
	if n := len(s.RunningRedrives); n > 0 {
		fmt.Fprintf(&b, ", %s running", plural(int64(n), "redrive"))
	}
	switch {
	case s.Freshness.UpdatedAt.IsZero():
		b.WriteString(" (no data yet)")
	case len(blind) > 0:
		fmt.Fprintf(&b, " (what it can read is %s old)", humanDuration(time.Duration(s.Freshness.AgeSeconds*float64(time.Second))))
	case s.Freshness.Stale:
		fmt.Fprintf(&b, " (STALE: data is %s old)", humanDuration(time.Duration(s.Freshness.AgeSeconds*float64(time.Second))))
	default:
		fmt.Fprintf(&b, " (data %s old)", humanDuration(time.Duration(s.Freshness.AgeSeconds*float64(time.Second))))
	}
	b.WriteByte('\n')

	for i, p := range s.Sight {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more problems reading AWS\n", len(s.Sight)-i)
			break
		}
		label := "CANNOT READ"
		if p.Blind {
			label = "CANNOT SEE"
		}
		fmt.Fprintf(&b, "%s %s\n", label, p.Problem)
	}
	for i, q := range s.Unhealthy {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more unhealthy\n", len(s.Unhealthy)-i)
			break
		}
		fmt.Fprintf(&b, "%s %s: %s", strings.ToUpper(string(q.Health.Status)), q.Name, strings.Join(q.Health.Reasons, "; "))
		if q.DeadLetterQueue != nil && q.DeadLetterQueueDepth != nil && *q.DeadLetterQueueDepth > 0 {
			fmt.Fprintf(&b, " (its DLQ %s: see its line)", *q.DeadLetterQueue)
		}
		b.WriteByte('\n')
	}
	for i, r := range s.RunningRedrives {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more redrives\n", len(s.RunningRedrives)-i)
			break
		}
		fmt.Fprintf(&b, "REDRIVE %s: %d/%d moved (%.0f%%)", arn.QueueName(r.SourceARN), r.Moved, r.ToMove, r.Percent)
		if r.SecondsLeft != nil {
			fmt.Fprintf(&b, ", about %s left", humanDuration(time.Duration(math.Ceil(*r.SecondsLeft))*time.Second))
		}
		b.WriteByte('\n')
	}
	return b.String()
}
