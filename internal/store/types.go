package store

import (
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned when a looked-up row does not exist. Callers branch on it with errors.Is.
var ErrNotFound = errors.New("store: not found")

// ErrAmbiguous is returned when a queue name matches queues in several regions or accounts: the
// caller must name the queue by its ARN.
var ErrAmbiguous = errors.New("store: queue name is ambiguous, use its ARN")

// ErrConflict is returned when a row would break a uniqueness rule (a token name taken, say).
var ErrConflict = errors.New("store: conflict")

// Queue is one watched SQS queue as the collector last saw it. Rows are never deleted: a queue
// that disappears from ListQueues gets GoneAt set and keeps its history.
type Queue struct {
	ID     int64
	Region string
	// Account is the configured name of the account the queue is watched through (--account
	// NAME=…), "" without configured accounts; AccountID is its ARN's twelve digits.
	Account   string
	AccountID string
	Name      string
	URL       string
	ARN       string
	FIFO      bool
	FirstSeen time.Time
	LastSeen  time.Time
	GoneAt    time.Time // zero while the queue exists

	// Attributes is the latest GetQueueAttributes(All) answer, as AWS spelled it. Every reader of
	// the queue shares the map: never change it, copy it to change it.
	Attributes   map[string]string
	AttributesAt time.Time // zero until the first attribute sample

	// From the queue's own RedrivePolicy; empty and zero when it has no dead-letter queue.
	DeadLetterTargetARN string
	MaxReceiveCount     int

	// SourceARNs are the queues whose RedrivePolicy names this queue, plus those that
	// ListDeadLetterSourceQueues returned. A queue with sources is a dead-letter queue.
	SourceARNs []string
	// EventBridgeRuleARNs are the EventBridge rules one of whose targets names this queue as its
	// DeadLetterConfig: a queue with such rules is an EventBridge target's dead-letter queue,
	// which holds events that failed delivery, not SQS messages a move task can return.
	EventBridgeRuleARNs []string

	// PeekEnabled records whether the collector samples this queue's messages, and PeekPaused
	// why it does not sample them for now although it may ("" while it samples them).
	PeekEnabled  bool
	PeekPaused   string
	BackfilledAt time.Time // zero until the CloudWatch backfill ran
}

// IsDeadLetterQueue reports whether some queue uses q as its dead-letter queue.
func (q Queue) IsDeadLetterQueue() bool { return len(q.SourceARNs) > 0 }

// IsEventBridgeDeadLetterQueue reports whether some EventBridge target uses q as its
// dead-letter queue.
func (q Queue) IsEventBridgeDeadLetterQueue() bool { return len(q.EventBridgeRuleARNs) > 0 }

// Gone reports whether the queue has disappeared from AWS.
func (q Queue) Gone() bool { return !q.GoneAt.IsZero() }

// AttributeSample is one GetQueueAttributes reading of a queue's depth. Resolution is 0 for a raw
// sample, or the width in seconds of the bucket a roll-up summarises (values are then maxima).
type AttributeSample struct {
	QueueID    int64
	At         time.Time
	Visible    int64 // ApproximateNumberOfMessages
	InFlight   int64 // ApproximateNumberOfMessagesNotVisible
	Delayed    int64 // ApproximateNumberOfMessagesDelayed
	Resolution int
}

// Held is every message the queue holds: visible, in flight and delayed. A message in flight is
// still in the queue (a consumer, an operator or the dashboard's own peek has it for a while), so
// a dead-letter queue holds what it held while someone looks at its messages.
func (a AttributeSample) Held() int64 { return a.Visible + a.InFlight + a.Delayed }

// MetricPoint is one CloudWatch datapoint: the value of Metric (a CloudWatch metric name such as
// NumberOfMessagesSent) over the Period seconds starting at At, with the statistic the collector
// asks for that metric (Sum for counts, Maximum for gauges, Average for sizes).
type MetricPoint struct {
	QueueID int64
	Metric  string
	At      time.Time
	Period  int
	Value   float64
}

// SampleKind says why a queue's messages were sampled.
type SampleKind string

// Sample kinds.
const (
	SampleDeadLetter SampleKind = "dlq"    // a dead-letter queue, sampled by default
	SampleSource     SampleKind = "source" // a source queue the operator opted in
)

// Sample is one peek pass over a queue: how many messages it saw against how many the queue held,
// and how many receives it spent (the dashboard's own receive budget).
type Sample struct {
	ID            int64
	QueueID       int64
	Kind          SampleKind
	At            time.Time
	Seen          int   // distinct messages seen in this pass
	ApproxVisible int64 // ApproximateNumberOfMessages read just before the pass
	Receives      int   // ReceiveMessage calls this pass spent
	MessagesTaken int   // messages received (each raised a receive count by one)
	Capped        bool  // the pass stopped at the message cap
	Error         string
	// OldestSentAt is the earliest SentTimestamp of the messages seen; zero when none was seen.
	// SaveSample fills it in from the messages when it is zero.
	OldestSentAt time.Time
}

// Coverage is Seen as a share of ApproxVisible, capped at 1. A pass over an empty queue covers it all.
func (s Sample) Coverage() float64 {
	if s.ApproxVisible <= 0 {
		return 1
	}
	c := float64(s.Seen) / float64(s.ApproxVisible)
	if c > 1 {
		return 1
	}
	return c
}

// MessageAttribute is one SQS message attribute.
type MessageAttribute struct {
	Name     string `json:"name"`
	DataType string `json:"dataType"`
	Value    string `json:"value"` // binary values base64-encoded
}

// SampledMessage is one message seen by a Sample. ReceiveCount excludes the dashboard's own
// receives since the message arrived in its queue, which OwnReceives counts (this sample's
// included): SQS's ApproximateReceiveCount was ReceiveCount + OwnReceives.
type SampledMessage struct {
	ID                  int64 // the message's row id (one per queue and message id), for cursor pagination within a sample
	SampleID            int64
	QueueID             int64
	MessageID           string
	GroupID             string
	DeduplicationID     string
	SequenceNumber      string
	ReceiveCount        int
	OwnReceives         int
	SentAt              time.Time
	FirstReceivedAt     time.Time
	DeadLetterSourceARN string
	// TraceHeader is the AWSTraceHeader system attribute (X-Ray's trace header) as received;
	// "" when it had none.
	TraceHeader   string
	Attributes    []MessageAttribute
	Body          string // at most the collector's body cap
	BodySize      int    // the full body's size in bytes
	BodyTruncated bool
	ToolName      string // parsed from a JSON body; empty when absent
	ToolCallID    string
	SessionID     string
	// Dimensions are the operator's named dimensions of the tool call that it has a value for
	// (collector.Dimension); nil and empty alike mean none.
	Dimensions     map[string]string
	NearMaxReceive bool // on a source queue, receives so far (toolq's included) >= maxReceiveCount-1: one delivery left
	// BodyHash is the hex SHA-256 of the whole body (not of the truncated Body): what a redriven
	// message that fails again is recognised by, since SQS gives it a new id. Written, not read
	// back with the message.
	BodyHash string
}

// GroupBacklog is what one Sample saw of one FIFO message group.
type GroupBacklog struct {
	SampleID         int64
	QueueID          int64
	GroupID          string
	Messages         int
	OldestSentAt     time.Time
	HeadMessageID    string
	HeadReceiveCount int // the head's receives but the dashboard's, as SampledMessage.ReceiveCount
	// HeadOwnReceives is the dashboard's receives of the head, as SampledMessage.OwnReceives,
	// read from the head's row of the same sample.
	HeadOwnReceives int
	Blocked         bool // the head keeps failing (its receive count is high) while messages wait behind it
}

// MoveTaskStatus is a move task's status, as SQS reports it.
type MoveTaskStatus string

// Move task statuses.
const (
	MoveTaskRunning    MoveTaskStatus = "RUNNING"
	MoveTaskCompleted  MoveTaskStatus = "COMPLETED"
	MoveTaskCancelling MoveTaskStatus = "CANCELLING"
	MoveTaskCancelled  MoveTaskStatus = "CANCELLED"
	MoveTaskFailed     MoveTaskStatus = "FAILED"
)

// MoveTask is one StartMessageMoveTask of a dead-letter queue. A task is identified by its source
// ARN and start time, since SQS only reports the TaskHandle while the task runs.
type MoveTask struct {
	ID             int64
	QueueID        int64 // the dead-letter queue
	TaskHandle     string
	Status         MoveTaskStatus
	SourceARN      string
	DestinationARN string // empty: each message returns to its original source
	MaxPerSecond   int    // 0: SQS chooses
	Moved          int64
	ToMove         int64
	FailureReason  string
	StartedAt      time.Time
	UpdatedAt      time.Time
	// Kind is KindMoveTask for SQS's move tasks, KindSelection for toolq's selective redrives
	// (SelectionJob), which the redrive list shows beside them.
	Kind string
}

// Kinds of redrive in the move_tasks table.
const (
	KindMoveTask  = "move_task"
	KindSelection = "selection"
	// KindDiscard is a job that archives the messages of a selection, then deletes them from
	// the dead-letter queue (ArchivedMessage); KindRestore one that sends archived messages to a
	// queue again.
	KindDiscard = "discard"
	KindRestore = "restore"
)

// Running reports whether the task is still moving messages.
func (t MoveTask) Running() bool {
	return t.Status == MoveTaskRunning || t.Status == MoveTaskCancelling
}

// Collector run kinds: each loop of the collector records its own runs.
const (
	RunDiscovery  = "discovery"
	RunAttributes = "attributes"
	RunMetrics    = "metrics"
	RunPeek       = "peek"
	RunMoveTasks  = "movetasks"
	// RunTopology reads what surrounds the queues: Lambda event source mappings, EventBridge
	// rules and targets, CloudWatch alarms.
	RunTopology = "topology"
)

// CollectorRun is one pass of one collector loop.
type CollectorRun struct {
	ID         int64
	Kind       string
	StartedAt  time.Time
	FinishedAt time.Time // zero while running
	Queues     int
	Calls      int // AWS API calls made
	Errors     int
}

// CollectorError is one failed AWS call, kept so that the pages can say why data is missing.
type CollectorError struct {
	ID        int64
	RunID     int64
	QueueID   int64 // zero when the error is not about one queue
	Operation string
	Code      string // the AWS error code, e.g. AccessDenied, or "transport"
	Message   string
	At        time.Time
}

// Scope is the key of what the collector sees and replaces per (account, region): its sight
// (OperationStatus.Region, LoopStatus.Region), the topology it reads region by region (the
// Region of EventBridge targets, alarms and mappings) and the actions' clients. It is the bare
// region without configured accounts (account ""), as before accounts existed, and
// ACCOUNT/REGION for a configured account, so that two accounts in one region share neither
// their sight nor their failures.
func Scope(account, region string) string {
	if account == "" {
		return region
	}
	return account + "/" + region
}

// Scope is the queue's sight scope (see Scope).
func (q Queue) Scope() string { return Scope(q.Account, q.Region) }

// OperationStatus is what the collector last learned of one AWS operation in one scope (see
// Scope: a region, or an account's region).
type OperationStatus struct {
	Region         string
	Operation      string // "GetQueueAttributes", ...
	LastSuccessAt  time.Time
	LastFailureAt  time.Time
	FailureCode    string // of the last failure
	FailureMessage string // safe to show: no credentials
	FailureStatus  int    // the endpoint's HTTP status of the last failure; 0 when it never answered
	FailuresInRow  int    // failures since the last success
	BackoffUntil   time.Time
}

// Failing reports whether the operation's newest call failed.
func (o OperationStatus) Failing() bool { return o.LastFailureAt.After(o.LastSuccessAt) }

// LoopStatus is the last cycle of one collector loop (RunDiscovery, RunAttributes, ...) in one
// region.
type LoopStatus struct {
	Loop          string
	Region        string
	FinishedAt    time.Time
	LastSuccessAt time.Time // the newest cycle that read something (see the collector)
	Queues        int       // the region's queues the cycle was about
	FailedQueues  int       // of those, the ones it could not read
	Calls         int
	Failures      int
}

// CostEstimate is the AWS list-price cost per day of the collector's running configuration.
type CostEstimate struct {
	At                  time.Time
	SQSRequestsPerDay   float64
	MetricsPerDay       float64 // metrics requested from GetMetricData per day
	SQSUSDPerDay        float64
	CloudWatchUSDPerDay float64
	TotalUSDPerDay      float64
	// AlarmRequestsPerDay are the DescribeAlarms calls per day, priced as CloudWatch API
	// requests and included in CloudWatchUSDPerDay.
	AlarmRequestsPerDay float64 `json:",omitempty"`
	// FreeRequestsPerDay are the Lambda and EventBridge listing calls per day, which AWS does not
	// bill.
	FreeRequestsPerDay float64 `json:",omitempty"`
	// Loops is the same per collector loop, in the order the loops run.
	Loops []LoopCost
	// Cadences are the cadences priced, those the collector runs at.
	Cadences Cadences
	// BudgetUSDPerDay is the budget the cadences were chosen to fit (--aws-budget-per-day), 0
	// without one; OverBudget says that even the slowest cadences cost more.
	BudgetUSDPerDay float64
	OverBudget      bool
	// Accounts is the same estimate split by configured account (--account), in the order the
	// accounts were configured; empty without configured accounts.
	Accounts []AccountCost `json:",omitempty"`
}

// AccountCost is the part of a CostEstimate that one configured account's queues and regions
// cost, at the same cadences.
type AccountCost struct {
	Account             string
	SQSRequestsPerDay   float64
	MetricsPerDay       float64
	SQSUSDPerDay        float64
	CloudWatchUSDPerDay float64
	TotalUSDPerDay      float64
}

// String says what freshness the cadences buy, in one line for the log and the pages.
func (c Cadences) String() string {
	d := func(v time.Duration) string {
		switch {
		case v <= 0:
			return "–"
		case v%time.Hour == 0:
			return fmt.Sprintf("%d h", v/time.Hour)
		case v%time.Minute == 0:
			return fmt.Sprintf("%d min", v/time.Minute)
		}
		return fmt.Sprintf("%d s", v/time.Second)
	}
	return fmt.Sprintf("depths every %s (empty, unchanged queues every %s; unchanged dead-letter queues every %s), age of the oldest message every %s, "+
		"other CloudWatch metrics every %s, dead-letter samples every %s, move tasks every %s",
		d(c.Attributes), d(c.QuietAttributes), d(c.QuietDeadLetter), d(c.OldestAge), d(c.Counters), d(c.PeekDeadLetter), d(c.MoveTasks))
}

// LoopCost is what one collector loop costs a day.
type LoopCost struct {
	Loop        string // a run kind: discovery, attributes, metrics, peek, movetasks, topology
	SQSRequests float64
	Metrics     float64
	USD         float64
}

// Cadences are how often the collector reads what: the configured intervals, or slower ones
// chosen to fit a budget.
type Cadences struct {
	// Attributes: a queue holding messages, or whose depth changed lately.
	Attributes time.Duration
	// QuietAttributes: an empty queue whose depth has not changed for as long.
	QuietAttributes time.Duration
	// QuietDeadLetter: a dead-letter queue whose depth has not changed for QuietAttributes,
	// empty or not: its next message is news.
	QuietDeadLetter time.Duration
	// OldestAge: CloudWatch's ApproximateAgeOfOldestMessage of a source queue that held messages.
	OldestAge time.Duration
	// Counters: the other CloudWatch metrics of source queues, as one-minute datapoints.
	Counters time.Duration
	// MoveTasks: a dead-letter queue's move tasks while none runs and its depth does not fall.
	MoveTasks time.Duration
	// PeekDeadLetter and PeekSource: message samples.
	PeekDeadLetter time.Duration
	PeekSource     time.Duration
	// Discovery: ListQueues and ListDeadLetterSourceQueues.
	Discovery time.Duration
}

// BlockedReceiveCount is the receive count (the consumers', before the dashboard's own receive)
// from which a FIFO group's head counts as failing while messages wait behind it: it was
// delivered at least twice and never deleted.
const BlockedReceiveCount = 2

// OwnReceiveLimit is how many times toolq may receive one message, since it arrived, from a
// queue whose RedrivePolicy has maxReceiveCount maxRC: toolq's own receives never bring a message
// within one receive of maxReceiveCount, so that whatever toolq did its consumers keep two
// deliveries, a try and a retry. It is 0 (toolq never receives from the queue) for a
// maxReceiveCount of 2 or less, or unknown (0).
func OwnReceiveLimit(maxRC int) int { return max(maxRC-2, 0) }

// Audit results. An action that calls AWS writes an AuditIntent before the call and one of the
// others, naming the intent, after it; an action refused before any call writes its outcome
// alone. AuditRepeated answers a repeat of a start by its idempotency key, from the first.
const (
	AuditIntent   = "intent"
	AuditAccepted = "accepted"
	AuditRefused  = "refused"
	AuditFailed   = "failed"
	AuditRepeated = "repeated"
)

// AuditEntry is one action's intent, or its outcome: accepted, refused, failed or repeated.
type AuditEntry struct {
	ID        int64
	At        time.Time
	Actor     string // token name or proxy user; "anonymous" with --auth none
	ActorKind string // "token", "proxy" or "none"
	// TokenID is the store id of the actor's API token (0 for other kinds): a name may be
	// taken again by a new token once the old one is revoked, an id never.
	TokenID int64
	// Credential is the credential the action came with (auth.Identity.Credential: a token's
	// id, a browser session, a proxy user): an idempotency key is looked up under it.
	Credential string
	Role       string
	Action     string // e.g. "redrive.start", "redrive.cancel", "token.create"
	QueueName  string
	QueueARN   string
	Params     string // JSON object of the action's parameters
	Result     string // one of the Audit results above
	Detail     string // the refusal or failure reason, or the task handle
	RemoteAddr string
	// IntentID is, on an outcome, the id of the intent it ends; 0 on an intent or an outcome
	// that had none.
	IntentID int64
	// IdempotencyKey is the key a start carried (on its intent, and on a repeat of it).
	IdempotencyKey string
	// Code and Kind are a refusal's or failure's stable code and sort (the actions' Kind).
	Code string
	Kind string
	// MoveTaskID is the move task an accepted action started or cancelled.
	MoveTaskID int64
}

// Token is an API token. Only its SHA-256 hash is stored.
type Token struct {
	ID         int64
	Name       string
	Role       string
	CreatedAt  time.Time
	LastUsedAt time.Time
	RevokedAt  time.Time
}

// Retention says how long each kind of row is kept and when it is rolled up.
type Retention struct {
	RawFor       time.Duration // raw samples and 60-s datapoints; default 48h
	RollupPeriod time.Duration // width of roll-up buckets; default 5m
	RollupFor    time.Duration // roll-ups; default 30 days
	SamplesFor   time.Duration // message samples other than each queue's newest; default 24h
	RunsFor      time.Duration // collector runs and errors; default 7 days
}
