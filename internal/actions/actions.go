// Package actions is the only code in toolq that changes anything in AWS: it starts and cancels
// message move tasks (StartMessageMoveTask, CancelMessageMoveTask) that redrive a dead-letter
// queue. Every attempt is validated before AWS is called, serialised per queue so that a double
// click cannot start two tasks, and written to the audit log whatever its outcome: an attempt
// that gets as far as AWS writes its intent first (and is refused when it cannot), and its
// outcome after; an intent left without an outcome by a crash is settled from
// ListMessageMoveTasks (Reconcile). A start may carry an idempotency key: a repeat with the same
// key is answered as the first attempt was.
//
// A start may instead name a Selection: a selective redrive, run by the engine (package engine),
// which sends the chosen messages back with their attributes, trace header and FIFO group and
// deletes them only after the send, each step journaled. The actions validate and audit it as
// they do a move task, and never let the two kinds run on one queue at once. Moved messages
// leave the dead-letter queue for good, which is why the pages confirm before they call
// StartRedrive.
package actions

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// Audit action names.
const (
	ActionStartRedrive  = "redrive.start"
	ActionCancelRedrive = "redrive.cancel"
	// ActionStartDiscard is a discard's start: the selection's messages to the archive.
	ActionStartDiscard = "discard.start"
	// ActionStartRestore is a restore's start: archived messages to a queue again.
	ActionStartRestore = "archive.restore"
)

// MaxRate is the highest MaxNumberOfMessagesPerSecond SQS accepts for a move task.
const MaxRate = 500

// Actor is who asks for an action, as authentication established it.
type Actor struct {
	Name       string // token name or proxy user; "anonymous" with --auth none
	Kind       auth.Kind
	Role       auth.Role
	RemoteAddr string
	// TokenID is the store id of the actor's API token (auth.Identity.TokenID), 0 for other
	// kinds: the audit log keeps it beside the name, which a later token may take again.
	TokenID int64
	// Credential is auth.Identity.Credential: the token, browser session or proxy user the
	// request came with. Confirmations and idempotency keys are bound to it, never to the name.
	Credential string
}

// credential is what binds an actor's confirmations and idempotency keys. The server always
// sets Credential; an Actor made without one (a caller inside the process) is bound to its kind
// and name, which no request can share with a credential (those name a token id, a session or
// "proxy:" and "none:" as auth makes them).
func (a Actor) credential() string {
	if a.Credential != "" {
		return a.Credential
	}
	return "actor:" + string(a.Kind) + ":" + a.Name
}

// StartRedriveRequest asks for a move task out of a dead-letter queue.
type StartRedriveRequest struct {
	Queue       string // the DLQ's name or ARN
	Destination string // name or ARN; empty: each message's original source
	// MaxPerSecond is the rate as the caller sent it: the form's field, or the API's JSON
	// number as written. Empty lets SQS choose; anything else must be a whole number from 1 to
	// MaxRate. The action parses it after the role check, so that a bad rate is refused and
	// audited like every other refusal, whichever door it came through.
	MaxPerSecond string
	// IdempotencyKey names this start (the API's Idempotency-Key header, the form's hidden
	// field): a repeat by the same actor with the same key gets the first attempt's answer and
	// starts nothing. Empty: no key. At most MaxIdempotencyKey printable ASCII characters.
	IdempotencyKey string
	// Confirmation is a PreviewRedrive's token: the start must then be the one previewed, by the
	// same actor, before the token expires, and the token's first use only (a second is refused,
	// confirmation_used, saying what the first did). It stands for the idempotency key.
	// Empty: a start in one step.
	Confirmation string
	// Selection, when set, makes the start a selective redrive of the messages it names (a job
	// of the engine), instead of a move task of the whole queue.
	Selection *engine.Selection
	// Discard makes a start with a Selection a discard: the messages go to toolq's archive,
	// whole, and leave the dead-letter queue; no destination, no rate.
	Discard bool
}

