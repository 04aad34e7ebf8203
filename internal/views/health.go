package views

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// DefaultThresholds returns the thresholds a Service uses for the fields its Options leave zero.
func DefaultThresholds() Thresholds {
	return Thresholds{
		OldestAgeWarning:  5 * time.Minute,
		OldestAgeCritical: 30 * time.Minute,
		DLQDepthCritical:  100,
		StaleAfter:        45 * time.Second, // 3× the default 15-s attribute interval
		ErrorWindow:       5 * time.Minute,
		GrowthWindow:      15 * time.Minute,

		InFlightLimit:          DefaultInFlightLimit,
		EmptyReceivesPerMinute: DefaultEmptyReceivesPerMinute,

		RedriveWindow:      24 * time.Hour,
		RedriveSettle:      10 * time.Minute,
		RedriveBounceShare: 0.5,
	}
}

// withDefaults fills the zero (or negative) fields of t from DefaultThresholds.
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds()
	return Thresholds{
		OldestAgeWarning:  cmp.Or(max(t.OldestAgeWarning, 0), d.OldestAgeWarning),
		OldestAgeCritical: cmp.Or(max(t.OldestAgeCritical, 0), d.OldestAgeCritical),
		DLQDepthCritical:  cmp.Or(max(t.DLQDepthCritical, 0), d.DLQDepthCritical),
		StaleAfter:        cmp.Or(max(t.StaleAfter, 0), d.StaleAfter),
		ErrorWindow:       cmp.Or(max(t.ErrorWindow, 0), d.ErrorWindow),
		GrowthWindow:      cmp.Or(max(t.GrowthWindow, 0), d.GrowthWindow),

		InFlightLimit:          cmp.Or(max(t.InFlightLimit, 0), d.InFlightLimit),
		EmptyReceivesPerMinute: cmp.Or(max(t.EmptyReceivesPerMinute, 0), d.EmptyReceivesPerMinute),

		RedriveWindow:      cmp.Or(max(t.RedriveWindow, 0), d.RedriveWindow),
		RedriveSettle:      cmp.Or(max(t.RedriveSettle, 0), d.RedriveSettle),
		RedriveBounceShare: cmp.Or(max(t.RedriveBounceShare, 0), d.RedriveBounceShare),
	}
}

// healthFacts is everything the health rules look at for one queue, gathered from the store
// beforehand so that the rules are a pure function (see evaluateHealth).
type healthFacts struct {
	Now   time.Time
	Queue store.Queue

	Latest  *store.AttributeSample // the newest depth sample; nil before the first
	Earlier *store.AttributeSample // the newest sample at least GrowthWindow old; nil if none

	OldestAge *store.MetricPoint // the newest ApproximateAgeOfOldestMessage datapoint
	// EmptyAt is the queue's newest depth sample without messages (zero: none within the last
	// hour): every message it holds arrived since, which bounds their age.
	EmptyAt time.Time

	// StaleAfter is how old Latest may be (0: Thresholds.StaleAfter), and AgeWindow how old
	// OldestAge may be to count (0: Thresholds.GrowthWindow), at the collector's cadences.
	StaleAfter time.Duration
	AgeWindow  time.Duration

	// For a source queue with a watched dead-letter queue: its name and the messages it holds.
	DLQName string
	DLQHeld *int64

	BlockedGroups []store.GroupBacklog // of the newest message sample
	NearMax       int                  // messages of the newest sample near maxReceiveCount

	Errors []store.CollectorError // about this queue within ErrorWindow, newest first

	// For a dead-letter queue: its watched sources, to compare retention periods.
	Sources []store.Queue

	// clock is Now's horizon: the rules record in it when their answers would change. nil: a
	// horizon of Now's own, forgotten after the rules.
	clock *horizon

	// CloudWatchExpected: the collector reads CloudWatch in the queue's region;
	// CloudWatchFailure is its newest GetMetricData failure there, nil when that succeeded.
	CloudWatchExpected bool
	CloudWatchFailure  *store.OperationStatus
}

// maxReasonsPerRule keeps a queue with a hundred blocked groups from flooding a page.
const maxReasonsPerRule = 3

// evaluateHealth applies the health rules to one queue's facts. Each rule adds a reason and
// raises the status; the worst rule wins.
func evaluateHealth(f healthFacts, th Thresholds) Health {
	r := healthRules{f: &f, th: &th, clock: f.clock,
		staleAfter: cmp.Or(f.StaleAfter, th.StaleAfter), ageWindow: cmp.Or(f.AgeWindow, th.GrowthWindow),
		h: Health{Status: HealthOK, Reasons: []string{}, Notes: []string{}}}
	if r.clock == nil {
		r.clock = newHorizon(f.Now)
	}
	if f.Queue.Gone() {
		// A gone queue's depth and age are history: say so and nothing else.
		r.add(ProblemGone, HealthWarning, "queue no longer exists (gone "+r.clock.since(f.Queue.GoneAt)+" ago)")
		return r.h
	}
	r.freshness()
	r.deadLetterDepth()
	r.deadLetterNote()
	r.oldestMessage()
	r.blockedGroups()
	r.nearMaxReceive()
	r.collectorErrors()
	r.retention()
	return r.h
}

