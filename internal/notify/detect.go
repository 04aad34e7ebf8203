package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// memory is what the detector saw at its last pass, kept in the store with the alerts it raised
// (store.AppendAlerts), so that a restart neither raises them again nor misses what changed.
type memory struct {
	Queues map[int64]*queueMemory `json:"queues"`
	Blind  map[string]bool        `json:"blind"` // regions toolq could not see
}

// queueMemory is what the detector saw of one queue.
type queueMemory struct {
	// Depth is a DLQ's visible, in-flight and delayed messages: its own peeks move messages in
	// flight for a moment, which must not read as messages leaving and coming back.
	Depth int64 `json:"depth"`
	// Health is the last status worth saying (ok, warning, critical); "" before the first.
	Health views.HealthStatus `json:"health,omitempty"`
	// Configuration: the current status (warning or critical) comes from configuration
	// findings alone, so that its return to ok is advice too.
	Configuration bool `json:"configuration,omitempty"`
	// Blocked are the FIFO groups last seen blocked.
	Blocked []string `json:"blocked,omitempty"`
	// Tasks are a DLQ's move tasks by start time (unix ms) and their last status.
	Tasks map[string]string `json:"tasks,omitempty"`
	// Pending is an arrival waiting for the sample that shows it.
	Pending *pendingArrival `json:"pending,omitempty"`
	// Worst is the severity of the worst arrival told since a DLQ was last empty: its
	// dlq.drained is of that severity, as a resolution is of its problem's.
	Worst views.AlertSeverity `json:"worst,omitempty"`
	// Outcomes are what was said of a DLQ's redrives' outcomes, by redrive id (outcome.go).
	Outcomes map[string]string `json:"outcomes,omitempty"`
}

// pendingArrival is a DLQ's growth seen from its depth, held until a sample taken after it
// says which tools and servers the new messages are (or SampleWait passes), with the alerts
// about the same queue meanwhile, so that one message tells the whole story.
type pendingArrival struct {
	Since time.Time   `json:"since"` // the depth sample that first showed it
	Seen  time.Time   `json:"seen"`  // when the detector saw it
	New   int64       `json:"new"`
	Held  []heldAlert `json:"held,omitempty"`
}

// heldAlert is an alert kept in the memory, with what its JSON leaves out.
type heldAlert struct {
	Alert   views.Alert `json:"alert"`
	Group   string      `json:"group"`
	QueueID int64       `json:"queueId"`
}

// maxBlockedRemembered bounds the groups remembered of one queue; maxBlockedAlerts the
// sessions announced one by one in a pass (the rest in one alert).
const (
	maxBlockedRemembered = 200
	maxBlockedAlerts     = 5
	redriveHistory       = 10
)