// StartedRedrive is what a start answers: the move task, and whether the answer is a repeat of
// an earlier start with the same idempotency key (nothing was asked of AWS), which the caller
// tells its user.
type StartedRedrive struct {
	store.MoveTask
	Repeat bool
}

// MaxIdempotencyKey is the longest idempotency key a start may carry.
const MaxIdempotencyKey = 255

// Kind says what sort of refusal an Error is. The server answers each kind with one HTTP status.
type Kind int

// Kinds of refusal.
const (
	Forbidden     Kind = iota + 1 // the caller may not act: a viewer, or read-only mode
	Invalid                       // the request is malformed: a rate that is no whole number, a reference no queue can have
	NotFound                      // no watched queue has that name or ARN, or it is gone
	Conflict                      // the queue's state forbids it now: a task running, none running, a name several queues share
	Unprocessable                 // well formed but impossible: not a dead-letter queue, a destination of the wrong type
	Upstream                      // AWS failed or refused
	Unavailable                   // toolq cannot act safely now: its audit log cannot be written
)

// kindNames are the Kinds as the audit log stores them, so that a repeat is refused as the
// first attempt was.
var kindNames = map[Kind]string{
	Forbidden: "forbidden", Invalid: "invalid", NotFound: "not_found", Conflict: "conflict",
	Unprocessable: "unprocessable", Upstream: "upstream", Unavailable: "unavailable",
}

func (k Kind) String() string { return kindNames[k] }

// kindNamed is the Kind stored as name; an unknown name reads as Upstream.
func kindNamed(name string) Kind {
	for k, n := range kindNames {
		if n == name {
			return k
		}
	}
	return Upstream
}

