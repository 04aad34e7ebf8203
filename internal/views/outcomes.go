package views

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// A redrive's outcome: what came back of it. SQS gives every message a move task moves a new id,
// so toolq remembers, when a redrive starts, what the dead-letter queue's newest sample held of
// it (store.RememberRedrive: a hash of each body, its tool call id, its tool, dimensions and
// group), and counts as a bounce-back each later DLQ arrival that carries a remembered body or
// tool call, sent after the start and first seen within the window. It is counted in the
// snapshot, from the store, so that the redrive row, its page, the API, the summary, the
// notifier and /metrics show one number.

// OutcomeSource says where a redrive's outcome comes from: toolq's own samples of the DLQ, before
// and after the redrive.
const OutcomeSource = "samples"

// Outcome states.
const (
	OutcomeMoving   = "moving"   // the task still runs
	OutcomeWatching = "watching" // ended; bounce-backs may still come
	OutcomeSettled  = "settled"  // a sample RedriveSettle after the last news found nothing new
	OutcomeClosed   = "closed"   // the window ended: the count is final
	OutcomeBlind    = "blind"    // toolq had no sample before the start: nothing to count
)

// RedriveOutcome is what came back of a redrive, as toolq's samples of the dead-letter queue
// show it: how many of the messages it knew the redrive moved failed again and are back, by
// tool, dimension value, reason and (FIFO) message group, and what the count can miss.
type RedriveOutcome struct {
	State string `json:"state"` // moving, watching, settled, closed or blind
	// Source is where the numbers come from (OutcomeSource); CheckedAt the newest sample of the
	// DLQ they count, the age of what they say (null before one since the start), and
	// CheckedCoverage the share of the DLQ that sample saw.
	Source          string     `json:"source"`
	CheckedAt       *time.Time `json:"checkedAt"`
	CheckedCoverage float64    `json:"checkedCoverage"`
	// Moved is what the task moved (SQS's count); Remembered how many of those toolq knew by
	// what they carry, from the sample of SampledAt (null when none), which saw SampleCoverage
	// of the DLQ.
	Moved          int64      `json:"moved"`
	Remembered     int        `json:"remembered"`
	SampledAt      *time.Time `json:"sampledAt"`
	SampleCoverage float64    `json:"sampleCoverage"`
	// BouncedBack is how many remembered messages came back to the DLQ within the window;
	// BouncedShare that as a share of Remembered (0 when none was); InDeadLetterQueue those of
	// them the DLQ's newest sample still holds: what a redrive now would replay again.
	BouncedBack       int     `json:"bouncedBack"`
	BouncedShare      float64 `json:"bouncedShare"`
	InDeadLetterQueue int     `json:"inDeadLetterQueue"`
	// MostBounced: BouncedShare reached the threshold (Thresholds.RedriveBounceShare).
	MostBounced bool `json:"mostBounced"`
	// FirstBackAt and LastBackAt are when the samples first saw the earliest and the latest
	// bounce-back; null when none came.
	FirstBackAt *time.Time `json:"firstBackAt"`
	LastBackAt  *time.Time `json:"lastBackAt"`
	// WindowEndsAt is when later arrivals stop counting; Settled that the bounce-backs have
	// settled (or the window ended).
	WindowEndsAt time.Time `json:"windowEndsAt"`
	Settled      bool      `json:"settled"`
	// Tools, Reasons and Groups count the remembered messages and their bounce-backs by tool
	// name ("" for none), failure reason and FIFO message group (groups of FIFO queues only),
	// most bounced first; Dimensions by each dimension's values. Never nil.
	Tools      []BounceCount     `json:"tools"`
	Dimensions []BounceDimension `json:"dimensions"`
	Reasons    []BounceCount     `json:"reasons"`
	Groups     []BounceCount     `json:"groups"`
	// Misses says, one line each, what the count can miss; never nil.
	Misses []string `json:"misses"`
	// Line says it on one line: "37 moved · 5 back within 10 min: web_search 5 (mcpServer research)".
	Line string `json:"line"`
}

// BounceCount is one value (a tool, a reason, a group) of a redrive's messages: how many of them
// toolq remembered, and how many came back.
type BounceCount struct {
	Value      string `json:"value"`
	Remembered int    `json:"remembered"`
	Back       int    `json:"back"`
}