// healthRules is one evaluation of the health rules: the facts, the thresholds, the windows the
// collector's cadences set, and the health found so far.
type healthRules struct {
	f                     *healthFacts
	th                    *Thresholds
	clock                 *horizon
	staleAfter, ageWindow time.Duration
	h                     Health
}

// found records a finding and raises the status to its own when worse.
func (r *healthRules) found(f Finding) {
	r.h.Reasons = append(r.h.Reasons, f.Reason)
	r.h.Findings = append(r.h.Findings, f)
	if severity(f.Status) > severity(r.h.Status) {
		r.h.Status = f.Status
	}
}

// add records a finding without a size.
func (r *healthRules) add(kind ProblemKind, status HealthStatus, reason string) {
	r.found(Finding{Kind: kind, Status: status, Reason: reason})
}

// freshness: no depth sample yet, or one older than the queue's cadence allows.
func (r *healthRules) freshness() {
	switch latest := r.f.Latest; {
	case latest == nil:
		r.add(ProblemStale, HealthWarning, "no data yet")
	case r.clock.past(latest.At.Add(r.staleAfter)):
		r.add(ProblemStale, HealthWarning, "data is "+r.clock.since(latest.At)+" old")
	}
}

// deadLetterDepth: a dead-letter queue that holds messages is warning (critical from
// DLQDepthCritical), and critical while it grows. It counts every message the queue holds,
// those in flight too: the collector's own peek holds a DLQ's messages in flight for a few
// seconds once a minute, and an operator's look holds them longer; neither empties the queue.
func (r *healthRules) deadLetterDepth() {
	f := r.f
	if !deadLetter(f.Queue) || f.Latest == nil {
		return
	}
	depth := f.Latest.Held()
	status := HealthWarning
	if depth >= r.th.DLQDepthCritical {
		status = HealthCritical
	}
	if depth > 0 {
		r.found(Finding{Kind: ProblemDeadLetter, Status: status, Reason: plural(depth, "message") + " in the dead-letter queue", Size: float64(depth)})
	}
	if f.Earlier != nil && depth > f.Earlier.Held() {
		r.found(Finding{Kind: ProblemDeadLetter, Status: HealthCritical, Size: float64(depth), Growing: true,
			Reason: fmt.Sprintf("growing: %d → %d messages in %s", f.Earlier.Held(), depth, humanDuration(f.Latest.At.Sub(f.Earlier.At)))})
	}
}

// deadLetterNote: a source queue's row points to the messages of its dead-letter queue, which
// the DLQ's own row counts as its problem.
func (r *healthRules) deadLetterNote() {
	if held := r.f.DLQHeld; held != nil && *held > 0 {
		r.h.Notes = append(r.h.Notes, plural(*held, "message")+" in its dead-letter queue "+r.f.DLQName)
	}
}

// oldestMessage: the age of a working queue's oldest message, from CloudWatch.
//
// On a dead-letter queue the age counts from the move and only says how long nobody has looked;
// the depth rules already flag it, so the age rule is for working queues. It needs CloudWatch:
// without a recent datapoint for a queue that holds messages, the rule is unknown, never fine,
// unless the queue was empty so lately that no message can be old yet (the collector asks for
// the age only while a queue holds messages, so a queue that just filled has no fresh datapoint
// until its next ask).
func (r *healthRules) oldestMessage() {
	f, th := r.f, r.th
	empty := f.Latest != nil && f.Latest.Visible+f.Latest.InFlight == 0
	switch {
	case deadLetter(f.Queue) || empty || f.Latest == nil:
	case r.ageRead():
		age := time.Duration(f.OldestAge.Value * float64(time.Second))
		status := HealthOK
		switch {
		case age >= th.OldestAgeCritical:
			status = HealthCritical
		case age >= th.OldestAgeWarning:
			status = HealthWarning
		}
		if status != HealthOK {
			r.found(Finding{Kind: ProblemOldest, Status: status, Reason: "oldest message is " + humanDuration(age) + " old", Size: f.OldestAge.Value})
		}
	case !f.EmptyAt.IsZero() && r.clock.before(f.EmptyAt.Add(th.OldestAgeWarning)):
	default:
		r.ageUnknown()
	}
}

// ageRead reports whether the newest age datapoint still tells the queue's age. While
// GetMetricData fails, a datapoint from before proves a young queue only until the oldest
// message it saw, if still there, would reach the warning age.
func (r *healthRules) ageRead() bool {
	p := r.f.OldestAge
	if p == nil || !r.clock.within(p.At.Add(r.ageWindow)) {
		return false
	}
	if r.f.CloudWatchFailure != nil && p.Value < r.th.OldestAgeWarning.Seconds() {
		return r.clock.before(p.At.Add(r.th.OldestAgeWarning - time.Duration(p.Value*float64(time.Second))))
	}
	return true
}