// Error is a refused action: Code is stable for API clients, Message is safe to show.
type Error struct {
	Kind    Kind
	Code    string // e.g. "read_only", "forbidden", "not_dead_letter_queue", "task_running", "no_task_running", "destination_not_found", "destination_type_mismatch", "redrive_not_allowed", "invalid_rate", "queue_not_found", "eventbridge_dead_letter_queue", "aws_error"
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

func refuse(kind Kind, code, format string, args ...any) *Error {
	return &Error{Kind: kind, Code: code, Message: fmt.Sprintf(format, args...)}
}

// SQSAPI is the part of *sqs.Client the actions use.
type SQSAPI interface {
	StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error)
	CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Store is the part of the store the actions use: they resolve the queue an action names once,
// with ResolveQueue (store.ErrNotFound, store.ErrAmbiguous), audit every attempt, and find the
// intents that have no outcome and the first attempt of an idempotency key.
type Store interface {
	ResolveQueue(ctx context.Context, ref string) (store.Queue, error)
	// ListQueues names the queues closest to a reference that names none, in its refusal.
	ListQueues(ctx context.Context, f store.QueueFilter) ([]store.Queue, error)
	AppendAudit(ctx context.Context, e store.AuditEntry) (int64, error)
	PendingIntents(ctx context.Context) ([]store.AuditEntry, error)
	IntentByKey(ctx context.Context, credential, key string) (store.AuditEntry, error)
	OutcomeOf(ctx context.Context, intentID int64) (store.AuditEntry, error)
	AcceptedFor(ctx context.Context, action string, moveTaskID int64) (store.AuditEntry, error)
	UpsertMoveTask(ctx context.Context, t store.MoveTask) (int64, error)
	GetMoveTask(ctx context.Context, id int64) (store.MoveTask, error)
	ListMoveTasks(ctx context.Context, queueID int64, limit int) ([]store.MoveTask, error)
	RememberRedrive(ctx context.Context, taskID int64, now time.Time) (bool, error)
	// The selective redrives: the newest sample they are previewed on, their jobs.
	LatestSample(ctx context.Context, queueID int64) (store.Sample, error)
	SampleMessages(ctx context.Context, sampleID int64, f store.MessageFilter) ([]store.SampledMessage, error)
	CreateSelectionJob(ctx context.Context, j store.SelectionJob) (store.SelectionJob, error)
	RunningSelectionJob(ctx context.Context, queueID int64) (store.SelectionJob, error)
	CancelSelectionJob(ctx context.Context, id int64, now time.Time) (bool, error)
	ArchivedMessages(ctx context.Context, f store.ArchiveFilter) ([]store.ArchivedMessage, error)
	// LockQueue serialises actions on a queue across replicas sharing the database.
	LockQueue(ctx context.Context, arn string) (unlock func(), err error)
}

// Options configure a Service. Clients and Store are required.
type Options struct {
	// Clients are the SQS clients by scope (store.Scope: the region, or ACCOUNT/REGION for a
	// configured account); the client of a queue's own account and region acts on it.
	Clients map[string]SQSAPI
	Store   Store
	// Publisher tells the live pages about new tasks and audit entries. Default events.Discard.
	Publisher events.Publisher
	// ReadOnly refuses every action (403 read_only), still audited.
	ReadOnly bool
	Now      func() time.Time // default time.Now
	Logger   *slog.Logger     // default discard
	// Registerer, when set, gets toolq_actions_total{action,result} and the actions' AWS calls
	// in toolq_aws_calls_total{operation,outcome}, the metric the collector counts into too.
	Registerer prometheus.Registerer
	// Confirmations signs and checks the tokens of two-step starts (PreviewRedrive): the
	// authenticator, with the server's key. Nil: previews and confirmed starts are refused.
	Confirmations Signer
	// RetryWait is how long an action waits before it tries a failed move-task call again,
	// once ListMessageMoveTasks has shown that the call did not land (default 200ms, doubled
	// each time).
	RetryWait time.Duration
	// Engine runs the selective redrives the actions create; nil: they wait for the engine of
	// the replica that leads.
	Engine *engine.Engine
	// Dimensions are the configured dimensions' names, and ErrorDimension the one that says why
	// a call failed, for the selections.
	Dimensions     []string
	ErrorDimension string
	// OptedIn reports whether a queue is opted in to sampling as a source (--peek-source): a
	// dead-letter queue with a RedrivePolicy of its own is redriven selectively only then.
	OptedIn func(name string) bool
}

// Service runs the actions. It is the only code that changes anything in AWS.
type Service struct {
	clients   map[string]SQSAPI
	store     Store
	pub       events.Publisher
	readOnly  bool
	now       func() time.Time
	log       *slog.Logger
	outcomes  *prometheus.CounterVec
	retryWait time.Duration
	signer    Signer
	engine    *engine.Engine
	dims      []string
	errorDim  string
	optedIn   func(name string) bool

	mu       sync.Mutex
	locks    map[string]chan struct{} // one per DLQ ARN: starts and cancels of a queue never overlap
	inflight map[int64]bool           // intents of actions under way in this process
}

// New returns a Service. It panics when Store is missing, a wiring mistake.
func New(opts Options) *Service {
	if opts.Store == nil {
		panic("actions: Options.Store is required")
	}
	s := &Service{
		clients:   make(map[string]SQSAPI, len(opts.Clients)),
		store:     opts.Store,
		pub:       opts.Publisher,
		readOnly:  opts.ReadOnly,
		now:       opts.Now,
		log:       opts.Logger,
		retryWait: cmp.Or(max(opts.RetryWait, 0), 200*time.Millisecond),
		signer:    opts.Confirmations,
		engine:    opts.Engine,
		dims:      opts.Dimensions,
		errorDim:  opts.ErrorDimension,
		optedIn:   opts.OptedIn,
		locks:     make(map[string]chan struct{}),
		inflight:  make(map[int64]bool),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_actions_total",
			Help: "Actions asked for, by action and result (accepted, refused, failed).",
		}, []string{"action", "result"}),
	}
	if s.pub == nil {
		s.pub = events.Discard
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opts.Registerer != nil {
		if err := opts.Registerer.Register(s.outcomes); err != nil {
			// Only a second Service on one registry gets here; the metrics are not worth failing for.
			s.log.Warn("actions: register metrics", "err", err)
		}
	}
	calls, err := awscalls.NewCounter(opts.Registerer)
	if err != nil {
		s.log.Warn("actions: register metrics", "err", err)
	}
	for region, c := range opts.Clients {
		s.clients[region] = countedSQS{SQSAPI: c, calls: calls}
	}
	return s
}

