package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// listLag is how long a task we just started may be missing from ListMessageMoveTasks (which is
// eventually consistent) while the store's row of it still counts as running.
const listLag = 2 * time.Minute

// StartRedrive validates and starts a move task, and audits the attempt whatever its outcome.
// Refusals are *Error with the Kind that fits; the task is stored before it is returned, so a
// second click sees it. Once the checks that need no AWS call have passed, the attempt's intent
// is written to the audit log before AWS is called (refused, Unavailable, when it cannot be), and
// its outcome after. A start with the IdempotencyKey of an earlier one by the same actor gets that
// attempt's answer: its task, as the store has it now, or its refusal, marked as a repeat.
func (s *Service) StartRedrive(ctx context.Context, actor Actor, req StartRedriveRequest) (StartedRedrive, error) {
	a := attempt{actor: actor, action: startAction(req), ref: req.Queue, params: startParams(req)}
	task, err := s.startRedrive(ctx, actor, req, &a)
	if !a.recorded {
		a.task = task
		s.record(ctx, a, err)
	}
	return StartedRedrive{MoveTask: task, Repeat: a.first != nil}, err
}

// startAction is the audit action of a start: a redrive's, or a discard's.
func startAction(req StartRedriveRequest) string {
	if req.Discard {
		return ActionStartDiscard
	}
	return ActionStartRedrive
}

// startParams are a start's parameters as the audit log keeps them (and an idempotency key's
// repeat must match).
func startParams(req StartRedriveRequest) map[string]any {
	params := map[string]any{}
	if req.Destination != "" {
		params["destination"] = safetext.Line(req.Destination, 256)
	}
	if req.Selection != nil {
		params["selection"] = req.Selection
	}
	if req.Discard {
		params["discard"] = true
	}
	if raw := strings.TrimSpace(req.MaxPerSecond); raw != "" {
		if n, err := strconv.Atoi(raw); err == nil {
			params["maxMessagesPerSecond"] = n
		} else {
			params["maxMessagesPerSecond"] = safetext.Line(raw, 32)
		}
	}
	return params
}

func (s *Service) startRedrive(ctx context.Context, actor Actor, req StartRedriveRequest, a *attempt) (task store.MoveTask, err error) {
	if err := s.checkActor(actor); err != nil {
		return store.MoveTask{}, err
	}
	rate, err := parseRate(req.MaxPerSecond)
	if err != nil {
		return store.MoveTask{}, err
	}
	if a.key, err = parseKey(req.IdempotencyKey); err != nil {
		return store.MoveTask{}, err
	}
	var confirmed confirmation
	if req.Confirmation != "" {
		if confirmed, err = s.checkConfirmation(actor, req.Confirmation); err != nil {
			return store.MoveTask{}, err
		}
		a.key, a.confirmed = confirmed.idempotencyKey(), true
	}
	q, err := s.resolveDLQ(ctx, req.Queue)
	a.queue = q
	if err != nil {
		return store.MoveTask{}, err
	}
	if a.confirmed {
		if err := confirmed.matches(q, req.Destination, rate, req.Selection, req.Discard); err != nil {
			return store.MoveTask{}, err
		}
	}
	if err := checkRedriveAllowed(q); err != nil {
		return store.MoveTask{}, err
	}
	if err := checkDiscard(req); err != nil {
		return store.MoveTask{}, err
	}
	if req.Selection != nil {
		if _, err := s.checkSelection(ctx, q, *req.Selection); err != nil {
			return store.MoveTask{}, err
		}
	}
	client, unlock, err := s.lockQueue(ctx, q)
	if err != nil {
		return store.MoveTask{}, err
	}
	defer unlock()
	defer s.recordLocked(ctx, a, &task, &err)
	if a.key != "" {
		if task, err, repeat := s.firstAnswer(ctx, client, q, a); repeat {
			return task, err
		}
	}
	if err := s.writeIntent(ctx, a); err != nil {
		return store.MoveTask{}, err
	}
	tasks, err := s.readTasks(ctx, client, q)
	if err != nil {
		return store.MoveTask{}, err
	}
	if tasks.isRunning {
		return store.MoveTask{}, errTaskRunning(q, tasks.running)
	}
	if err := s.runningJob(ctx, q); err != nil {
		return store.MoveTask{}, err
	}
	destARN, err := s.destination(ctx, q, req.Destination)
	if err != nil {
		return store.MoveTask{}, err
	}
	if req.Selection != nil {
		return s.startSelection(ctx, q, req, destARN, rate, actor)
	}
	return s.startMoveTask(ctx, client, q, a, tasks, destARN, rate)
}

