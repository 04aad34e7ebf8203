package views

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// maxRedrives bounds a DLQ's redrive history as the views show it.
const maxRedrives = 50

// Redrives returns a dead-letter queue's move tasks, newest first (empty for other queues).
func (s *Service) Redrives(ctx context.Context, queueID int64) ([]Redrive, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return nil, err
	}
	tasks, err := s.store.ListMoveTasks(ctx, q.ID, maxRedrives)
	if err != nil {
		return nil, fmt.Errorf("views: redrives of %s: %w", q.Name, err)
	}
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	out := make([]Redrive, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, snap.withOutcome(redriveOf(t, now)))
	}
	return s.withSelections(ctx, out)
}

// withSelections adds their selection and counts to the selective redrives among rs.
func (s *Service) withSelections(ctx context.Context, rs []Redrive) ([]Redrive, error) {
	var ids []int64
	for _, r := range rs {
		if r.Kind != kindMoveTask {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return rs, nil
	}
	jobs, err := s.store.SelectionJobs(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("views: selective redrives: %w", err)
	}
	for i, r := range rs {
		if j, ok := jobs[r.ID]; ok {
			rs[i].Selection = selectionJobOf(j)
		}
	}
	return rs, nil
}

// Redrive kinds as the API names them.
const (
	kindMoveTask  = "moveTask"
	kindSelection = "selection"
	kindDiscard   = "discard"
	kindRestore   = "restore"
)

// selectionJobOf is a job's selection and counts as the views show them.
func selectionJobOf(j store.SelectionJob) *SelectionJob {
	out := &SelectionJob{Actor: j.Actor, Matched: j.Matched, Held: j.Held, Released: j.Released, Failed: j.Failed, NotReached: j.NotReached}
	// The selection is the engine's JSON, whose fields these are; a row that cannot be read
	// shows its counts alone.
	_ = json.Unmarshal([]byte(j.Selection), out)
	out.Actor = j.Actor
	return out
}

// RedriveTargets is what a dead-letter queue's redrive panel offers as destinations.
type RedriveTargets struct {
	// Destinations are the live watched queues a redrive is likely meant for, of the DLQ's type
	// (SQS refuses a FIFO source with a standard destination and the reverse): the DLQ's own
	// sources first, then the queues whose names it carries ("web-search" for
	// "web-search-dlq"), each by name (its ARN when the name is ambiguous).
	Destinations []string
	// Others are the other live watched queues of the DLQ's type, offered only behind "Other
	// queue…": a redrive there is unusual enough to be typed.
	//
	// Neither list holds a queue of another account (a move task moves messages within one;
	// the action refuses it) or a dead-letter queue (a redrive into another DLQ parks the
	// messages again): those only typed, and the action checks them.
	Others []string
	// TierSources are the DLQ's sources that are themselves dead-letter queues: the default
	// destination sends messages back there, one step along the chain.
	TierSources []string
}

// RedriveTargets returns the destinations a dead-letter queue's redrive may choose. It reads
// the queue list alone: no health, no samples.
func (s *Service) RedriveTargets(ctx context.Context, dlqID int64) (RedriveTargets, error) {
	queues, err := s.store.ListQueues(ctx, store.QueueFilter{IncludeGone: true})
	if err != nil {
		return RedriveTargets{}, fmt.Errorf("views: redrive targets: %w", err)
	}
	names := make(map[string]int, len(queues))
	var dlq store.Queue
	for _, q := range queues {
		names[q.Name]++
		if q.ID == dlqID {
			dlq = q
		}
	}
	if dlq.ID == 0 {
		return RedriveTargets{}, fmt.Errorf("views: redrive targets of queue %d: %w", dlqID, ErrNotFound)
	}
	out := RedriveTargets{Destinations: []string{}, Others: []string{}, TierSources: []string{}}
	base := deadLetterBase(dlq.Name)
	var related []string
	for _, q := range queues {
		if slices.Contains(dlq.SourceARNs, q.ARN) && q.IsDeadLetterQueue() && q.Attributes["RedrivePolicy"] != "" {
			out.TierSources = append(out.TierSources, q.Name)
		}
		if q.FIFO != dlq.FIFO || q.ARN == dlq.ARN || q.Gone() || q.IsDeadLetterQueue() ||
			(q.AccountID != "" && dlq.AccountID != "" && q.AccountID != dlq.AccountID) {
			continue
		}
		ref := q.Name
		if names[q.Name] > 1 {
			ref = q.ARN
		}
		switch {
		case slices.Contains(dlq.SourceARNs, q.ARN):
			out.Destinations = append(out.Destinations, ref)
		case base != "" && strings.Contains(q.Name, base):
			related = append(related, ref)
		default:
			out.Others = append(out.Others, ref)
		}
	}
	out.Destinations = append(out.Destinations, related...)
	return out, nil
}

// deadLetterBase is the name a dead-letter queue's own carries of the queue it serves: its name
// without ".fifo" and a dead-letter suffix ("web-search" for "web-search-dlq"); "" when the name
// has no such suffix, since then it names no other queue.
func deadLetterBase(name string) string {
	n := strings.TrimSuffix(name, ".fifo")
	lower := strings.ToLower(n)
	for _, suffix := range []string{"-dead-letter", "_dead_letter", "-deadletter", "-dlq", "_dlq", ".dlq", "dlq"} {
		if strings.HasSuffix(lower, suffix) && len(n) > len(suffix) {
			return n[:len(n)-len(suffix)]
		}
	}
	return ""
}

// Redrive returns a move task as the views show it, at the service's clock: what the API
// answers for a task an action has just started or cancelled.
func (s *Service) Redrive(t store.MoveTask) Redrive { return redriveOf(t, s.clock()) }

// redriveOf turns a move task into its view: progress, the observed rate (moved over the time
// since the start: up to now while it runs, up to its last update once it ended) and, while it
// runs, the time left at that rate.
func redriveOf(t store.MoveTask, now time.Time) Redrive {
	r := Redrive{
		ID:             t.ID,
		Kind:           kindMoveTask,
		TaskHandle:     t.TaskHandle,
		Status:         string(t.Status),
		SourceARN:      t.SourceARN,
		DestinationARN: t.DestinationARN,
		Moved:          t.Moved,
		ToMove:         t.ToMove,
		FailureReason:  t.FailureReason,
		FailureAdvice:  failureAdviceOf(t),
		StartedAt:      t.StartedAt.UTC(),
		UpdatedAt:      t.UpdatedAt.UTC(),
		Running:        t.Running(),
	}
	switch t.Kind {
	case store.KindSelection:
		r.Kind = kindSelection
	case store.KindDiscard:
		r.Kind = kindDiscard
	case store.KindRestore:
		r.Kind = kindRestore
	}
	if t.MaxPerSecond > 0 {
		v := t.MaxPerSecond
		r.MaxMessagesPerSecond = &v
	}
	switch {
	case t.ToMove > 0:
		r.Percent = math.Min(100, math.Round(float64(t.Moved)/float64(t.ToMove)*1000)/10)
	case t.Status == store.MoveTaskCompleted:
		r.Percent = 100 // nothing was left to move
	}
	end := t.UpdatedAt
	if r.Running {
		end = now
	}
	if elapsed := end.Sub(t.StartedAt).Seconds(); elapsed > 0 {
		r.RatePerSecond = math.Round(float64(t.Moved)/elapsed*100) / 100
	}
	if r.Running && r.RatePerSecond > 0 && t.ToMove > t.Moved {
		left := math.Ceil(float64(t.ToMove-t.Moved) / (float64(t.Moved) / end.Sub(t.StartedAt).Seconds()))
		r.SecondsLeft = &left
	}
	return r
}

// QueueRedrive is a running move task with the dead-letter queue it moves: its name, region and
// account (QueueSummary.Account), as queues of one name may live in several accounts.
type QueueRedrive struct {
	Queue, Region, Account string
	Redrive
}

// RunningRedrives returns the move tasks that are running or cancelling, with their queues, as
// of the snapshot.
func (snap *Snapshot) RunningRedrives() []QueueRedrive {
	rd := snap.readings
	out := make([]QueueRedrive, 0, len(rd.running))
	for _, t := range rd.running {
		if q, ok := snap.Queue(t.QueueID); ok {
			out = append(out, QueueRedrive{Queue: q.Name, Region: q.Region, Account: q.Account, Redrive: redriveOf(t, snap.At)})
		}
	}
	return out
}

// failureAdviceOf is what to do about a failed move task; "" for any other.
func failureAdviceOf(t store.MoveTask) string {
	switch {
	case t.Status != store.MoveTaskFailed:
		return ""
	case t.Kind == store.KindSelection:
		return "The messages the selective redrive did not move are in the dead-letter queue, visible again (those it sent and could not delete are in both, as the reason says): fix what the reason names, then start it again; the messages it moved stay moved."
	}
	return MoveTaskFailureAdvice(t.FailureReason)
}

// moveTaskFailures are the reasons SQS gives a failed move task (ListMessageMoveTasks'
// FailureReason: an error code, or a sentence of its own), matched by a part of them in lower
// case, each with what to do. The first that matches wins.
var moveTaskFailures = []struct{ match, advice string }{
	{"couldnotdeterminemessagesource", "Some messages did not come from a source queue's RedrivePolicy (sent to the dead-letter queue directly, or their source was deleted), so SQS cannot tell where they return: start the redrive again with the source queue chosen as its destination."},
	{"nonexistentqueue", "The destination queue does not exist (any more): recreate it, or start the redrive again with another destination."},
	{"same type", "A standard queue's messages can only go to a standard queue, a FIFO queue's to a FIFO queue: start the redrive again with a destination of the dead-letter queue's type."},
	{"kms", "SQS could not use the KMS key of the dead-letter queue or of the destination: let SQS use it (kms:Decrypt on the dead-letter queue's key, kms:GenerateDataKey on the destination's, and the key enabled), then start the redrive again."},
	{"accessdenied", "SQS was refused to send to the destination: allow the dead-letter queue's account to send there (the destination's queue policy) and the destination to take its messages (the dead-letter queue's RedriveAllowPolicy), then start the redrive again."},
	{"36 hours", "A move task runs 36 hours at most: start a new one for the messages left, at a higher rate or at the rate SQS chooses."},
	{"throttl", "SQS throttled the move: start the redrive again at a lower rate (messages per second)."},
	{"toolarge", "A message is larger than the destination's MaximumMessageSize: raise the destination's limit to the dead-letter queue's, then start the redrive again."},
	{"too large", "A message is larger than the destination's MaximumMessageSize: raise the destination's limit to the dead-letter queue's, then start the redrive again."},
	{"internal", "SQS failed on its side: start the redrive again; the messages it did not move are still in the dead-letter queue."},
	{"unavailable", "SQS failed on its side: start the redrive again; the messages it did not move are still in the dead-letter queue."},
}

// MoveTaskFailureAdvice says in one sentence what to do about a move task that failed with
// reason, for every reason: those SQS is known to give each have theirs, and any other says
// where the messages are and what to read.
func MoveTaskFailureAdvice(reason string) string {
	lower := strings.ToLower(reason)
	for _, f := range moveTaskFailures {
		if strings.Contains(lower, f.match) {
			return f.advice
		}
	}
	if strings.TrimSpace(reason) == "" {
		return "SQS gave no reason: the messages it did not move are still in the dead-letter queue; look at the task in the SQS console, then start the redrive again."
	}
	return "The messages SQS did not move are still in the dead-letter queue: fix what its reason names (the destination queue, its policy or its encryption key), then start the redrive again."
}