// countedSQS counts every call the actions make in toolq_aws_calls_total.
type countedSQS struct {
	SQSAPI
	calls *awscalls.Counter
}

func (c countedSQS) StartMessageMoveTask(ctx context.Context, in *sqs.StartMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.StartMessageMoveTaskOutput, error) {
	out, err := c.SQSAPI.StartMessageMoveTask(ctx, in, optFns...)
	c.calls.Observe("StartMessageMoveTask", err)
	return out, err
}

func (c countedSQS) CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	out, err := c.SQSAPI.CancelMessageMoveTask(ctx, in, optFns...)
	c.calls.Observe("CancelMessageMoveTask", err)
	return out, err
}

func (c countedSQS) ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	out, err := c.SQSAPI.ListMessageMoveTasks(ctx, in, optFns...)
	c.calls.Observe("ListMessageMoveTasks", err)
	return out, err
}

func (c countedSQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	out, err := c.SQSAPI.GetQueueUrl(ctx, in, optFns...)
	c.calls.Observe("GetQueueUrl", err)
	return out, err
}

func (c countedSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	out, err := c.SQSAPI.GetQueueAttributes(ctx, in, optFns...)
	c.calls.Observe("GetQueueAttributes", err)
	return out, err
}

// ReadOnly reports whether actions are turned off.
func (s *Service) ReadOnly() bool { return s.readOnly }

// lock serialises actions on one queue, in this process and then across the replicas sharing
// the database (two operators pressing "start" on two replicas make one task); it gives up when
// ctx ends.
func (s *Service) lock(ctx context.Context, arn string) (unlock func(), err error) {
	s.mu.Lock()
	ch, ok := s.locks[arn]
	if !ok {
		ch = make(chan struct{}, 1)
		s.locks[arn] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	unlockShared, err := s.store.LockQueue(ctx, arn)
	if err != nil {
		<-ch
		return nil, err
	}
	return func() { unlockShared(); <-ch }, nil
}

// attempt is one action being audited.
type attempt struct {
	actor  Actor
	action string
	queue  store.Queue // as far as it was resolved
	ref    string      // what the caller named
	params map[string]any
	key    string // the idempotency key, once checked
	// confirmed: a start with a preview's token, whose key is the token's (a second use is
	// refused rather than answered as the first).
	confirmed bool

	intentID int64          // the intent written before AWS was called; 0 before
	task     store.MoveTask // what an accepted action started or cancelled
	note     string         // what an accepted outcome's detail says instead of the task handle
	// unsettled: AWS did not say whether the call landed, so no outcome is written; the intent
	// stays pending until ListMessageMoveTasks tells (reconcileQueue).
	unsettled bool
	// first is, for a repeat of an idempotency key, the first attempt's intent and outcome.
	first *[2]store.AuditEntry
	// recorded: its outcome is written (see recordLocked).
	recorded bool
}

// recordLocked records a's outcome while the queue's lock is still held, so that a start with
// the same idempotency key, waiting for the lock, finds the outcome and not a bare intent. Call
// it deferred after the lock's deferred unlock, with the action's named results.
func (s *Service) recordLocked(ctx context.Context, a *attempt, task *store.MoveTask, err *error) {
	a.task = *task
	s.record(ctx, *a, *err)
	a.recorded = true
}

// paramsJSON is the attempt's parameters as the audit log stores them.
func (a attempt) paramsJSON() string {
	b, _ := json.Marshal(a.params)
	return string(b)
}

// entry is the audit row of a, with its result and detail.
func (s *Service) entry(a attempt, result, detail string) store.AuditEntry {
	name := a.queue.Name
	if name == "" {
		name = safetext.Line(a.ref, 256)
	}
	return store.AuditEntry{
		At:         s.now(),
		Actor:      cmp.Or(a.actor.Name, "unknown"),
		ActorKind:  string(a.actor.Kind),
		TokenID:    a.actor.TokenID,
		Credential: a.actor.credential(),
		Role:       string(a.actor.Role),
		Action:     a.action,
		QueueName:  name,
		QueueARN:   a.queue.ARN,
		Params:     a.paramsJSON(),
		Result:     result,
		Detail:     detail,
		RemoteAddr: a.actor.RemoteAddr,
	}
}

// auditContext outlives the request: a client that hangs up must not erase an audit row.
func auditContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}