// startMoveTask calls StartMessageMoveTask for a checked start, the caller holding q's lock with
// its intent written, and stores the task it started.
func (s *Service) startMoveTask(ctx context.Context, client SQSAPI, q store.Queue, a *attempt, tasks queueTasks, destARN string, rate int) (store.MoveTask, error) {
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(q.ARN)}
	if destARN != "" {
		in.DestinationArn = aws.String(destARN)
	}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(int32(rate))
	}
	// SQS lists a task's handle only while it runs, and a small DLQ can be drained before the
	// list below: then ours is the task that was not listed before the start (starts of this
	// queue are serialised, and no task was running).
	isNew := func(t store.MoveTask) bool {
		return !slices.ContainsFunc(tasks.live, func(b store.MoveTask) bool { return b.StartedAt.Equal(t.StartedAt) })
	}
	var handle string
	landed, err := s.act(ctx, client, q, a, "start the move task", func(ctx context.Context, noRetry func(*sqs.Options)) error {
		out, err := client.StartMessageMoveTask(ctx, in, noRetry)
		if err == nil {
			handle = aws.ToString(out.TaskHandle)
		}
		return err
	}, isNew)
	if err != nil {
		return store.MoveTask{}, err
	}
	if landed != nil {
		a.note = fmt.Sprintf("StartMessageMoveTask's answer did not reach toolq, but ListMessageMoveTasks shows the task it started at %s (%s, %d of %d moved)",
			landed.StartedAt.Format(time.RFC3339), landed.Status, landed.Moved, landed.ToMove)
		return s.remember(ctx, s.storeTask(ctx, client, q, func(t store.MoveTask) bool { return t.StartedAt.Equal(landed.StartedAt) }, *landed)), nil
	}
	// The store keeps times to the millisecond, as SQS gives them: so must the fallback, or the
	// task read back from the store would not match it.
	now := s.now().UTC().Truncate(time.Millisecond)
	started := store.MoveTask{
		QueueID: q.ID, TaskHandle: handle, Status: store.MoveTaskRunning, SourceARN: q.ARN,
		DestinationARN: destARN, MaxPerSecond: rate, StartedAt: now, UpdatedAt: now,
	}
	ours := func(t store.MoveTask) bool { return t.TaskHandle == handle || isNew(t) }
	return s.remember(ctx, s.storeTask(ctx, client, q, ours, started)), nil
}

// remember keeps what a redrive that just started moves, as the DLQ's newest sample before it
// holds it (store.RememberRedrive), so that what comes back can be told. The move has happened
// by now: a failure is logged, not returned (the collector remembers the task when it next
// lists it).
func (s *Service) remember(ctx context.Context, t store.MoveTask) store.MoveTask {
	if t.ID == 0 {
		return t
	}
	if _, err := s.store.RememberRedrive(context.WithoutCancel(ctx), t.ID, s.now()); err != nil {
		s.log.Error("actions: remember what the redrive moves", "task", t.ID, "err", err)
	}
	return t
}

// parseRate reads a move task's rate as the caller sent it: 0 (the store's "SQS chooses") for
// an empty one, else a whole number from 1 to MaxRate.
func parseRate(raw string) (int, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxRate {
		return 0, refuse(Invalid, "invalid_rate",
			"the rate must be a whole number of messages per second from 1 to %d, or empty to let SQS choose", MaxRate)
	}
	return n, nil
}

// parseKey checks an idempotency key: empty, or 1 to MaxIdempotencyKey printable ASCII
// characters (a UUID, say).
func parseKey(key string) (string, error) {
	if len(key) > MaxIdempotencyKey || strings.ContainsFunc(key, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return "", refuse(Invalid, "invalid_idempotency_key",
			"the idempotency key must be 1 to %d printable ASCII characters (a UUID, say)", MaxIdempotencyKey)
	}
	return key, nil
}

