package views

import (
	"strconv"

	"github.com/toolq/toolq/internal/arn"

	"cmp"
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/safetext"
)

// Summary returns what a chatops bot posts: the unhealthy queues, the dead-letter queues that
// hold messages and the running redrives, as the current snapshot has them.
func (s *Service) Summary(ctx context.Context) (Summary, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Summary{}, err
	}
	return snap.Summary(s.clock()), nil
}

// botSummary computes a snapshot's Summary: its unhealthy queues, its dead-letter queues that
// hold messages (the deepest with what their samples hold) and the running redrives.
func (s *Service) botSummary(ctx context.Context, snap *Snapshot) (Summary, error) {
	ov := &snap.Overview
	sum := Summary{
		GeneratedAt:      snap.At,
		Unhealthy:        []QueueSummary{},
		DeadLetterQueues: []DLQDepth{},
		RunningRedrives:  []Redrive{},
		Sight:            ov.Sight,
		Problems:         ov.Problems,
		Cost:             ov.Cost,
		Totals:           ov.Totals,
	}
	for _, q := range ov.Queues {
		if q.Health.Status != HealthOK {
			sum.Unhealthy = append(sum.Unhealthy, q)
		}
		if q.IsDeadLetterQueue && !q.Gone && q.Visible > 0 {
			sum.DeadLetterQueues = append(sum.DeadLetterQueues, DLQDepth{Name: q.Name, Visible: q.Visible, Ref: q.Ref, id: q.ID})
		}
	}
	slices.SortStableFunc(sum.DeadLetterQueues, func(a, b DLQDepth) int {
		return cmp.Or(cmp.Compare(b.Visible, a.Visible), cmp.Compare(a.Name, b.Name))
	})
	// The deepest DLQs are what a bad day's summary is about; each triage costs a few queries,
	// once a sample.
	rd := snap.readings
	for i := range sum.DeadLetterQueues[:min(len(sum.DeadLetterQueues), summaryLines)] {
		sample, ok := rd.samples[sum.DeadLetterQueues[i].id]
		if !ok {
			empty := emptyTriage()
			sum.DeadLetterQueues[i].Triage = &empty
			continue
		}
		c := rd.counted[sample.ID]
		if c.triage == nil {
			t, err := s.triageOf(ctx, sample)
			if err != nil {
				return Summary{}, err
			}
			c.triage = &t
		}
		sum.DeadLetterQueues[i].Triage = c.triage
	}
	for _, t := range snap.readings.running {
		sum.RunningRedrives = append(sum.RunningRedrives, redriveOf(t, snap.At))
	}
	sum.RedriveOutcomes = redriveOutcomes(snap)
	return sum, nil
}

// QueuePageURL is the link to a queue's page under the dashboard's base URL (no trailing slash).
func QueuePageURL(base, ref string) string { return base + "/queues/" + url.PathEscape(ref) }

// emptyTriage is the triage of a queue not looked at: every list empty, never null.
func emptyTriage() Triage {
	return Triage{Tools: []ToolCount{}, Dimensions: []DimensionTop{}, Reasons: []ValueGroup{}}
}

// triageValues is how many values of each list Line names.
const triageValues = 3

// Line says on one line which tools, dimension values and reasons the sample holds most:
// "tools: create_document 8, append_section 4; mcpServer: docs-legacy 12"; "" before a sample.
func (t Triage) Line() string {
	var parts []string
	list := func(label string, names []string, counts []int) {
		var items []string
		for i, n := range names[:min(len(names), triageValues)] {
			items = append(items, fmt.Sprintf("%s %d", safetext.Line(n, 64), counts[i]))
		}
		if len(items) > 0 {
			parts = append(parts, label+": "+strings.Join(items, ", "))
		}
	}
	var names []string
	var counts []int
	for _, tc := range t.Tools {
		names, counts = append(names, cmp.Or(tc.ToolName, "(none)")), append(counts, tc.Count)
	}
	list("tools", names, counts)
	for _, d := range t.Dimensions {
		names, counts = nil, nil
		for _, v := range d.Values {
			names, counts = append(names, v.Value), append(counts, v.Count)
		}
		list(d.Name, names, counts)
	}
	names, counts = nil, nil
	for _, r := range t.Reasons {
		names, counts = append(names, r.Value), append(counts, r.Count)
	}
	list("reasons", names, counts)
	return strings.Join(parts, "; ")
}

// summaryLines bounds each list in Text so that a bad day still fits in one chat message.
const summaryLines = 10

// Text renders a Summary as plain text for chat: a headline, then one line per region toolq
// cannot fully read, per unhealthy queue (worst first; a source's DLQ problem is the DLQ's line,
// which the source's points to, and says which tools, dimension values and reasons its sample
// holds most) and per running redrive. With a base URL (the dashboard's, no trailing slash) each
// queue's line ends with its page's link. It never says "healthy" while any read failed in the
// last cycles. Queue names are AWS-validated; the reasons were made safe when they were written;
// tool names and dimension values come from messages and are hostile: the caller makes the text
// safe for its chat.
func (s Summary) Text(base string) string {
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
		for _, d := range s.DeadLetterQueues {
			if d.Name == q.Name && d.Ref == q.Ref && d.Triage != nil {
				if t := d.Triage.Line(); t != "" {
					b.WriteString(" — " + t)
				}
			}
		}
		if base != "" {
			b.WriteString(" " + QueuePageURL(base, q.Ref))
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
	for i, o := range s.RedriveOutcomes {
		if i == summaryLines {
			fmt.Fprintf(&b, "… and %d more redrive outcomes\n", len(s.RedriveOutcomes)-i)
			break
		}
		fmt.Fprintf(&b, "REDRIVEN %s %s: %s (%s)", o.Queue, o.Redrive.StartedAt.Format("15:04 UTC"), o.Redrive.Outcome.Line, o.Redrive.Outcome.State)
		if base != "" {
			b.WriteString(" " + RedrivePageURL(base, o.Ref, o.Redrive.ID))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// RedrivePageURL is the link to a redrive's page under the dashboard's base URL.
func RedrivePageURL(base, ref string, id int64) string {
	return QueuePageURL(base, ref) + "/redrives/" + strconv.FormatInt(id, 10)
}