// BounceDimension counts a redrive's messages by the values of one dimension.
type BounceDimension struct {
	Name   string        `json:"name"`
	Values []BounceCount `json:"values"`
}

// outcomeTop is how many values of each list an outcome keeps.
const outcomeTop = 10

// outcomeMemory is what the builds keep of the redrives' outcomes: the memories (which never
// change once written) by task id, and each DLQ's candidate arrivals with the newest sample and
// remembered tasks they were read for (a DLQ's messages change only with a new sample).
type outcomeMemory struct {
	memories map[int64]store.RedriveMemory
	arrivals map[int64]dlqArrivals
}

type dlqArrivals struct {
	sampleID int64
	tasks    string
	arrivals []store.Arrival
}

// readOutcomes counts the outcome of every redrive the readings hold (each DLQ's newest) that
// toolq remembered, by task id.
func (s *Service) readOutcomes(ctx context.Context, mem *outcomeMemory, rd *readings) (map[int64]*RedriveOutcome, error) {
	if mem.memories == nil {
		mem.memories, mem.arrivals = map[int64]store.RedriveMemory{}, map[int64]dlqArrivals{}
	}
	var missing []int64
	for _, tasks := range rd.redrives {
		for _, t := range tasks {
			if _, ok := mem.memories[t.ID]; !ok {
				missing = append(missing, t.ID)
			}
		}
	}
	if len(missing) > 0 {
		got, err := s.store.RedriveMemories(ctx, missing)
		if err != nil {
			return nil, fmt.Errorf("views: %w", err)
		}
		for id, m := range got {
			mem.memories[id] = m
		}
	}
	// The arrivals of the DLQs whose newest sample or remembered redrives changed, in one read.
	var stale []int64
	since := time.Time{}
	keys := map[int64]string{}
	for qid, tasks := range rd.redrives {
		var key strings.Builder
		var oldest time.Time
		for _, t := range tasks {
			if m, ok := mem.memories[t.ID]; ok && m.SampleID != 0 {
				fmt.Fprintf(&key, "%d,", t.ID)
				if oldest.IsZero() || t.StartedAt.Before(oldest) {
					oldest = t.StartedAt
				}
			}
		}
		if key.Len() == 0 {
			delete(mem.arrivals, qid)
			continue
		}
		k := key.String()
		keys[qid] = k
		if a, ok := mem.arrivals[qid]; ok && a.tasks == k && a.sampleID == rd.samples[qid].ID {
			continue
		}
		stale = append(stale, qid)
		if since.IsZero() || oldest.Before(since) {
			since = oldest
		}
	}
	for qid := range mem.arrivals {
		if _, ok := keys[qid]; !ok {
			delete(mem.arrivals, qid)
		}
	}
	if len(stale) > 0 {
		arrivals, err := s.store.RedrivenArrivals(ctx, stale, since)
		if err != nil {
			return nil, fmt.Errorf("views: %w", err)
		}
		byQueue := map[int64][]store.Arrival{}
		for _, a := range arrivals {
			byQueue[a.QueueID] = append(byQueue[a.QueueID], a)
		}
		for _, qid := range stale {
			mem.arrivals[qid] = dlqArrivals{sampleID: rd.samples[qid].ID, tasks: keys[qid], arrivals: byQueue[qid]}
		}
	}
	out := map[int64]*RedriveOutcome{}
	byID := make(map[int64]*store.Queue, len(rd.redrives))
	for i := range rd.queues {
		if _, ok := rd.redrives[rd.queues[i].ID]; ok {
			byID[rd.queues[i].ID] = &rd.queues[i]
		}
	}
	for qid, tasks := range rd.redrives {
		q, ok := byID[qid]
		if !ok {
			continue
		}
		for id, o := range s.outcomesOf(rd, q, tasks, mem.memories, mem.arrivals[qid].arrivals) {
			out[id] = o
		}
	}
	return out, nil
}

// tally counts one list of an outcome.
type tally map[string]*BounceCount

func (t tally) add(value string, back bool) {
	c, ok := t[value]
	if !ok {
		c = &BounceCount{Value: value}
		t[value] = c
	}
	if back {
		c.Back++
	} else {
		c.Remembered++
	}
}