// firstAnswer answers a start whose idempotency key an earlier start with the same credential
// (the same token, session or proxy user; not merely the same name) carried:
// with that start's task or refusal (repeat true), after settling it from ListMessageMoveTasks if
// its process stopped before its outcome. A key first used for another request is refused. It
// reports repeat false when the key is new.
func (s *Service) firstAnswer(ctx context.Context, client SQSAPI, q store.Queue, a *attempt) (task store.MoveTask, err error, repeat bool) {
	intent, err := s.store.IntentByKey(ctx, a.actor.credential(), a.key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.MoveTask{}, nil, false
	case err != nil:
		return store.MoveTask{}, fmt.Errorf("actions: idempotency key: %w", err), true
	case intent.Action != a.action || intent.QueueARN != q.ARN || intent.Params != a.paramsJSON():
		return store.MoveTask{}, refuse(Unprocessable, "idempotency_key_reused",
			"this idempotency key was first used for another request (audit entry %d); use a new key for a new request", intent.ID), true
	}
	outcome, err := s.store.OutcomeOf(ctx, intent.ID)
	if errors.Is(err, store.ErrNotFound) {
		// The first attempt's process stopped before it recorded what happened (the lock rules
		// out one under way here): find out now.
		if err := s.reconcileQueue(ctx, client, q); err != nil {
			return store.MoveTask{}, err, true
		}
		outcome, err = s.store.OutcomeOf(ctx, intent.ID)
	}
	if err != nil {
		return store.MoveTask{}, fmt.Errorf("actions: outcome of audit entry %d: %w", intent.ID, err), true
	}
	if a.confirmed {
		return store.MoveTask{}, s.usedConfirmation(ctx, intent, outcome), true
	}
	a.first = &[2]store.AuditEntry{intent, outcome}
	if outcome.Result != store.AuditAccepted {
		return store.MoveTask{}, &Error{Kind: kindNamed(outcome.Kind), Code: outcome.Code,
			Message: strings.TrimPrefix(outcome.Detail, outcome.Code+": ")}, true
	}
	t, err := s.store.GetMoveTask(ctx, outcome.MoveTaskID)
	if err != nil {
		return store.MoveTask{}, fmt.Errorf("actions: move task of audit entry %d: %w", outcome.ID, err), true
	}
	return t, nil, true
}

// CancelRedrive cancels the running move task of a dead-letter queue, and audits the attempt
// (its intent before AWS is called, its outcome after). What has moved stays moved.
func (s *Service) CancelRedrive(ctx context.Context, actor Actor, queue string) (store.MoveTask, error) {
	a := attempt{actor: actor, action: ActionCancelRedrive, ref: queue, params: map[string]any{}}
	task, err := s.cancelRedrive(ctx, actor, queue, &a)
	if !a.recorded {
		a.task = task
		s.record(ctx, a, err)
	}
	return task, err
}

func (s *Service) cancelRedrive(ctx context.Context, actor Actor, queue string, a *attempt) (task store.MoveTask, err error) {
	if err := s.checkActor(actor); err != nil {
		return store.MoveTask{}, err
	}
	q, err := s.resolveDLQ(ctx, queue)
	a.queue = q
	if err != nil {
		return store.MoveTask{}, err
	}
	client, unlock, err := s.lockQueue(ctx, q)
	if err != nil {
		return store.MoveTask{}, err
	}
	defer unlock()
	defer s.recordLocked(ctx, a, &task, &err)
	if err := s.writeIntent(ctx, a); err != nil {
		return store.MoveTask{}, err
	}
	if j, err := s.store.RunningSelectionJob(ctx, q.ID); err == nil {
		return s.cancelSelection(ctx, q, j)
	} else if !errors.Is(err, store.ErrNotFound) {
		return store.MoveTask{}, fmt.Errorf("actions: selection jobs of %s: %w", q.Name, err)
	}
	tasks, err := s.readTasks(ctx, client, q)
	if err != nil {
		return store.MoveTask{}, err
	}
	t := tasks.running
	if !tasks.isRunning || t.TaskHandle == "" {
		return store.MoveTask{}, refuse(Conflict, "no_task_running", "no redrive of %s is running", q.Name)
	}
	if t.Status == store.MoveTaskCancelling {
		return store.MoveTask{}, refuse(Conflict, "no_task_running", "the redrive of %s is already being cancelled", q.Name)
	}
	same := func(x store.MoveTask) bool { return x.StartedAt.Equal(t.StartedAt) }
	var moved int64
	landed, err := s.act(ctx, client, q, a, "cancel the move task", func(ctx context.Context, noRetry func(*sqs.Options)) error {
		out, err := client.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(t.TaskHandle)}, noRetry)
		var rnf *types.ResourceNotFoundException
		if errors.As(err, &rnf) {
			return refuse(Conflict, "no_task_running", "the redrive of %s ended before it could be cancelled", q.Name)
		}
		if err == nil {
			moved = out.ApproximateNumberOfMessagesMoved
		}
		return err
	}, func(x store.MoveTask) bool {
		return same(x) && (x.Status == store.MoveTaskCancelling || x.Status == store.MoveTaskCancelled)
	})
	if err != nil {
		return store.MoveTask{}, err
	}
	if landed != nil {
		a.note = fmt.Sprintf("CancelMessageMoveTask's answer did not reach toolq, but ListMessageMoveTasks shows the task %s", landed.Status)
		return asCancelled(s.storeTask(ctx, client, q, same, *landed)), nil
	}
	cancelling := t
	cancelling.Status = store.MoveTaskCancelling
	cancelling.Moved = moved
	cancelling.UpdatedAt = s.now().UTC()
	return asCancelled(s.storeTask(ctx, client, q, same, cancelling)), nil
}

