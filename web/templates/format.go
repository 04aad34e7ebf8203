package templates

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
)

// waitingNoun is "message waits" or "messages wait", to follow a count.
func waitingNoun(n int64) string {
	if n == 1 {
		return "message waits"
	}
	return "messages wait"
}

// Count formats a count with thin separators between thousands: 12 345.
func Count(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u202f")
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Number formats a float for charts and rates: integers without decimals, else one decimal.
func Number(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return Count(int64(f))
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// Duration formats seconds the way people read ages: "45 s", "3 min", "2 h 5 min", "3 d 4 h".
func Duration(seconds float64) string {
	if math.IsNaN(seconds) || seconds < 0 {
		return "–"
	}
	s := int64(math.Round(seconds))
	switch {
	case s < 60:
		return fmt.Sprintf("%d s", s)
	case s < 3600:
		return fmt.Sprintf("%d min", s/60)
	case s < 86400:
		if m := (s % 3600) / 60; m > 0 {
			return fmt.Sprintf("%d h %d min", s/3600, m)
		}
		return fmt.Sprintf("%d h", s/3600)
	default:
		if h := (s % 86400) / 3600; h > 0 {
			return fmt.Sprintf("%d d %d h", s/86400, h)
		}
		return fmt.Sprintf("%d d", s/86400)
	}
}

// Ago says how long before now t was: "3 s ago", or "never" for a zero time.
func Ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	if d < 0 {
		d = 0
	}
	return Duration(d.Seconds()) + " ago"
}

// NextIn says how long after now t comes: "in 25 s", or "now" when it is due.
func NextIn(t, now time.Time) string {
	if d := t.Sub(now); d >= time.Second {
		return "in " + Duration(d.Seconds())
	}
	return "now"
}

// AgoPtr is Ago for an optional time.
func AgoPtr(t *time.Time, now time.Time) string {
	if t == nil {
		return "never"
	}
	return Ago(*t, now)
}

// Clock formats a time for a table cell, short and in UTC ("Nov 30 01:21:35 UTC"); "–" for none.
// Unlike Ago it stays true on a page that is not live.
func Clock(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "–"
	}
	return t.UTC().Format("Jan 2 15:04:05 UTC")
}

// ClockYear writes a time as Clock does, with its year, for times that can be years old (when
// a queue was created): "Nov 30 2025 01:21:35 UTC".
func ClockYear(t time.Time) string {
	return t.UTC().Format("Jan 2 2006 15:04:05 UTC")
}

// Timestamp formats a time for a datetime attribute and for reading: RFC 3339 in UTC.
func Timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// TimestampPtr is Timestamp for an optional time.
func TimestampPtr(t *time.Time) string {
	if t == nil {
		return ""
	}
	return Timestamp(*t)
}