// writeIntent writes a's intent before AWS is called. When the audit log cannot take it the
// action is refused (Unavailable), so that nothing happens in AWS that the log does not hold.
func (s *Service) writeIntent(ctx context.Context, a *attempt) error {
	e := s.entry(*a, store.AuditIntent, "")
	e.IdempotencyKey = a.key
	actx, cancel := auditContext(ctx)
	defer cancel()
	id, err := s.store.AppendAudit(actx, e)
	if err != nil {
		s.log.Error("actions: audit intent", "action", a.action, "queue", e.QueueName, "err", err)
		return refuse(Unavailable, "audit_unavailable",
			"toolq cannot write its audit log (the database refused the write; the server's log says why), so it did not ask AWS to act on %s", e.QueueName)
	}
	s.mu.Lock()
	s.inflight[id] = true
	s.mu.Unlock()
	a.intentID = id
	s.pub.Publish(events.Event{Kind: events.AuditAppended, QueueID: a.queue.ID, At: s.now()})
	return nil
}

// record audits an attempt's outcome (naming its intent, if it wrote one), publishes
// AuditAppended and counts it. A failure to audit is logged and returned, for the callers that
// must not answer without their entry (a preview's token); for an action it is too late to
// matter: the action (or refusal) has already happened, and an intent left without its outcome
// is settled later from ListMessageMoveTasks.
func (s *Service) record(ctx context.Context, a attempt, err error) (auditErr error) {
	defer func() {
		s.mu.Lock()
		delete(s.inflight, a.intentID)
		s.mu.Unlock()
	}()
	result, detail := store.AuditAccepted, cmp.Or(a.note, a.task.TaskHandle)
	var code, kind string
	var ae *Error
	switch {
	case a.first != nil:
		intent, outcome := a.first[0], a.first[1]
		result, code, kind = store.AuditRepeated, outcome.Code, outcome.Kind
		detail = fmt.Sprintf("same idempotency key as audit entry %d, which was %s: answered as then, nothing asked of AWS", intent.ID, outcome.Result)
	case a.unsettled:
		s.log.Warn("action", "action", a.action, "queue", a.queue.Name, "actor", a.actor.Name, "result", "unsettled", "intent", a.intentID, "err", err)
		return nil
	case err == nil:
	case errors.As(err, &ae) && ae.Kind != Upstream:
		result, detail, code, kind = store.AuditRefused, ae.Code+": "+ae.Message, ae.Code, ae.Kind.String()
	case errors.As(err, &ae):
		result, detail, code, kind = store.AuditFailed, ae.Message, ae.Code, ae.Kind.String()
	default:
		result, detail, code = store.AuditFailed, "internal error", "internal_error"
	}
	e := s.entry(a, result, detail)
	e.IntentID, e.Code, e.Kind, e.MoveTaskID = a.intentID, code, kind, a.task.ID
	if a.first != nil {
		e.IdempotencyKey, e.MoveTaskID = a.key, a.first[1].MoveTaskID
	}
	actx, cancel := auditContext(ctx)
	defer cancel()
	if _, auditErr = s.store.AppendAudit(actx, e); auditErr != nil {
		s.log.Error("actions: audit", "action", a.action, "queue", e.QueueName, "result", result, "intent", a.intentID, "err", auditErr)
	} else {
		s.pub.Publish(events.Event{Kind: events.AuditAppended, QueueID: a.queue.ID, At: s.now()})
	}
	s.outcomes.WithLabelValues(a.action, result).Inc()
	s.log.Info("action", "action", a.action, "queue", e.QueueName, "actor", e.Actor, "role", a.actor.Role, "result", result, "detail", detail)
	return auditErr
}

