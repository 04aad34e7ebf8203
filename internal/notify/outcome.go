package notify

import (
	"fmt"
	"strconv"

	"github.com/toolq/toolq/internal/views"
)

// What the detector said of a redrive's outcome (queueMemory.Outcomes).
const (
	saidSettled = "settled" // its bounce-backs settled below the threshold
	saidMost    = "most"    // … at or above it: it bounced most of what it moved
)

// outcomes raises redrive.outcome once a redrive's bounce-backs settle, and again as soon as
// they cross the threshold (Thresholds.RedriveBounceShare) afterwards, from the snapshot's
// outcomes.
// Outcomes already final when first seen (a queue first seen now, a window that ended) are
// history, not news.
func (d *detection) outcomes(base views.Alert, q views.QueueSummary, m *queueMemory, known bool) []views.Alert {
	said := map[string]string{}
	var out []views.Alert
	for _, r := range d.snap.Redrives(q.ID) {
		o := r.Outcome
		if o == nil || o.State == views.OutcomeBlind {
			continue
		}
		key := strconv.FormatInt(r.ID, 10)
		prev := m.Outcomes[key]
		now := prev
		switch {
		case prev == "" && !o.Settled:
		case o.MostBounced: // once settled, crossing the threshold is news at once
			now = saidMost
		case prev == "":
			now = saidSettled
		}
		if now != "" {
			said[key] = now
		}
		if !known || now == prev || (prev == "" && o.State == views.OutcomeClosed) {
			continue
		}
		out = append(out, outcomeAlert(base, q, r, prev != ""))
	}
	m.Outcomes = said
	return out
}

// outcomeAlert says what came back of a redrive: a warning when it bounced most of what it moved.
func outcomeAlert(base views.Alert, q views.QueueSummary, r views.Redrive, again bool) views.Alert {
	o := r.Outcome
	a := base
	a.Kind, a.Severity = views.AlertRedriveOutcome, views.SeverityInfo
	a.Path = views.RedrivePageURL("", q.Ref, r.ID)
	a.Redrive = &views.AlertRedrive{Status: r.Status, Moved: r.Moved, ToMove: r.ToMove, DestinationARN: r.DestinationARN,
		FailureReason: r.FailureReason, StartedAt: r.StartedAt, ID: r.ID, Outcome: o}
	when := r.StartedAt.Format("15:04 UTC")
	switch {
	case again:
		a.Severity = views.SeverityWarning
		a.Title = fmt.Sprintf("redrive of %s (%s) now bounced most of what it moved: %s", q.Name, when, o.Line)
	case o.MostBounced:
		a.Severity = views.SeverityWarning
		a.Title = fmt.Sprintf("redrive of %s (%s) bounced most of what it moved: %s", q.Name, when, o.Line)
	default:
		a.Title = fmt.Sprintf("redrive of %s (%s) settled: %s", q.Name, when, o.Line)
	}
	return a
}