// list returns the counts most bounced first, then most remembered, at most outcomeTop.
func (t tally) list() []BounceCount {
	out := make([]BounceCount, 0, len(t))
	for _, c := range t {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b BounceCount) int {
		return cmp.Or(cmp.Compare(b.Back, a.Back), cmp.Compare(b.Remembered, a.Remembered), strings.Compare(a.Value, b.Value))
	})
	return out[:min(len(out), outcomeTop)]
}

// outcomeCount is one redrive's outcome being counted.
type outcomeCount struct {
	task                  store.MoveTask
	mem                   store.RedriveMemory
	ids                   map[string]bool // the message ids it remembered
	back                  int
	inDLQ                 int
	first, last           time.Time
	tools, reasons, group tally
	dims                  map[string]tally
}

func (c *outcomeCount) count(s *Service, tool, group string, dims map[string]string, back bool) {
	c.tools.add(tool, back)
	if r := s.reasonOf(nil, dims); r != nil {
		c.reasons.add(r.Code, back)
	}
	if group != "" {
		c.group.add(group, back)
	}
	for _, name := range s.dims {
		if v := dims[name]; v != "" {
			c.dims[name].add(v, back)
		}
	}
}

// outcomesOf counts the outcomes of one DLQ's redrives (newest first) from their memories and the
// DLQ's candidate arrivals (oldest first). Each arrival is the bounce-back of one redrive at most:
// the newest that started before the message was sent again (a redrive gives what it moves a
// new SentTimestamp, which a standard DLQ keeps and a FIFO DLQ renews on arrival, both after the
// start) and whose memory holds its body or its tool call, not under its own message id (one the
// task has not moved yet), first seen within the window.
func (s *Service) outcomesOf(rd *readings, q *store.Queue, tasks []store.MoveTask, memories map[int64]store.RedriveMemory, arrivals []store.Arrival) map[int64]*RedriveOutcome {
	var counts []*outcomeCount // oldest first
	byHash, byCall := map[string][]*outcomeCount{}, map[string][]*outcomeCount{}
	out := map[int64]*RedriveOutcome{}
	for _, t := range slices.Backward(tasks) {
		m, ok := memories[t.ID]
		if !ok {
			continue
		}
		c := &outcomeCount{task: t, mem: m, ids: make(map[string]bool, len(m.Messages)),
			tools: tally{}, reasons: tally{}, group: tally{}, dims: map[string]tally{}}
		for _, name := range s.dims {
			c.dims[name] = tally{}
		}
		for _, r := range m.Messages {
			c.ids[r.MessageID] = true
			if r.BodyHash != "" && !slices.Contains(byHash[r.BodyHash], c) {
				byHash[r.BodyHash] = append(byHash[r.BodyHash], c)
			}
			if r.ToolCallID != "" && !slices.Contains(byCall[r.ToolCallID], c) {
				byCall[r.ToolCallID] = append(byCall[r.ToolCallID], c)
			}
			c.count(s, r.ToolName, r.GroupID, r.Dimensions, false)
		}
		counts = append(counts, c)
	}
	newest, sampled := rd.samples[q.ID]
	for _, a := range arrivals {
		var owner *outcomeCount
		for _, c := range slices.Concat(byHash[a.BodyHash], byCall[a.ToolCallID]) {
			switch {
			case a.BodyHash == "" && a.ToolCallID == "":
			case c.ids[a.MessageID], a.SentAt.Before(c.task.StartedAt), a.FirstSeen.Before(c.task.StartedAt),
				a.FirstSeen.After(c.task.StartedAt.Add(s.th.RedriveWindow)):
			case owner == nil || c.task.StartedAt.After(owner.task.StartedAt):
				owner = c
			}
		}
		if owner == nil {
			continue
		}
		owner.back++
		if sampled && a.LastSeen.Equal(newest.At) {
			owner.inDLQ++
		}
		if owner.first.IsZero() {
			owner.first = a.FirstSeen
		}
		owner.last = a.FirstSeen
		owner.count(s, a.ToolName, a.GroupID, a.Dimensions, true)
	}
	for _, c := range counts {
		out[c.task.ID] = s.outcome(rd, q, c, newest, sampled)
	}
	return out
}