// asCancelled is the answer to a cancel that landed: the task as CancelMessageMoveTask leaves
// it, CANCELLING (SQS answers while the task winds down, and what moved stays moved), even when
// the ListMessageMoveTasks read after it shows the task CANCELLED already, as a task stopped
// within the same instant does. The store keeps what the list showed; the redrive list follows
// the task to its end. So a cancel has one answer, whatever the timing.
func asCancelled(t store.MoveTask) store.MoveTask {
	if t.Status == store.MoveTaskCancelled {
		t.Status = store.MoveTaskCancelling
	}
	return t
}

// startAttempts is how many times an action calls a move-task operation that fails with an
// error worth trying again (throttling, 5xx, a broken connection), each after
// ListMessageMoveTasks has shown that the call before did not land.
const startAttempts = 3

// act calls a move-task operation (call, which must pass noRetry to the SDK) and handles its
// failure. The SDK's own retries are off for it: a start whose answer was lost after SQS began
// the task, retried blindly, would start a second task once the first had finished (or fail
// against the running one, which would then be audited as failed). Instead, after a failure act
// lists the queue's move tasks: a task for which landed is true means the call did land, and act
// returns it. Otherwise it tries again while the error is one worth trying again. When even the
// list fails, nobody can tell whether the call landed: the attempt is left unsettled (its intent
// pending, settled from ListMessageMoveTasks before the queue's next action or at start-up).
func (s *Service) act(ctx context.Context, client SQSAPI, q store.Queue, a *attempt, what string,
	call func(ctx context.Context, noRetry func(*sqs.Options)) error, landed func(store.MoveTask) bool) (*store.MoveTask, error) {
	noRetry := func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} }
	wait := s.retryWait
	for n := 1; ; n++ {
		err := call(ctx, noRetry)
		var refusal *Error
		if err == nil || errors.As(err, &refusal) {
			return nil, err
		}
		live, lerr := s.liveTasks(ctx, client, q)
		if lerr != nil {
			a.unsettled = true
			s.log.Warn("actions: a move-task call failed and the list to check it failed too", "what", what, "queue", q.Name, "err", err, "list", lerr)
			return nil, refuse(Upstream, "aws_error",
				"AWS did not answer whether it could %s on %s; toolq asks ListMessageMoveTasks before any other action on this queue, and the redrive panel shows the task if there is one", what, q.Name)
		}
		if i := slices.IndexFunc(live, landed); i >= 0 {
			s.log.Warn("actions: a move-task call's answer was lost, but it landed", "what", what, "queue", q.Name, "err", err)
			return &live[i], nil
		}
		if n == startAttempts || !worthRetrying(err) || ctx.Err() != nil {
			return nil, s.awsError(ctx, what, err)
		}
		select {
		case <-ctx.Done():
			return nil, s.awsError(ctx, what, err)
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// worthRetrying reports whether the SDK's standard retryer would have tried err again.
func worthRetrying(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary ||
		retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

// queueTasks is what an action on a dead-letter queue decides from, read while it holds the
// queue's lock so that no other start or cancel can change it meanwhile.
type queueTasks struct {
	live      []store.MoveTask // the tasks SQS lists now, already stored
	running   store.MoveTask   // the running task, as runningTask finds it, when isRunning
	isRunning bool
}

// lockQueue returns the client of q's account and region and takes q's action lock. Unless it fails, the
// caller must call unlock when its action is done.
func (s *Service) lockQueue(ctx context.Context, q store.Queue) (client SQSAPI, unlock func(), err error) {
	client, err = s.client(q.Scope())
	if err != nil {
		return nil, nil, err
	}
	unlock, err = s.lock(ctx, q.ARN)
	if err != nil {
		return nil, nil, fmt.Errorf("actions: wait for %s: %w", q.Name, err)
	}
	return client, unlock, nil
}

// readTasks settles the queue's earlier intents that have no outcome, then reads its move tasks
// from SQS. The caller holds q's lock.
func (s *Service) readTasks(ctx context.Context, client SQSAPI, q store.Queue) (tasks queueTasks, err error) {
	if err := s.reconcileQueue(ctx, client, q); err != nil {
		return queueTasks{}, err
	}
	tasks.live, err = s.liveTasks(ctx, client, q)
	if err == nil {
		tasks.running, tasks.isRunning, err = s.runningTask(ctx, q, tasks.live)
	}
	return tasks, err
}

// liveTasks lists the queue's recent move tasks in SQS and refreshes the store with them, so the
// checks below see what SQS sees rather than what the collector last polled.
func (s *Service) liveTasks(ctx context.Context, client SQSAPI, q store.Queue) ([]store.MoveTask, error) {
	out, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(q.ARN), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, s.awsError(ctx, "list the move tasks", err)
	}
	now := s.now().UTC()
	tasks := make([]store.MoveTask, 0, len(out.Results))
	for _, e := range out.Results {
		t := awscalls.MoveTask(q.ID, q.ARN, e, now)
		id, err := s.store.UpsertMoveTask(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("actions: store move task of %s: %w", q.Name, err)
		}
		t.ID = id
		tasks = append(tasks, t)
	}
	return tasks, nil
}

// runningTask returns the queue's running task: one SQS lists as running, or one the store holds
// as running that SQS does not list yet because it started moments ago.
func (s *Service) runningTask(ctx context.Context, q store.Queue, live []store.MoveTask) (store.MoveTask, bool, error) {
	for _, t := range live {
		if t.Running() {
			return t, true, nil
		}
	}
	stored, err := s.store.ListMoveTasks(ctx, q.ID, 10)
	if err != nil {
		return store.MoveTask{}, false, fmt.Errorf("actions: move tasks of %s: %w", q.Name, err)
	}
	for _, t := range stored {
		listed := slices.ContainsFunc(live, func(l store.MoveTask) bool { return l.StartedAt.Equal(t.StartedAt) })
		if t.Running() && !listed && s.now().Sub(t.StartedAt) < listLag {
			return t, true, nil
		}
	}
	return store.MoveTask{}, false, nil
}

// storeTask stores what SQS now reports of the task matching match (fallback when SQS does not
// list it yet), tells the pages, and returns it. The action has happened by now: a failure here
// is logged, not returned.
func (s *Service) storeTask(ctx context.Context, client SQSAPI, q store.Queue, match func(store.MoveTask) bool, fallback store.MoveTask) store.MoveTask {
	ctx = context.WithoutCancel(ctx)
	task := fallback
	if live, err := s.liveTasks(ctx, client, q); err != nil {
		s.log.Warn("actions: list move tasks after the action", "queue", q.Name, "err", err)
	} else if i := slices.IndexFunc(live, match); i >= 0 {
		task = live[i]
		if task.TaskHandle == "" {
			task.TaskHandle = fallback.TaskHandle
		}
	}
	id, err := s.store.UpsertMoveTask(ctx, task)
	if err != nil {
		s.log.Error("actions: store move task", "queue", q.Name, "err", err)
	}
	task.ID = id
	s.pub.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: q.ID, At: s.now()})
	return task
}