// USD formats a cost per day: "$0.42", with more digits for tiny sums so they don't read as zero.
func USD(f float64) string {
	if f > 0 && f < 0.01 {
		return "$" + strconv.FormatFloat(f, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(f, 'f', 2, 64)
}

// Percent formats a 0..1 share: "77 %".
func Percent(f float64) string {
	return strconv.FormatFloat(math.Round(f*100), 'f', 0, 64) + "\u00a0%"
}

// Clip shows s as one line of at most n characters (runes), ending with "…" when it cut.
func Clip(s string, n int) string { return safetext.Line(s, n) }

// OptCount formats an optional count, "–" when unknown.
func OptCount(n *int64) string {
	if n == nil {
		return "–"
	}
	return Count(*n)
}

// OptDuration formats optional seconds, "–" when unknown.
func OptDuration(s *float64) string {
	if s == nil {
		return "–"
	}
	return Duration(*s)
}

// QueueType says "FIFO" or "standard".
func QueueType(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// AgeSource says where an oldest-message age comes from and when it was read, for its tooltip.
func AgeSource(source string, at *time.Time) string {
	when := ""
	if at != nil {
		when = " at " + at.UTC().Format("15:04:05 UTC")
	}
	switch source {
	case "cloudwatch":
		return "CloudWatch's ApproximateAgeOfOldestMessage, minute" + when
	case "sample":
		return "the oldest message of the newest sample" + when
	}
	return ""
}

// SightBlind reports whether any of the problems is a region toolq cannot see at all.
func SightBlind(problems []views.SightProblem) bool {
	for _, p := range problems {
		if p.Blind {
			return true
		}
	}
	return false
}

// HealthLabel is what a health badge says.
func HealthLabel(status views.HealthStatus) string {
	switch status {
	case views.HealthOK:
		return "OK"
	case views.HealthWarning:
		return "Warning"
	case views.HealthCritical:
		return "Critical"
	}
	return "Unknown"
}

// AdviceBadge maps an advice severity to a badge colour.
func AdviceBadge(s views.AdviceSeverity) string {
	switch s {
	case views.AdviceCritical:
		return "critical"
	case views.AdviceWarning:
		return "warning"
	}
	return "unknown"
}

// AlarmBadge maps a CloudWatch alarm state to a badge colour.
func AlarmBadge(state string) string {
	switch state {
	case "ALARM":
		return "critical"
	case "OK":
		return "ok"
	}
	return "unknown"
}

// AdviceTitle is the one-line list of what the advisor found, for a tooltip.
func AdviceTitle(advice []views.Advice) string {
	parts := make([]string, 0, len(advice))
	for _, a := range advice {
		parts = append(parts, a.Rule+": "+a.Finding)
	}
	return safetext.Line(strings.Join(parts, "; "), 500)
}

// YesNo says a setting is on or off.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// OptInt writes an optional count, or what its absence means.
func OptInt(n *int, none string) string {
	if n == nil {
		return none
	}
	return strconv.Itoa(*n)
}

// Plural says "1 problem", "3 problems".
func Plural(n int, noun string) string { return views.Plural(int64(n), noun) }

// ProblemLabel names a kind of problem in the overview's list, in two or three words.
func ProblemLabel(k views.ProblemKind) string {
	switch k {
	case views.ProblemDeadLetter:
		return "dead letters"
	case views.ProblemBlocked:
		return "blocked session"
	case views.ProblemSight:
		return "cannot see"
	case views.ProblemStale:
		return "no fresh data"
	case views.ProblemOldest:
		return "old message"
	case views.ProblemNearMax:
		return "near maxReceiveCount"
	case views.ProblemErrors:
		return "collector errors"
	case views.ProblemRetention:
		return "retention"
	case views.ProblemGone:
		return "gone"
	}
	return string(k)
}

// outcomeState says a redrive outcome's state in a word or two.
func outcomeState(state string) string {
	switch state {
	case views.OutcomeMoving:
		return "still moving"
	case views.OutcomeWatching:
		return "watching"
	case views.OutcomeSettled:
		return "settled"
	case views.OutcomeClosed:
		return "final"
	}
	return "not countable"
}

// isAre is the verb for n things.
func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// SelectionFields lists a selective redrive's selection field by field, in a fixed order, the
// dimensions by name.
func SelectionFields(sel *views.SelectionJob) []SelectionField {
	if sel == nil {
		return nil
	}
	var out []SelectionField
	add := func(name string, values []string) {
		if len(values) > 0 {
			out = append(out, SelectionField{Name: name, Values: values})
		}
	}
	add("tools", sel.Tools)
	for _, name := range slices.Sorted(maps.Keys(sel.Dimensions)) {
		add(name, sel.Dimensions[name])
	}
	add("reasons", sel.Reasons)
	if sel.Q != "" {
		add("search", []string{sel.Q})
	}
	add("message ids", sel.MessageIDs)
	add("sessions", sel.Groups)
	return out
}

// selectionFailed says how many messages a selective redrive could not move, if any.
func selectionFailed(sel *views.SelectionJob) string {
	if sel.Failed == 0 {
		return ""
	}
	return fmt.Sprintf(", %s not movable", Count(sel.Failed))
}

// selectionAction is where a selection's confirmation posts: the redrive's, or the discard's.
func selectionAction(p SelectionConfirmProps) string {
	if p.Discard {
		return p.Nav.QueueURL(p.Ref, nil, "discard", "selection")
	}
	return p.Nav.QueueURL(p.Ref, nil, "redrive", "selection")
}

// jobKind names a redrive's kind for its row.
func jobKind(kind string) string {
	switch kind {
	case "discard":
		return "discard to the archive"
	case "restore":
		return "restore from the archive"
	}
	return "selective"
}