// outcome finishes one redrive's outcome: its state, what it can miss, its line.
func (s *Service) outcome(rd *readings, q *store.Queue, c *outcomeCount, newest store.Sample, sampled bool) *RedriveOutcome {
	t, m := c.task, c.mem
	o := &RedriveOutcome{Source: OutcomeSource, Moved: t.Moved, Remembered: len(m.Messages), SampledAt: timePtr(m.SampleAt),
		SampleCoverage: m.Coverage(), BouncedBack: c.back, InDeadLetterQueue: c.inDLQ,
		FirstBackAt: timePtr(c.first), LastBackAt: timePtr(c.last), WindowEndsAt: t.StartedAt.Add(s.th.RedriveWindow).UTC(),
		Tools: c.tools.list(), Reasons: c.reasons.list(), Groups: []BounceCount{}, Dimensions: []BounceDimension{}, Misses: []string{}}
	if m.SampleID == 0 {
		o.SampleCoverage = 0
	}
	if q.FIFO {
		o.Groups = c.group.list()
	}
	for _, name := range s.dims {
		o.Dimensions = append(o.Dimensions, BounceDimension{Name: name, Values: c.dims[name].list()})
	}
	// The share is of the remembered messages the task moved: a cancelled task leaves some of
	// what the sample held where it was.
	known := o.Remembered
	if !t.Running() && t.Moved < int64(known) {
		known = int(t.Moved)
	}
	if known > 0 {
		o.BouncedShare = math.Min(1, math.Round(float64(c.back)/float64(known)*1000)/1000)
		o.MostBounced = o.BouncedShare >= s.th.RedriveBounceShare
	}
	since := sampled && newest.At.After(t.StartedAt)
	if since {
		o.CheckedAt, o.CheckedCoverage = timePtr(newest.At), newest.Coverage()
	}
	// Settled: the task ended and a sample RedriveSettle after the last news (the end, the
	// newest bounce-back) found nothing new. The window's end is the clock's.
	closed := rd.clock.past(o.WindowEndsAt)
	news := t.UpdatedAt
	if c.last.After(news) {
		news = c.last
	}
	settled := !t.Running() && since && !newest.At.Before(news.Add(s.th.RedriveSettle))
	switch {
	case m.SampleID == 0:
		o.State = OutcomeBlind
	case closed:
		o.State, o.Settled = OutcomeClosed, true
	case t.Running():
		o.State = OutcomeMoving
	case settled:
		o.State, o.Settled = OutcomeSettled, true
	default:
		o.State = OutcomeWatching
	}
	o.Misses = s.misses(o, t, m, newest, since)
	o.Line = outcomeLine(o, t)
	return o
}

// misses says what an outcome's count can miss, as far as toolq can tell.
func (s *Service) misses(o *RedriveOutcome, t store.MoveTask, m store.RedriveMemory, newest store.Sample, since bool) []string {
	out := []string{}
	if m.SampleID == 0 {
		return append(out, "toolq had not sampled this dead-letter queue before the redrive started: it cannot tell what came back")
	}
	moving := t.Moved
	if t.Running() {
		moving = max(t.Moved, t.ToMove)
	}
	if moving > int64(o.Remembered) {
		out = append(out, fmt.Sprintf("toolq knew %d of the %d messages moved (its sample before the start saw %s of the dead-letter queue): what comes back of the other %d is not counted",
			o.Remembered, moving, percentText(o.SampleCoverage), moving-int64(o.Remembered)))
	}
	unknown := 0
	for _, r := range m.Messages {
		if r.BodyHash == "" && r.ToolCallID == "" {
			unknown++
		}
	}
	if unknown > 0 {
		out = append(out, fmt.Sprintf("%s of the sample carry neither a body hash nor a tool call id: they cannot be recognised when they come back", Plural(int64(unknown), "message")))
	}
	switch {
	case !since:
		out = append(out, "the dead-letter queue has not been sampled since the redrive started")
	case newest.Coverage() < 1:
		out = append(out, fmt.Sprintf("the newest sample saw %s of the dead-letter queue: bounce-backs it did not see are not counted", percentText(newest.Coverage())))
	}
	return out
}