// destination returns the DestinationArn to send: empty for "each message's original source".
// StartMessageMoveTask asks of a custom destination only that it exists, differs from the
// dead-letter queue and is of the same type (FIFO to FIFO, standard to standard); these are
// checked here so that each gets its own error rather than AWS's InvalidParameterValue.
func (s *Service) destination(ctx context.Context, dlq store.Queue, ref string) (string, error) {
	if ref == "" {
		return "", nil
	}
	if !plausibleRef(ref) {
		return "", refuse(Unprocessable, "destination_not_found", "the destination must be a queue name or ARN")
	}
	if arn.IsARN(ref) {
		if err := sameAccount(dlq, ref); err != nil {
			return "", err
		}
	}
	destARN, fifo, err := s.lookupDestination(ctx, dlq, ref)
	if err != nil {
		return "", err
	}
	if err := sameAccount(dlq, destARN); err != nil {
		return "", err
	}
	if destARN == dlq.ARN {
		return "", refuse(Unprocessable, "invalid_destination", "the destination must differ from the dead-letter queue")
	}
	if fifo != dlq.FIFO {
		return "", refuse(Unprocessable, "destination_type_mismatch",
			"%s is a %s queue and %s a %s queue; a redrive needs two queues of the same type",
			dlq.Name, queueType(dlq.FIFO), arn.QueueName(destARN), queueType(fifo))
	}
	return destARN, nil
}

