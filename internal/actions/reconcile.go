package actions

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// clockSkew is how much earlier than its intent (by toolq's clock) SQS may say that the task an
// intent started began (by AWS's clock).
const clockSkew = time.Minute

// Reconcile settles every intent in the audit log that has no outcome and belongs to no action
// under way in this process: actions whose process stopped (a crash, a kill) between calling AWS
// and recording what happened, or whose outcome the database refused. Each gets the outcome
// ListMessageMoveTasks shows: the task it started (or cancelled), or that nothing happened. The
// dashboard calls it at start-up; each action also settles its queue's intents before it acts,
// so an intent Reconcile could not settle (AWS unreachable) is settled before anything else
// happens to its queue.
func (s *Service) Reconcile(ctx context.Context) error {
	pending, err := s.pending(ctx, "")
	if err != nil {
		return err
	}
	var arns []string
	for _, p := range pending {
		if !slices.Contains(arns, p.QueueARN) {
			arns = append(arns, p.QueueARN)
		}
	}
	var errs []error
	for _, ref := range arns {
		q, err := s.store.ResolveQueue(ctx, ref)
		if err != nil {
			errs = append(errs, fmt.Errorf("actions: reconcile %s: %w", ref, err))
			continue
		}
		client, unlock, err := s.lockQueue(ctx, q)
		if err != nil {
			errs = append(errs, fmt.Errorf("actions: reconcile %s: %w", q.Name, err))
			continue
		}
		if err := s.reconcileQueue(ctx, client, q); err != nil {
			errs = append(errs, fmt.Errorf("actions: reconcile %s: %w", q.Name, err))
		}
		unlock()
	}
	return errors.Join(errs...)
}

// pending returns the intents without an outcome of the queue with that ARN ("" for all), but
// those of actions under way in this process.
func (s *Service) pending(ctx context.Context, queueARN string) ([]store.AuditEntry, error) {
	all, err := s.store.PendingIntents(ctx)
	if err != nil {
		return nil, fmt.Errorf("actions: pending intents: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.DeleteFunc(all, func(e store.AuditEntry) bool {
		return s.inflight[e.ID] || e.QueueARN == "" || queueARN != "" && e.QueueARN != queueARN
	}), nil
}

// reconcileQueue settles q's intents that have no outcome, oldest first, from what
// ListMessageMoveTasks shows now. The caller holds q's lock, so no action of this process can
// start a task meanwhile that an old intent would be taken to have started.
func (s *Service) reconcileQueue(ctx context.Context, client SQSAPI, q store.Queue) error {
	intents, err := s.pending(ctx, q.ARN)
	if err != nil || len(intents) == 0 {
		return err
	}
	live, err := s.liveTasks(ctx, client, q)
	if err != nil {
		return err
	}
	slices.SortFunc(live, func(a, b store.MoveTask) int { return a.StartedAt.Compare(b.StartedAt) })
	claimed := make(map[int64]bool) // tasks given to an intent in this pass
	for _, intent := range intents {
		outcome := store.AuditEntry{
			At: s.now(), Actor: intent.Actor, ActorKind: intent.ActorKind, TokenID: intent.TokenID, Credential: intent.Credential,
			Role: intent.Role, Action: intent.Action,
			QueueName: intent.QueueName, QueueARN: intent.QueueARN, Params: intent.Params, RemoteAddr: intent.RemoteAddr,
			IntentID: intent.ID,
		}
		const why = "settled from ListMessageMoveTasks, as its outcome was never recorded (toolq stopped, or its database refused the write): "
		var t store.MoveTask
		var found bool
		switch intent.Action {
		case ActionStartRedrive, ActionStartDiscard, ActionStartRestore:
			if intent.Action != ActionStartRedrive || selective(intent) {
				t, found, err = s.jobStartedAfter(ctx, q, intent, claimed)
			} else {
				t, found, err = s.startedAfter(ctx, intent, live, claimed)
			}
			if err != nil {
				return err
			}
			if found {
				claimed[t.ID] = true
				outcome.Result, outcome.MoveTaskID, outcome.Detail = store.AuditAccepted, t.ID,
					why+fmt.Sprintf("the task it started at %s is %s, %d of %d moved", t.StartedAt.Format(time.RFC3339), t.Status, t.Moved, t.ToMove)
			} else {
				outcome.Result, outcome.Code, outcome.Kind = store.AuditFailed, "interrupted", Upstream.String()
				outcome.Detail = why + "no task was started after it, so nothing moved; start the redrive again (a new press, or a new idempotency key) to move the messages"
			}
		case ActionCancelRedrive:
			t, found = runningAt(intent.At, live)
			switch {
			case found && (t.Status == store.MoveTaskCancelling || t.Status == store.MoveTaskCancelled):
				outcome.Result, outcome.MoveTaskID = store.AuditAccepted, t.ID
				outcome.Detail = why + fmt.Sprintf("the task started at %s is %s", t.StartedAt.Format(time.RFC3339), t.Status)
			case found:
				outcome.Result, outcome.Code, outcome.Kind, outcome.MoveTaskID = store.AuditFailed, "interrupted", Upstream.String(), t.ID
				outcome.Detail = why + fmt.Sprintf("the task started at %s is %s: it was not cancelled", t.StartedAt.Format(time.RFC3339), t.Status)
			default:
				outcome.Result, outcome.Code, outcome.Kind = store.AuditFailed, "interrupted", Upstream.String()
				outcome.Detail = why + "no task was running then, so nothing was cancelled"
			}
		default:
			outcome.Result, outcome.Code, outcome.Kind = store.AuditFailed, "interrupted", Upstream.String()
			outcome.Detail = why + "toolq does not know this action"
		}
		actx, cancel := auditContext(ctx)
		_, err := s.store.AppendAudit(actx, outcome)
		cancel()
		if err != nil {
			return fmt.Errorf("actions: settle audit entry %d: %w", intent.ID, err)
		}
		s.log.Warn("action settled", "action", intent.Action, "queue", q.Name, "intent", intent.ID, "result", outcome.Result, "detail", outcome.Detail)
		s.outcomes.WithLabelValues(intent.Action, outcome.Result).Inc()
		s.pub.Publish(events.Event{Kind: events.AuditAppended, QueueID: q.ID, At: s.now()})
	}
	return nil
}

// startedAfter finds the task a start's intent started: the first listed task that began no
// earlier than the intent (allowing for clock skew) and that no other start's outcome names.
func (s *Service) startedAfter(ctx context.Context, intent store.AuditEntry, live []store.MoveTask, claimed map[int64]bool) (store.MoveTask, bool, error) {
	for _, t := range live {
		if t.StartedAt.Before(intent.At.Add(-clockSkew)) || claimed[t.ID] {
			continue
		}
		_, err := s.store.AcceptedFor(ctx, ActionStartRedrive, t.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return t, true, nil
		case err != nil:
			return store.MoveTask{}, false, fmt.Errorf("actions: outcome of move task %d: %w", t.ID, err)
		}
	}
	return store.MoveTask{}, false, nil
}

// runningAt returns the newest listed task that had started by at: the one a cancel asked then
// was about.
func runningAt(at time.Time, live []store.MoveTask) (store.MoveTask, bool) {
	for i := len(live) - 1; i >= 0; i-- {
		if !live[i].StartedAt.After(at) {
			return live[i], true
		}
	}
	return store.MoveTask{}, false
}