// loadMemory reads the detector's memory; an empty one before the first pass.
func (s *Service) loadMemory(ctx context.Context) (*memory, error) {
	m := &memory{Queues: map[int64]*queueMemory{}, Blind: map[string]bool{}}
	js, err := s.opts.Store.KV(ctx, store.AlertDetectorKey)
	if errors.Is(err, store.ErrNotFound) {
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if err := json.Unmarshal([]byte(js), m); err != nil {
		return nil, fmt.Errorf("notify: the detector's memory: %w", err)
	}
	if m.Queues == nil {
		m.Queues = map[int64]*queueMemory{}
	}
	if m.Blind == nil {
		m.Blind = map[string]bool{}
	}
	return m, nil
}

// Check compares what the views' current snapshot shows with what the detector saw last, and
// stores the alerts that makes (with its new memory, in one transaction). It returns them.
func (s *Service) Check(ctx context.Context) ([]views.Alert, error) {
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	mem, err := s.loadMemory(ctx)
	if err != nil {
		return nil, err
	}
	snap, err := s.opts.Views.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	ov := snap.Overview
	now := s.opts.Now().UTC()
	d := &detection{s: s, ctx: ctx, now: now, mem: mem, snap: snap}
	d.regions(ov)
	blind := map[string]bool{}
	for _, r := range ov.Freshness.Blind {
		blind[r] = true
	}
	seen := map[int64]bool{}
	for _, q := range ov.Queues {
		if q.Gone || q.SampledAt == nil {
			continue // no data yet is no news; a gone queue's memory goes
		}
		seen[q.ID] = true
		// While toolq cannot see a region, or its data is stale, what the queues look like is
		// not news: the region's alert says it.
		current := !blind[q.Scope] && !ov.Freshness.Stale
		if err := d.queue(q, current); err != nil {
			return nil, err
		}
	}
	for id := range mem.Queues {
		if !seen[id] {
			delete(mem.Queues, id)
		}
	}
	js, err := json.Marshal(mem)
	if err != nil {
		return nil, fmt.Errorf("notify: the detector's memory: %w", err)
	}
	records := make([]store.Alert, 0, len(d.alerts))
	for _, a := range d.alerts {
		r, err := views.AlertRecord(a)
		if err != nil {
			return nil, err
		}
		records = append(records, r)
	}
	stored, err := s.opts.Store.AppendAlerts(ctx, records, store.AlertDetectorKey, string(js))
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	for i := range d.alerts {
		d.alerts[i].ID = stored[i].ID
	}
	s.pending.Store(d.pending)
	if len(d.alerts) > 0 {
		s.opts.Publisher.Publish(eventAlertsRaised(now))
		s.tel.raised(d.alerts)
	}
	return d.alerts, nil
}

// detection is one pass of Check.
type detection struct {
	s       *Service
	ctx     context.Context
	now     time.Time
	mem     *memory
	snap    *views.Snapshot // what the views show
	alerts  []views.Alert
	pending bool // an arrival still waits for its sample
}

// regions raises an alert when a region becomes blind, and when it is seen again.
func (d *detection) regions(ov views.Overview) {
	now := map[string]bool{}
	for _, r := range ov.Freshness.Blind {
		now[r] = true
		if d.mem.Blind[r] {
			continue
		}
		a := views.Alert{At: d.now, Kind: views.AlertRegionBlind, Severity: views.SeverityCritical, Region: r,
			Title: "toolq cannot see " + r, Path: "/status", Group: views.RegionAlertGroup(r)}
		for _, p := range ov.Sight {
			if p.Region == r && p.Blind {
				a.Title, a.Sight = "toolq cannot see "+p.Problem, &p
				break
			}
		}
		d.alerts = append(d.alerts, a)
	}
	for r := range d.mem.Blind {
		if !now[r] {
			d.alerts = append(d.alerts, views.Alert{At: d.now, Kind: views.AlertRegionVisible, Severity: views.SeverityCritical, Resolved: true,
				Region: r, Title: "toolq sees " + r + " again", Path: "/status", Group: views.RegionAlertGroup(r)})
		}
	}
	d.mem.Blind = now
}

// queue compares one queue with what the detector saw of it. current says its data is live:
// otherwise only what does not depend on it (move tasks) is looked at.
func (d *detection) queue(q views.QueueSummary, current bool) error {
	m, known := d.mem.Queues[q.ID]
	if !known {
		m = &queueMemory{}
		d.mem.Queues[q.ID] = m
	}
	base := views.Alert{At: d.now, Queue: q.Name, QueueARN: q.ARN, Region: q.Region, QueueID: q.ID,
		Path: views.QueuePageURL("", q.Ref), Group: views.QueueAlertGroup(q.ID)}
	var raised []views.Alert
	if current && q.IsDeadLetterQueue {
		depth := q.Held()
		if depth > m.Depth {
			if m.Pending == nil {
				m.Pending = &pendingArrival{Since: *q.SampledAt, Seen: d.now}
			}
			m.Pending.New += depth - m.Depth
		}
		if depth == 0 && m.Depth > 0 {
			raised = append(raised, drained(base, q, m))
		}
		m.Depth = depth
	}
	if current {
		if a, ok := healthChange(base, q, m); ok {
			raised = append(raised, a)
		}
	}
	if current && q.FIFO && !q.IsDeadLetterQueue && (q.BlockedGroups > 0 || len(m.Blocked) > 0) {
		as, err := d.blocked(base, q, m)
		if err != nil {
			return err
		}
		raised = append(raised, as...)
	}
	if q.IsDeadLetterQueue {
		raised = append(raised, d.redrives(base, q, m, known)...)
		raised = append(raised, d.outcomes(base, q, m, known)...)
	}
	if m.Pending == nil {
		d.alerts = append(d.alerts, raised...)
		return nil
	}
	for _, a := range raised {
		m.Pending.Held = append(m.Pending.Held, heldAlert{Alert: a, Group: a.Group, QueueID: a.QueueID})
	}
	return d.arrival(base, q, m)
}

// arrival raises a pending arrival once the DLQ's sample shows it, or SampleWait after it was
// seen, with the alerts held meanwhile.
func (d *detection) arrival(base views.Alert, q views.QueueSummary, m *queueMemory) error {
	p := m.Pending
	tr, err := d.s.opts.Views.Triage(d.ctx, q.ID)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	covers := tr.SampledAt != nil && !tr.SampledAt.Before(p.Since)
	if !covers && d.now.Sub(p.Seen) < d.s.opts.SampleWait {
		d.pending = true
		return nil
	}
	a := base
	a.Kind, a.Severity = views.AlertDLQArrival, views.SeverityWarning
	if q.Health.Status == views.HealthCritical {
		a.Severity = views.SeverityCritical
	}
	a.Arrival = &views.AlertArrival{New: p.New, Depth: m.Depth, SampleCovers: covers, Triage: tr}
	if q.OldestMessageAgeSeconds != nil {
		age := *q.OldestMessageAgeSeconds
		a.Arrival.OldestAgeSeconds = &age
	}
	a.Title = fmt.Sprintf("%s in %s (%d in all)", views.Plural(p.New, "new message"), q.Name, m.Depth)
	if line := tr.Line(); line != "" {
		a.Title += ": " + line
	}
	if a.Traces, err = d.s.opts.Views.NewestTraces(d.ctx, q.ID); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if a.Severity.Rank() > m.Worst.Rank() {
		m.Worst = a.Severity
	}
	d.alerts = append(d.alerts, a)
	for _, h := range p.Held {
		h.Alert.Group, h.Alert.QueueID = h.Group, h.QueueID
		d.alerts = append(d.alerts, h.Alert)
	}
	m.Pending = nil
	return nil
}

// drained says that a DLQ is empty again, whatever emptied it (its consumers, a redrive, a
// discard): the end of the problem its arrivals told.
func drained(base views.Alert, q views.QueueSummary, m *queueMemory) views.Alert {
	a := base
	a.Kind, a.Severity, a.Resolved = views.AlertDLQDrained, cmp.Or(m.Worst, views.SeverityWarning), true
	a.Title = fmt.Sprintf("%s is empty again (%s before)", q.Name, views.Plural(m.Depth, "message"))
	m.Worst = ""
	return a
}

// healthChange says when a queue became warning or critical, or ok again. Unknown (a rule that
// could not be checked) changes nothing: the sight alerts say why. A change that only advises
// on the queue's configuration says so (AlertHealth.Configuration).
func healthChange(base views.Alert, q views.QueueSummary, m *queueMemory) (views.Alert, bool) {
	to := q.Health.Status
	if to == views.HealthUnknown {
		return views.Alert{}, false
	}
	wasConfiguration := m.Configuration
	m.Configuration = to != views.HealthOK && configurationOnly(q.Health)
	if to == m.Health {
		return views.Alert{}, false
	}
	from := m.Health
	m.Health = to
	if from == "" {
		if to == views.HealthOK {
			return views.Alert{}, false
		}
		from = views.HealthOK
	}
	a := base
	a.Kind = views.AlertHealthChanged
	a.Health = &views.AlertHealth{From: from, To: to, Reasons: append([]string{}, q.Health.Reasons...), Configuration: m.Configuration}
	switch to {
	case views.HealthOK:
		a.Severity, a.Resolved = views.AlertSeverity(from), true
		a.Health.Configuration = wasConfiguration
		a.Title = fmt.Sprintf("%s is ok again (was %s)", q.Name, from)
	default:
		a.Severity = views.AlertSeverity(to)
		a.Title = fmt.Sprintf("%s is %s (was %s): %s", q.Name, to, from, joinReasons(q.Health.Reasons))
	}
	return a, true
}

// configurationOnly reports whether every finding of a health is about the queue's
// configuration rather than its messages: today, a DLQ's retention no longer than its source's.
func configurationOnly(h views.Health) bool {
	return len(h.Findings) > 0 && !slices.ContainsFunc(h.Findings, func(f views.Finding) bool { return f.Kind != views.ProblemRetention })
}

// blocked raises an alert for each FIFO session newly blocked behind its failing head.
func (d *detection) blocked(base views.Alert, q views.QueueSummary, m *queueMemory) ([]views.Alert, error) {
	groups, err := d.s.opts.Views.Groups(d.ctx, q.ID)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	var now []string
	var out []views.Alert
	extra := 0
	for _, g := range groups.Groups {
		if !g.Blocked {
			continue
		}
		if len(now) < maxBlockedRemembered {
			now = append(now, g.GroupID)
		}
		if slices.Contains(m.Blocked, g.GroupID) {
			continue
		}
		if len(out) == maxBlockedAlerts {
			extra++
			continue
		}
		a := base
		a.Kind, a.Severity = views.AlertSessionBlocked, views.SeverityWarning
		a.Session = &views.AlertSession{GroupID: g.GroupID, HeadMessageID: g.HeadMessageID, HeadReceiveCount: g.HeadReceiveCount,
			Messages: g.Messages, Dimensions: map[string]string{}}
		if head, err := d.s.opts.Views.Message(d.ctx, q.ID, g.HeadMessageID); err == nil {
			a.Session.ToolName, a.Session.Dimensions = head.ToolName, head.Dimensions
			if t, ok := head.TraceLink(); ok {
				a.Traces = []views.AlertTrace{t}
			}
		}
		a.Title = fmt.Sprintf("session %s blocked in %s: its head failed %s, %s behind it",
			safetext.Line(g.GroupID, 64), q.Name, views.Plural(int64(g.HeadReceiveCount), "time"), views.Plural(int64(g.Messages-1), "message"))
		if a.Session.ToolName != "" {
			a.Title += " (" + safetext.Line(a.Session.ToolName, 64) + ")"
		}
		out = append(out, a)
	}
	if extra > 0 {
		a := base
		a.Kind, a.Severity = views.AlertSessionBlocked, views.SeverityWarning
		a.Title = fmt.Sprintf("%s more blocked in %s", views.Plural(int64(extra), "session"), q.Name)
		out = append(out, a)
	}
	if len(now) == 0 && len(m.Blocked) > 0 {
		out = append(out, unblocked(base, q, m.Blocked))
	}
	m.Blocked = now
	return out, nil
}

// unblocked says that no session of a FIFO queue is blocked any more: those that were (was)
// moved on, their heads done or dead-lettered.
func unblocked(base views.Alert, q views.QueueSummary, was []string) views.Alert {
	a := base
	a.Kind, a.Severity, a.Resolved = views.AlertSessionUnblocked, views.SeverityWarning, true
	var names []string
	for _, g := range was[:min(len(was), 3)] {
		names = append(names, safetext.Line(g, 64))
	}
	if len(was) > 3 {
		names = append(names, fmt.Sprintf("%d more", len(was)-3))
	}
	a.Title = fmt.Sprintf("no session of %s is blocked any more (%s moving again)", q.Name, strings.Join(names, ", "))
	return a
}

// redrives raises an alert when a DLQ's move task starts or ends. Tasks of a queue first seen
// now are its history, not news.
func (d *detection) redrives(base views.Alert, q views.QueueSummary, m *queueMemory, known bool) []views.Alert {
	tasks := d.snap.Redrives(q.ID)
	tasks = tasks[:min(len(tasks), redriveHistory)]
	seen := map[string]string{}
	var out []views.Alert
	for _, t := range slices.Backward(tasks) {
		key := strconv.FormatInt(t.StartedAt.UnixMilli(), 10)
		seen[key] = t.Status
		prev, had := m.Tasks[key]
		if !known || prev == t.Status {
			continue
		}
		var kind views.AlertKind
		switch store.MoveTaskStatus(t.Status) {
		case store.MoveTaskRunning:
			if had {
				continue
			}
			kind = views.AlertRedriveStarted
		case store.MoveTaskCompleted:
			kind = views.AlertRedriveCompleted
		case store.MoveTaskFailed:
			kind = views.AlertRedriveFailed
		case store.MoveTaskCancelled:
			kind = views.AlertRedriveCancelled
		default:
			continue // CANCELLING: the cancellation's alert comes when it ends
		}
		if t.Kind == "discard" {
			out = append(out, d.discardAlert(base, q, t))
			continue
		}
		out = append(out, d.redriveAlert(base, q, t, kind))
	}
	m.Tasks = seen
	return out
}

// redriveAlert describes a move task that started or ended, and who did it when toolq did.
func (d *detection) redriveAlert(base views.Alert, q views.QueueSummary, t views.Redrive, kind views.AlertKind) views.Alert {
	a := base
	a.Kind, a.Severity = kind, views.SeverityInfo
	a.Redrive = &views.AlertRedrive{Status: t.Status, Moved: t.Moved, ToMove: t.ToMove, DestinationARN: t.DestinationARN,
		FailureReason: t.FailureReason, StartedAt: t.StartedAt}
	action := "redrive.start"
	if kind == views.AlertRedriveCancelled {
		action = "redrive.cancel"
	}
	a.Redrive.By = d.actor(q.Name, action, t.StartedAt)
	to := "its sources"
	if t.DestinationARN != "" {
		to = arn.QueueName(t.DestinationARN)
	}
	by := ""
	if a.Redrive.By != "" {
		by = " by " + safetext.Line(a.Redrive.By, 64)
	}
	switch kind {
	case views.AlertRedriveStarted:
		a.Title = fmt.Sprintf("redrive of %s to %s started%s: %s to move", q.Name, to, by, views.Plural(t.ToMove, "message"))
	case views.AlertRedriveCompleted:
		a.Title = fmt.Sprintf("redrive of %s to %s completed: %d of %d moved", q.Name, to, t.Moved, t.ToMove)
	case views.AlertRedriveFailed:
		a.Severity = views.SeverityWarning
		a.Title = fmt.Sprintf("redrive of %s to %s failed after %d of %d: %s", q.Name, to, t.Moved, t.ToMove, safetext.Line(t.FailureReason, 200))
	case views.AlertRedriveCancelled:
		a.Title = fmt.Sprintf("redrive of %s cancelled%s: %d of %d moved, the rest stay", q.Name, by, t.Moved, t.ToMove)
	}
	return a
}

// discardAlert describes a discard that started or ended, and who asked for it.
func (d *detection) discardAlert(base views.Alert, q views.QueueSummary, t views.Redrive) views.Alert {
	a := base
	a.Kind, a.Severity = views.AlertDiscard, views.SeverityInfo
	a.Redrive = &views.AlertRedrive{Status: t.Status, Moved: t.Moved, ToMove: t.ToMove, FailureReason: t.FailureReason, StartedAt: t.StartedAt}
	a.Redrive.By = d.actor(q.Name, "discard.start", t.StartedAt)
	by := ""
	if a.Redrive.By != "" {
		by = " by " + safetext.Line(a.Redrive.By, 64)
	}
	switch store.MoveTaskStatus(t.Status) {
	case store.MoveTaskRunning:
		a.Title = fmt.Sprintf("discard of chosen calls of %s into toolq's archive started%s", q.Name, by)
	case store.MoveTaskFailed:
		a.Severity = views.SeverityWarning
		a.Title = fmt.Sprintf("discard of %s failed after %d of %d archived: %s", q.Name, t.Moved, t.ToMove, safetext.Line(t.FailureReason, 200))
	case store.MoveTaskCancelled:
		a.Title = fmt.Sprintf("discard of %s cancelled: %d of %d archived, the rest stay", q.Name, t.Moved, t.ToMove)
	default:
		a.Title = fmt.Sprintf("discard of %s completed: %d of %d calls kept whole in toolq's archive and deleted from the queue", q.Name, t.Moved, t.ToMove)
	}
	return a
}

// actorWindow is how far from a task's start the audit entry of its start may be: toolq stores
// the task with the start time SQS reports, a little after the action's own.
const actorWindow = 2 * time.Minute

// actor returns who did an action on a queue around a task's start, as the audit log says: the
// start shortly before, a cancellation after; "" when toolq did not (the console, the CLI).
func (d *detection) actor(queue, action string, startedAt time.Time) string {
	entries, err := d.s.opts.Views.Audit(d.ctx, views.AuditQuery{Queue: queue, Limit: 20})
	if err != nil {
		return ""
	}
	for _, e := range entries { // newest first
		if e.Action != action || e.Result != store.AuditAccepted {
			continue
		}
		if action == "redrive.cancel" && !e.At.Before(startedAt) {
			return e.Actor
		}
		if action != "redrive.cancel" && e.At.Sub(startedAt).Abs() <= actorWindow {
			return e.Actor
		}
	}
	return ""
}

// joinReasons joins health reasons for a title, the first three.
func joinReasons(reasons []string) string {
	if len(reasons) > 3 {
		return fmt.Sprintf("%s; and %d more", strings.Join(reasons[:3], "; "), len(reasons)-3)
	}
	return strings.Join(reasons, "; ")
}