// sameAccount refuses a destination in another account than the dead-letter queue's: a move
// task moves messages within one account, and toolq acts on a queue with its own account's
// role only.
func sameAccount(dlq store.Queue, destARN string) error {
	a, err := arn.ParseQueue(destARN)
	if err != nil || dlq.AccountID == "" || a.Account == dlq.AccountID {
		return nil // not an ARN: lookupDestination says so
	}
	return refuse(Unprocessable, "destination_other_account",
		"the destination %s is in account %s and the dead-letter queue in account %s; a redrive moves messages within one account",
		safetext.Line(a.Name, 80), a.Account, dlq.AccountID)
}

// lookupDestination finds a destination's ARN and type: among the watched queues first, then in
// SQS (a queue toolq does not watch is still a valid destination), with the client of the
// dead-letter queue's account.
func (s *Service) lookupDestination(ctx context.Context, dlq store.Queue, ref string) (string, bool, error) {
	q, err := s.store.ResolveQueue(ctx, ref)
	switch {
	case err == nil && !q.Gone():
		return q.ARN, q.FIFO, nil
	case err == nil:
		return "", false, refuse(Unprocessable, "destination_not_found", "the destination %s no longer exists", q.Name)
	case errors.Is(err, store.ErrAmbiguous):
		return "", false, refuse(Unprocessable, "destination_ambiguous", "several queues have that name; give the destination's ARN")
	case !errors.Is(err, store.ErrNotFound):
		return "", false, fmt.Errorf("actions: resolve destination: %w", err)
	}
	region, account, name := dlq.Region, "", ref
	if arn.IsARN(ref) {
		a, err := arn.ParseQueue(ref)
		if err != nil {
			return "", false, refuse(Unprocessable, "destination_not_found", "the destination is not an SQS queue ARN")
		}
		region, account, name = a.Region, a.Account, a.Name
	}
	client, ok := s.clients[store.Scope(dlq.Account, region)]
	if !ok {
		// Without a client of that region toolq cannot check that the queue exists and is of
		// the right type: the caller asked for something toolq cannot do, AWS did not fail.
		return "", false, refuse(Unprocessable, "invalid_destination",
			"the destination is in region %s, which toolq does not watch; choose a queue in a region it watches", safetext.Line(region, 32))
	}
	in := &sqs.GetQueueUrlInput{QueueName: aws.String(name)}
	if account != "" {
		in.QueueOwnerAWSAccountId = aws.String(account)
	}
	u, err := client.GetQueueUrl(ctx, in)
	if err != nil {
		if awscalls.QueueMissing(err) {
			return "", false, refuse(Unprocessable, "destination_not_found", "no queue called %s exists%s", safetext.Line(name, 80), s.destinationHint(ctx, dlq, region, name))
		}
		return "", false, s.awsError(ctx, "look up the destination", err)
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       u.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn, types.QueueAttributeNameFifoQueue},
	})
	if err != nil {
		if awscalls.QueueMissing(err) {
			return "", false, refuse(Unprocessable, "destination_not_found", "no queue called %s exists", safetext.Line(name, 80))
		}
		return "", false, s.awsError(ctx, "read the destination's attributes", err)
	}
	arn := attrs.Attributes[string(types.QueueAttributeNameQueueArn)]
	if arn == "" {
		return "", false, refuse(Upstream, "aws_error", "AWS did not give the destination's ARN")
	}
	return arn, attrs.Attributes[string(types.QueueAttributeNameFifoQueue)] == "true", nil
}