// ageUnknown says why a queue's oldest-message age cannot be told.
func (r *healthRules) ageUnknown() {
	f, q := r.f, r.f.Queue
	switch {
	case f.CloudWatchFailure != nil:
		r.add(ProblemUnknown, HealthUnknown, fmt.Sprintf("oldest message age unknown: CloudWatch GetMetricData fails (%s)", safetext.Line(f.CloudWatchFailure.FailureCode, 64)))
	case f.CloudWatchExpected && !q.FirstSeen.IsZero() && r.clock.before(q.FirstSeen.Add(r.th.GrowthWindow)):
		// CloudWatch publishes SQS metrics every minute and a new queue's first datapoint
		// takes a few: say so rather than suggest something broke.
		r.add(ProblemUnknown, HealthUnknown, "oldest message age unknown: no CloudWatch datapoint yet (watched for "+r.clock.since(q.FirstSeen)+")")
	case f.CloudWatchExpected:
		r.add(ProblemUnknown, HealthUnknown, fmt.Sprintf("oldest message age unknown: no CloudWatch datapoint in %s", humanDuration(r.ageWindow)))
	}
}

// blockedGroups: each FIFO group whose failing head holds back its session, the first few by
// name.
func (r *healthRules) blockedGroups() {
	groups := r.f.BlockedGroups
	blocked := float64(len(groups)) // each reason of the rule weighs what the rule found
	for i, g := range groups {
		if i == maxReasonsPerRule {
			r.found(Finding{Kind: ProblemBlocked, Status: HealthWarning, Reason: fmt.Sprintf("%d more groups blocked", len(groups)-i), Size: blocked})
			return
		}
		r.found(Finding{Kind: ProblemBlocked, Status: HealthWarning, Size: blocked, Reason: fmt.Sprintf("group %s blocked: head failed %s",
			safetext.Line(g.GroupID, 64), plural(int64(g.HeadReceiveCount), "time"))})
	}
}

// nearMaxReceive: sampled messages one failed delivery away from the dead-letter queue.
func (r *healthRules) nearMaxReceive() {
	if n, q := r.f.NearMax, r.f.Queue; n > 0 && q.MaxReceiveCount > 0 {
		r.found(Finding{Kind: ProblemNearMax, Status: HealthWarning, Size: float64(n),
			Reason: fmt.Sprintf("%s near maxReceiveCount %d", plural(int64(n), "message"), q.MaxReceiveCount)})
	}
}

// collectorErrors: the collector's errors about the queue within ErrorWindow.
func (r *healthRules) collectorErrors() {
	if n := len(r.f.Errors); n > 0 {
		e := r.f.Errors[0]
		r.found(Finding{Kind: ProblemErrors, Status: HealthWarning, Size: float64(n), Reason: fmt.Sprintf("%s in %s (last: %s on %s)", plural(int64(n), "collector error"),
			humanDuration(r.th.ErrorWindow), safetext.Line(e.Code, 64), safetext.Line(e.Operation, 64))})
	}
}

// retention: a dead-letter queue that keeps messages no longer than a source of its.
func (r *healthRules) retention() {
	if src, own, theirs, short := retentionShortfall(r.f.Queue, r.f.Sources); short {
		r.add(ProblemRetention, HealthWarning, fmt.Sprintf("retention %s is not longer than source %s's %s: messages can expire before anyone looks",
			humanDuration(own), src.Name, humanDuration(theirs)))
	}
}

// severity orders statuses: ok < unknown < warning < critical.
func severity(status HealthStatus) int {
	switch status {
	case HealthCritical:
		return 3
	case HealthWarning:
		return 2
	case HealthUnknown:
		return 1
	default:
		return 0
	}
}

// retention returns a queue's MessageRetentionPeriod.
func retention(q store.Queue) (time.Duration, bool) {
	v, err := strconv.ParseInt(q.Attributes["MessageRetentionPeriod"], 10, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	return time.Duration(v) * time.Second, true
}

// Plural says "1 message", "3 messages", as the views word counts everywhere.
func Plural(n int64, noun string) string { return plural(n, noun) }

// HumanDuration rounds a duration as the views do: "45 s", "12 min", "3 h", "4 d".
func HumanDuration(d time.Duration) string { return humanDuration(d) }

// plural says "1 message", "3 messages". It and humanDuration build their text without fmt, as
// do the health rules that match on most queues: a thousand queues' reasons are a thousand
// texts a page.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.FormatInt(n, 10) + " " + noun + "s"
}

// humanDuration rounds a duration to its largest unit: "45 s", "12 min", "3 h", "4 d".
func humanDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	case d < time.Hour:
		return strconv.FormatInt(int64(d/time.Minute), 10) + " min"
	case d < 48*time.Hour:
		return strconv.FormatInt(int64(d/time.Hour), 10) + " h"
	default:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + " d"
	}
}