// percentText says a share as a whole percentage.
func percentText(share float64) string { return fmt.Sprintf("%.0f%%", share*100) }

// outcomeLine says an outcome on one line, for the redrive's row, the summary and alerts.
func outcomeLine(o *RedriveOutcome, t store.MoveTask) string {
	line := outcomeCounts(o, t.StartedAt)
	if o.State == OutcomeBlind || o.BouncedBack == 0 {
		return line
	}
	var parts []string
	for _, tc := range o.Tools[:min(len(o.Tools), triageValues)] {
		if tc.Back == 0 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", safetext.Line(cmp.Or(tc.Value, "(no tool)"), 64), tc.Back))
	}
	if len(parts) == 0 {
		return line
	}
	line += ": " + strings.Join(parts, ", ")
	for _, d := range o.Dimensions {
		if len(d.Values) > 0 && d.Values[0].Back > 0 {
			line += fmt.Sprintf(" (%s %s)", safetext.Line(d.Name, 64), safetext.Line(d.Values[0].Value, 64))
			break
		}
	}
	return line
}

// roundUpMinutes says a duration in whole minutes, rounded up ("10 min"), at least 1.
func roundUpMinutes(d time.Duration) string {
	return fmt.Sprintf("%d min", max(1, int(math.Ceil(d.Minutes()))))
}

// withOutcome is a redrive's view with its outcome, when the snapshot counted one.
func (snap *Snapshot) withOutcome(r Redrive) Redrive {
	if o, ok := snap.readings.outcomes[r.ID]; ok {
		r.Outcome = o
	}
	return r
}

// LastOutcome is what the newest ended redrive of a dead-letter queue that toolq remembered
// brought back, as of the snapshot; ok false when there is none.
func (snap *Snapshot) LastOutcome(queueID int64) (Redrive, bool) {
	for _, r := range snap.Redrives(queueID) {
		if !r.Running && r.Outcome != nil {
			return r, true
		}
	}
	return Redrive{}, false
}

// Redrive returns one move task of a dead-letter queue by its id, with its outcome as of the
// current snapshot: ErrNotFound for no task of that queue.
func (s *Service) RedriveByID(ctx context.Context, queueID, taskID int64) (Redrive, error) {
	t, err := s.store.GetMoveTask(ctx, taskID)
	if err != nil {
		return Redrive{}, storeError(err)
	}
	if t.QueueID != queueID {
		return Redrive{}, fmt.Errorf("views: redrive %d of queue %d: %w", taskID, queueID, ErrNotFound)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Redrive{}, err
	}
	rs, err := s.withSelections(ctx, []Redrive{snap.withOutcome(redriveOf(t, snap.At))})
	if err != nil {
		return Redrive{}, err
	}
	return rs[0], nil
}

// QueueRedriveOutcome is a dead-letter queue's newest redrive with its outcome, for the summary.
type QueueRedriveOutcome struct {
	Queue  string `json:"queue"`
	Region string `json:"region"`
	// Ref is how links name the queue.
	Ref     string  `json:"-"`
	Redrive Redrive `json:"redrive"`
}

// redriveOutcomes lists each DLQ's newest redrive with an outcome whose window is open (or that
// still moves), most bounced first.
func redriveOutcomes(snap *Snapshot) []QueueRedriveOutcome {
	out := []QueueRedriveOutcome{}
	for _, q := range snap.Overview.Queues {
		if !q.IsDeadLetterQueue || q.Gone {
			continue
		}
		for _, r := range snap.Redrives(q.ID) {
			if r.Outcome == nil || r.Outcome.State == OutcomeBlind {
				continue
			}
			if r.Outcome.State != OutcomeClosed {
				out = append(out, QueueRedriveOutcome{Queue: q.Name, Region: q.Region, Ref: q.Ref, Redrive: r})
			}
			break
		}
	}
	slices.SortStableFunc(out, func(a, b QueueRedriveOutcome) int {
		return cmp.Or(cmp.Compare(b.Redrive.Outcome.BouncedBack, a.Redrive.Outcome.BouncedBack), cmp.Compare(a.Queue, b.Queue))
	})
	return out
}