// destinationHint names the watched queues a redrive of dlq could send to that are closest to
// name: those of its account and of region, of its type, but itself.
func (s *Service) destinationHint(ctx context.Context, dlq store.Queue, region, name string) string {
	return s.queueHint(ctx, name, store.QueueFilter{Region: region, Account: dlq.Account}, func(q store.Queue) bool {
		return q.FIFO == dlq.FIFO && q.ARN != dlq.ARN && q.AccountID == dlq.AccountID
	})
}

// redriveAllowPolicy is a dead-letter queue's RedriveAllowPolicy attribute.
type redriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"`
	SourceQueueArns   []string `json:"sourceQueueArns"`
}

// checkRedriveAllowed refuses a redrive out of a queue whose RedriveAllowPolicy lets none of its
// source queues use it as their dead-letter queue.
//
// The policy governs which source queues may name this queue in their RedrivePolicy
// (redrivePermission allowAll, denyAll, or byQueue with up to 10 sourceQueueArns); it says
// nothing about where a move task sends messages, so a custom destination is never checked
// against it. What it does decide is whether the queue is a dead-letter queue at all, and
// StartMessageMoveTask only moves messages out of a queue configured as the dead-letter queue of
// other SQS queues. A queue that sources still name after its policy was tightened to denyAll
// (or to a byQueue list without them) has been taken out of service as a DLQ on purpose: toolq
// refuses, and the message says which policy to change, rather than guess what SQS will do.
func checkRedriveAllowed(dlq store.Queue) error {
	raw := dlq.Attributes["RedriveAllowPolicy"]
	if raw == "" {
		return nil
	}
	var p redriveAllowPolicy
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		return refuse(Unprocessable, "redrive_not_allowed", "the RedriveAllowPolicy of %s cannot be read", dlq.Name)
	}
	switch p.RedrivePermission {
	case "", "allowAll":
		return nil
	case "denyAll":
		return refuse(Unprocessable, "redrive_not_allowed",
			"the RedriveAllowPolicy of %s is denyAll: no queue may use it as its dead-letter queue, so it is not one to redrive; allow its source queues first", dlq.Name)
	case "byQueue":
		for _, src := range dlq.SourceARNs {
			if slices.Contains(p.SourceQueueArns, src) {
				return nil
			}
		}
		return refuse(Unprocessable, "redrive_not_allowed",
			"the RedriveAllowPolicy of %s lists none of the queues that send it their failures (%s); add them to sourceQueueArns first",
			dlq.Name, safetext.Line(strings.Join(namesOf(dlq.SourceARNs), ", "), 200))
	}
	return refuse(Unprocessable, "redrive_not_allowed", "the RedriveAllowPolicy of %s has an unknown permission", dlq.Name)
}

// namesOf returns the queue names at the end of ARNs.
func namesOf(arns []string) []string {
	names := make([]string, len(arns))
	for i, a := range arns {
		names[i] = arn.QueueName(a)
	}
	return names
}

// awsCode matches error codes safe to show: AWS's own are short identifiers.
var awsCode = regexp.MustCompile(`^[A-Za-z0-9.]{1,64}$`)

// awsError turns an AWS failure into a safe *Error: what failed, AWS's error code and the
// endpoint's HTTP status, never AWS's message (which can name accounts, keys and policies). The
// full error is logged.
func (s *Service) awsError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("actions: %s: %w", what, ctx.Err())
	}
	s.log.Warn("actions: AWS call failed", "what", what, "err", err)
	f := awscalls.Describe(err)
	var ae smithy.APIError
	isAPI := errors.As(err, &ae) && awsCode.MatchString(ae.ErrorCode())
	switch {
	case f.HTTPStatus >= 500 && isAPI:
		return refuse(Upstream, "aws_error", "AWS failed to %s (%s, HTTP %d); try again", what, ae.ErrorCode(), f.HTTPStatus)
	case f.HTTPStatus != 0 && !isAPI && errors.As(err, &ae):
		return refuse(Upstream, "aws_error", "AWS refused to %s (HTTP %d)", what, f.HTTPStatus)
	case f.HTTPStatus != 0 && !isAPI:
		return refuse(Upstream, "aws_error", "the endpoint answered HTTP %d to %s, with no AWS error", f.HTTPStatus, what)
	case isAPI:
		return refuse(Upstream, "aws_error", "AWS refused to %s (%s)", what, ae.ErrorCode())
	}
	return refuse(Upstream, "aws_error", "AWS could not be reached to %s", what)
}

func queueType(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}