// checkActor refuses actions in read-only mode and for viewers.
func (s *Service) checkActor(a Actor) *Error {
	if s.readOnly {
		return refuse(Forbidden, "read_only", "this dashboard is read-only; redrives are turned off")
	}
	if a.Role != auth.RoleOperator {
		return refuse(Forbidden, "forbidden", "only operators may start or cancel redrives")
	}
	return nil
}

// queueHint says which watched queues (of filter, those keep says) are closest to ref, for a
// refusal of a reference that names none: "; closest: orders-dlq, …"; "" when none is, or when
// the queues cannot be read (the refusal stands without its hint).
func (s *Service) queueHint(ctx context.Context, ref string, filter store.QueueFilter, keep func(store.Queue) bool) string {
	queues, err := s.store.ListQueues(ctx, filter)
	if err != nil {
		s.log.Warn("actions: list queues for a hint", "err", err)
		return ""
	}
	var names []string
	for _, q := range queues {
		if keep(q) {
			names = append(names, q.Name)
		}
	}
	if hint := choices.Hint(ref, names); hint != "" {
		return "; " + hint
	}
	return ""
}

// resolveDLQ finds the dead-letter queue an action names.
func (s *Service) resolveDLQ(ctx context.Context, ref string) (store.Queue, error) {
	if !plausibleRef(ref) {
		return store.Queue{}, refuse(Invalid, "invalid_queue", "the queue must be a queue name or ARN")
	}
	q, err := s.store.ResolveQueue(ctx, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Queue{}, refuse(NotFound, "queue_not_found", "no watched queue has that name or ARN%s",
			s.queueHint(ctx, ref, store.QueueFilter{}, store.Queue.IsDeadLetterQueue))
	case errors.Is(err, store.ErrAmbiguous):
		return store.Queue{}, refuse(Conflict, "ambiguous_queue", "several watched queues have that name; use the queue's ARN")
	case err != nil:
		return store.Queue{}, fmt.Errorf("actions: resolve %q: %w", ref, err)
	}
	if q.Gone() {
		return q, refuse(NotFound, "queue_not_found", "the queue %s no longer exists", q.Name)
	}
	if q.IsEventBridgeDeadLetterQueue() {
		// Its messages were sent by EventBridge, not moved by a redrive policy: a move task has
		// no source to return them to, and a destination would get events where tool calls go.
		return q, refuse(Unprocessable, "eventbridge_dead_letter_queue",
			"%s is an EventBridge target's dead-letter queue: its messages are events that failed delivery, to be put on the bus again (PutEvents) once the cause is fixed, not SQS messages a move task can return; toolq does not redrive it", q.Name)
	}
	if !q.IsDeadLetterQueue() {
		return q, refuse(Unprocessable, "not_dead_letter_queue", "%s is not a dead-letter queue: no queue sends its failures there", q.Name)
	}
	return q, nil
}

// client returns the SQS client of a region.
func (s *Service) client(region string) (SQSAPI, error) {
	c, ok := s.clients[region]
	if !ok || c == nil {
		return nil, refuse(Upstream, "aws_error", "no AWS client is configured for region %s", safetext.Line(region, 100))
	}
	return c, nil
}

// plausibleRef rejects queue references no queue can have before they reach a query or AWS.
func plausibleRef(ref string) bool {
	return ref != "" && len(ref) <= 256 && !strings.ContainsFunc(ref, func(r rune) bool {
		return unicode.IsControl(r) || unicode.IsSpace(r) || r == '/'
	})
}
