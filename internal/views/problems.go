package views

import (
	"cmp"
	"slices"
	"strings"
)

// problemOrder ranks the kinds of problems of one severity (see the ProblemKind constants).
var problemOrder = []ProblemKind{ProblemDeadLetter, ProblemBlocked, ProblemSight, ProblemStale, ProblemOldest,
	ProblemNearMax, ProblemErrors, ProblemRetention, ProblemGone}

// problems lists what needs a person: one problem per queue and kind of health rule (a DLQ's
// depth and its growth are one problem, three blocked groups of one queue another), and one per
// region or operation toolq cannot read. Rules that could not be checked (unknown) are no
// problem here: the row says so. Critical first, then by kind; within a kind what grows first,
// then the largest (the deepest dead-letter queue, the oldest message, the most blocked
// sessions), then by queue name.
func problems(qs []QueueSummary, sight []SightProblem) []Problem {
	out := []Problem{}
	for _, sp := range sight {
		sev := HealthWarning
		if sp.Blind {
			sev = HealthCritical
		}
		out = append(out, Problem{Kind: ProblemSight, Severity: sev, Region: sp.Region, Text: sp.Problem})
	}
	for _, q := range qs {
		var byKind []Problem
		for _, f := range q.Health.Findings {
			if f.Kind == ProblemUnknown || severity(f.Status) < severity(HealthWarning) {
				continue
			}
			i := slices.IndexFunc(byKind, func(p Problem) bool { return p.Kind == f.Kind })
			if i < 0 {
				byKind = append(byKind, Problem{Kind: f.Kind, Severity: f.Status, Queue: q.Name, Ref: cmp.Or(q.Ref, q.Name), Region: q.Region, Text: f.Reason,
					size: f.Size, growing: f.Growing})
				continue
			}
			if severity(f.Status) > severity(byKind[i].Severity) {
				byKind[i].Severity = f.Status
			}
			byKind[i].Text += "; " + f.Reason
			byKind[i].size, byKind[i].growing = max(byKind[i].size, f.Size), byKind[i].growing || f.Growing
		}
		for i := range byKind {
			if byKind[i].Kind == ProblemDeadLetter && len(q.SourceQueues) > 0 {
				byKind[i].Text += " (from " + strings.Join(q.SourceQueues, ", ") + ")"
			}
		}
		out = append(out, byKind...)
	}
	slices.SortStableFunc(out, func(a, b Problem) int {
		if c := cmp.Compare(severity(b.Severity), severity(a.Severity)); c != 0 {
			return c
		}
		if c := cmp.Compare(slices.Index(problemOrder, a.Kind), slices.Index(problemOrder, b.Kind)); c != 0 {
			return c
		}
		if a.growing != b.growing {
			return btoi(b.growing) - btoi(a.growing)
		}
		return cmp.Or(cmp.Compare(b.size, a.size), cmp.Compare(a.Queue, b.Queue))
	})
	return out
}

// ProblemCounts counts problems by severity.
func ProblemCounts(ps []Problem) (critical, warning int) {
	for _, p := range ps {
		if p.Severity == HealthCritical {
			critical++
		} else {
			warning++
		}
	}
	return critical, warning
}
