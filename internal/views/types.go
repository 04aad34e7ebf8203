package views

import (
	"errors"
	"time"
)

// ErrNotFound is returned when a queue or message reference matches nothing.
var ErrNotFound = errors.New("views: not found")

// ErrAmbiguous is returned when a queue name matches queues in several regions; use the ARN.
var ErrAmbiguous = errors.New("views: queue name is ambiguous, use its ARN")

// HealthStatus is how a queue is doing, as its health rules found it.
type HealthStatus string

// Health statuses, worst last. Unknown is not fine: a rule could not be checked (its CloudWatch
// metrics are missing, say), so the queue is not shown as healthy.
const (
	HealthOK       HealthStatus = "ok"
	HealthUnknown  HealthStatus = "unknown"
	HealthWarning  HealthStatus = "warning"
	HealthCritical HealthStatus = "critical"
)

// Health is a queue's status with the reasons for it. Notes say what belongs to another queue's
// health and is counted there (a source's DLQ holding messages): they raise no status. Reasons
// and Notes are never nil.
type Health struct {
	Status  HealthStatus `json:"status"`
	Reasons []string     `json:"reasons"`
	Notes   []string     `json:"notes"`
	// Findings are the reasons with the rule each came from, for the overview's problem list.
	Findings []Finding `json:"-"`
}

// Finding is one reason of a queue's health, with its rule's kind and status, and how large
// what it found is (Size: messages, groups, seconds, errors, by the rule; 0 where the rule
// finds no amount) and whether it grows, by which the problems of one severity are ordered.
type Finding struct {
	Kind    ProblemKind
	Status  HealthStatus
	Reason  string
	Size    float64
	Growing bool
}

// Thresholds drive the health rules. Zero fields take the defaults of DefaultThresholds.
type Thresholds struct {
	OldestAgeWarning  time.Duration // oldest message older than this: warning (default 5m)
	OldestAgeCritical time.Duration // critical (default 30m)
	DLQDepthCritical  int64         // a DLQ holding this many messages or more: critical (default 100); any message: warning
	StaleAfter        time.Duration // data older than this is stale (default 3× the attribute interval, 45s... set by the wiring)
	ErrorWindow       time.Duration // collector errors newer than this count against a queue (default 5m)
	GrowthWindow      time.Duration // a DLQ deeper now than this long ago is growing (default 15m)

	// The advisor's: the in-flight quota (default 120,000) and the empty receives a minute
	// that mark short polling (default 30).
	InFlightLimit          int64
	EmptyReceivesPerMinute float64

	// What a redrive's outcome counts: the DLQ arrivals within RedriveWindow of its start that
	// match a message it moved are its bounce-backs (default 24h); they have settled once the
	// task ended and a sample RedriveSettle after the last news (its end, its newest
	// bounce-back) found nothing new (default 10m); a redrive whose bounce-backs reach
	// RedriveBounceShare of what it moved bounced most of them (default 0.5).
	RedriveWindow      time.Duration
	RedriveSettle      time.Duration
	RedriveBounceShare float64
}

// Freshness says how old what a page shows is, and which regions toolq cannot see at all: what
// it shows of those is not current, whatever their age says.
type Freshness struct {
	UpdatedAt  time.Time `json:"updatedAt"` // the last attribute cycle that read something; zero before the first
	AgeSeconds float64   `json:"ageSeconds"`
	Stale      bool      `json:"stale"`
	Blind      []string  `json:"blind"` // regions toolq cannot see (see Sight); never nil
}

// QueueSummary is one row of the overview and of GET /api/v1/queues.
type QueueSummary struct {
	ID int64 `json:"-"`
	// Ref is how links name the queue: its name, or its ARN when queues of several regions or
	// accounts share the name.
	Ref    string `json:"-"`
	Name   string `json:"name"`
	ARN    string `json:"arn"`
	URL    string `json:"url"`
	Region string `json:"region"`
	// Account is the configured name of the queue's AWS account (--account NAME=…), or
	// "default" for a dashboard configured without accounts; AccountID its twelve digits.
	Account   string `json:"account"`
	AccountID string `json:"accountId"`
	// Scope keys what toolq sees per account and region (store.Scope): the sight's region.
	Scope    string `json:"-"`
	FIFO     bool   `json:"fifo"`
	Visible  int64  `json:"visible"`
	InFlight int64  `json:"inFlight"`
	Delayed  int64  `json:"delayed"`
	// OldestMessageAgeSeconds has one source per kind of queue: CloudWatch's
	// ApproximateAgeOfOldestMessage for a working queue, the newest sample's oldest message for
	// a dead-letter queue (CloudWatch skips messages received three times or more). It is the
	// age at OldestMessageAgeAt; null for an empty queue or when the source has nothing recent.
	OldestMessageAgeSeconds *float64   `json:"oldestMessageAgeSeconds"`
	OldestMessageAgeSource  string     `json:"oldestMessageAgeSource,omitempty"` // "cloudwatch" or "sample"
	OldestMessageAgeAt      *time.Time `json:"oldestMessageAgeAt"`
	MaxReceiveCount         *int       `json:"maxReceiveCount"`      // null without a redrive policy
	DeadLetterQueue         *string    `json:"deadLetterQueue"`      // the DLQ's name, or null
	DeadLetterQueueDepth    *int64     `json:"deadLetterQueueDepth"` // messages the DLQ holds (visible, in flight, delayed), when watched
	// IsDeadLetterQueue: a RedrivePolicy names the queue, or an EventBridge target's
	// DeadLetterConfig does; DeadLetterKind says which ("sqs", "eventbridge-target"; an
	// EventBridge target's wins when both do, since such a queue cannot be redriven).
	IsDeadLetterQueue bool   `json:"isDeadLetterQueue"`
	DeadLetterKind    string `json:"deadLetterKind,omitempty"`
	// Tier: a dead-letter queue with a RedrivePolicy of its own, so also a source: a look at it
	// spends its messages' receives, and it is sampled only when opted in.
	Tier         bool     `json:"tier"`
	SourceQueues []string `json:"sourceQueues"` // names (ARNs for unwatched sources); never nil
	Health       Health   `json:"health"`
	// BlockedGroups counts the FIFO groups its newest sample found blocked behind a failing head.
	BlockedGroups  int        `json:"blockedGroups"`
	SampledAt      *time.Time `json:"sampledAt"` // the newest attribute sample; null before the first
	Gone           bool       `json:"gone"`
	RunningRedrive bool       `json:"runningRedrive"`
	// Advice is what the configuration advisor found, worst first; never nil.
	Advice []Advice `json:"advice"`
	// Sparkline is the visible depth over the last hour, oldest first, for the overview.
	Sparkline []float64 `json:"-"`
}

// Held is every message the queue holds at its newest sample: visible, in flight and delayed,
// as the health rules count a dead-letter queue's depth (store.AttributeSample.Held).
func (q QueueSummary) Held() int64 { return q.Visible + q.InFlight + q.Delayed }

// Misconfigured reports whether the advisor found something on the queue.
func (q QueueSummary) Misconfigured() bool { return len(q.Advice) > 0 }

// MetricValue is the newest datapoint of one CloudWatch metric.
type MetricValue struct {
	Value  float64   `json:"value"`
	At     time.Time `json:"at"`
	Period int       `json:"period"`
}

// PeekStatus tells whether and how the dashboard samples a queue, and what it has spent.
type PeekStatus struct {
	Enabled          bool       `json:"enabled"`
	Kind             string     `json:"kind"` // "dlq", "source" or ""
	LastSampleAt     *time.Time `json:"lastSampleAt"`
	Seen             int        `json:"seen"`
	ApproxVisible    int64      `json:"approxVisible"`
	Coverage         float64    `json:"coverage"` // 0..1
	ReceivesLastHour int        `json:"receivesLastHour"`
	ReceivesLastDay  int        `json:"receivesLastDay"`
	// MessagesTakenLastDay is how many receive counts the dashboard raised in 24 h.
	MessagesTakenLastDay int `json:"messagesTakenLastDay"`
	// Paused says why the dashboard does not sample the queue although it may ("" while it
	// does): one more receive would leave a message no delivery for its consumers, say.
	Paused string `json:"paused,omitempty"`
	// OwnReceiveLimit is how often toolq may receive each message of a queue with a
	// RedrivePolicy (maxReceiveCount − 2), null without one; MostOwnReceives is the most it
	// received one message of the newest sample since that message arrived.
	OwnReceiveLimit *int `json:"ownReceiveLimit"`
	MostOwnReceives int  `json:"mostOwnReceives"`
	// Next is when the next sample is due.
	Next SampleDue `json:"next"`
}

// CollectorErrorView is a recent collector error about a queue.
type CollectorErrorView struct {
	Operation string    `json:"operation"`
	Code      string    `json:"code"`
	Message   string    `json:"message"`
	At        time.Time `json:"at"`
}

// QueueDetail is the queue page and GET /api/v1/queues/{queue}.
type QueueDetail struct {
	QueueSummary
	Attributes   map[string]string      `json:"attributes"` // never nil
	AttributesAt *time.Time             `json:"attributesAt"`
	Metrics      map[string]MetricValue `json:"metrics"` // by CloudWatch metric name; never nil
	Peek         PeekStatus             `json:"peek"`
	Errors       []CollectorErrorView   `json:"errors"`  // never nil
	Redrive      *Redrive               `json:"redrive"` // the newest move task of a DLQ, or null
	Freshness    Freshness              `json:"freshness"`
	// DeadLetterChain is where the queue's failures go, in order: its DLQ, that DLQ's own DLQ
	// (a tier), and so on; names, or ARNs of queues toolq does not watch. Never nil.
	DeadLetterChain []string `json:"deadLetterChain"`
	// MetricsProblem says which CloudWatch metrics are missing and why, "" when none are.
	MetricsProblem string `json:"metricsProblem,omitempty"`
	// Consumers are the Lambda event source mappings that drain the queue; never nil.
	// ConsumersProblem says why they may be missing or old ("" when they are current).
	Consumers        []Consumer `json:"consumers"`
	ConsumersProblem string     `json:"consumersProblem,omitempty"`
	// FedBy are the EventBridge rule targets that deliver to the queue; never nil.
	FedBy []EventBridgeFeed `json:"fedBy"`
	// DeadLetterOfTargets are the EventBridge rule targets that send their failed events here;
	// never nil.
	DeadLetterOfTargets []EventBridgeFeed `json:"deadLetterOfTargets"`
	// Alarms are the CloudWatch alarms on the queue's metrics; never nil.
	Alarms []AlarmView `json:"alarms"`
	// AdviceGaps are the advisor's rules that cannot be checked in the queue's region, and why;
	// never nil.
	AdviceGaps []AdviceGap `json:"adviceGaps"`
	// RedriveUnavailable says why a dead-letter queue has no redrive, "" when it may have one.
	RedriveUnavailable string `json:"redriveUnavailable,omitempty"`
}

// Point is one value of a time series.
type Point struct {
	At    time.Time `json:"at"`
	Value float64   `json:"value"`
}

// Series is one metric of one queue over time. Name is a CloudWatch metric name; depth
// metrics (ApproximateNumberOfMessagesVisible, ...NotVisible, ...Delayed) come from attribute
// samples where those exist and from CloudWatch (backfill) before.
type Series struct {
	Queue  string    `json:"queue"`
	Name   string    `json:"name"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Points []Point   `json:"points"` // never nil
}

// Group is one FIFO message group's backlog in the newest sample.
type Group struct {
	GroupID          string    `json:"groupId"`
	Messages         int       `json:"messages"`
	OldestSentAt     time.Time `json:"oldestSentAt"`
	OldestAgeSeconds float64   `json:"oldestAgeSeconds"`
	HeadMessageID    string    `json:"headMessageId"`
	// HeadReceives are the head message's receives, as Message.Receives counts them.
	HeadReceives     Receives `json:"headReceives"`
	HeadReceiveCount int      `json:"headReceiveCount"` // HeadReceives.Consumers, kept for older clients
	Blocked          bool     `json:"blocked"`
	// State says in one word what the group is doing (see GroupState).
	State GroupState `json:"state"`
}

// GroupState is what a FIFO group of a sample is doing, told from its head message.
type GroupState string

// The states of a group: its head was never delivered and waits for a consumer; its head failed
// once and waits for its next delivery; or its head keeps failing while messages wait behind it.
// A dead-letter queue's groups are dead-lettered: their calls failed in their source and moved
// here, where nothing delivers them again; they keep their order until a redrive sends them back.
const (
	GroupWaiting      GroupState = "waiting"
	GroupRetrying     GroupState = "retrying"
	GroupBlocked      GroupState = "blocked"
	GroupDeadLettered GroupState = "dead-lettered"
)

// Groups is GET /api/v1/queues/{queue}/groups.
type Groups struct {
	Queue string `json:"queue"`
	// DeadLetterQueue: the queue is a dead-letter queue, whose groups are GroupDeadLettered.
	DeadLetterQueue bool       `json:"deadLetterQueue"`
	SampledAt       *time.Time `json:"sampledAt"` // null before the first sample
	Seen            int        `json:"seen"`
	ApproxVisible   int64      `json:"approxVisible"`
	Coverage        float64    `json:"coverage"`
	Next            SampleDue  `json:"next"`
	Groups          []Group    `json:"groups"` // never nil; oldest first
}

// SampleDue says when the next message sample of a queue comes, so that a page showing an
// older sample beside a live depth says how old it may get.
type SampleDue struct {
	// At is when the next sample is due; null when none is coming (sampling is off or paused)
	// or the collector's cadence is not known yet.
	At *time.Time `json:"at"`
	// Every is the spacing of the queue's samples, in seconds; 0 when not known.
	Every int64 `json:"everySeconds"`
	// Paused says why sampling waits, as PeekStatus.Paused; Off is true when the queue is not
	// sampled at all.
	Paused string `json:"paused,omitempty"`
	Off    bool   `json:"off,omitempty"`
}

// Message is a sampled message.
type Message struct {
	Cursor          string `json:"-"`
	MessageID       string `json:"messageId"`
	GroupID         string `json:"groupId,omitempty"`
	DeduplicationID string `json:"deduplicationId,omitempty"`
	SequenceNumber  string `json:"sequenceNumber,omitempty"`
	// Receives are its receives, all, its consumers' and toolq's, as every page shows them.
	Receives     Receives `json:"receives"`
	ReceiveCount int      `json:"receiveCount"` // Receives.Consumers, kept for older clients
	// OwnReceives is how often toolq received the message since it arrived in the queue, this
	// sample's receive included: Receives.Toolq, kept for older clients.
	OwnReceives int `json:"ownReceives"`
	// OwnReceiveLimit is how often toolq may receive it (maxReceiveCount − 2, so that its
	// consumers keep a try and a retry), or null on a queue without a RedrivePolicy. At the limit
	// toolq pauses sampling the queue while the message is in it.
	OwnReceiveLimit     *int       `json:"ownReceiveLimit"`
	SentAt              *time.Time `json:"sentAt"`
	FirstReceivedAt     *time.Time `json:"firstReceivedAt"`
	AgeSeconds          float64    `json:"ageSeconds"`
	DeadLetterSourceARN string     `json:"deadLetterSourceArn,omitempty"`
	DeadLetterSource    string     `json:"deadLetterSource,omitempty"` // the source queue's name
	ToolName            string     `json:"toolName,omitempty"`
	ToolCallID          string     `json:"toolCallId,omitempty"`
	SessionID           string     `json:"sessionId,omitempty"`
	// Dimensions are the tool call's named dimensions that it has a value for; never nil.
	Dimensions map[string]string `json:"dimensions"`
	// Reason is why the call failed, where the message says: EventBridge's failure attributes,
	// or the error dimension; null otherwise.
	Reason         *FailureReason     `json:"reason"`
	NearMaxReceive bool               `json:"nearMaxReceive"`
	Attributes     []MessageAttribute `json:"attributes"` // never nil
	// Traces are its trace contexts (a traceparent attribute, its AWSTraceHeader), with their
	// links under --trace-url; never nil.
	Traces        []MessageTrace `json:"traces"`
	BodyPreview   string         `json:"bodyPreview"` // the first 200 characters, one line
	Body          string         `json:"body"`
	BodySize      int            `json:"bodySize"`
	BodyTruncated bool           `json:"bodyTruncated"`
	SampledAt     time.Time      `json:"sampledAt"`
}

// Receives are a message's receives, counted one way on every page and in the API. All is what
// SQS counted (ApproximateReceiveCount) when toolq last received the message; Toolq is how often
// toolq received it since it arrived in this queue, that receive included; Consumers is the
// rest, All − Toolq: its consumers' tries, and in a dead-letter queue every receive before the
// message moved there. Max is the queue's maxReceiveCount, nil without a RedrivePolicy: the
// receive that would take All past it moves the message to the dead-letter queue instead.
type Receives struct {
	All       int  `json:"all"`
	Consumers int  `json:"consumers"`
	Toolq     int  `json:"toolq"`
	Max       *int `json:"max"`
}

// receivesOf counts a message's receives from what a sample stored of it: the receives but
// toolq's, and toolq's own; maxReceiveCount is its queue's (0 without a RedrivePolicy).
func receivesOf(consumers, toolq, maxReceiveCount int) Receives {
	r := Receives{All: consumers + toolq, Consumers: consumers, Toolq: toolq}
	if maxReceiveCount > 0 {
		r.Max = &maxReceiveCount
	}
	return r
}

// OwnReceivesLeft is how many more times toolq may receive m, and whether a limit applies.
func (m Message) OwnReceivesLeft() (left int, limited bool) {
	if m.OwnReceiveLimit == nil {
		return 0, false
	}
	return max(*m.OwnReceiveLimit-m.OwnReceives, 0), true
}

// MessageAttribute is one SQS message attribute.
type MessageAttribute struct {
	Name     string `json:"name"`
	DataType string `json:"dataType"`
	Value    string `json:"value"`
}

// FailureReason is why a dead-lettered tool call failed, as the message itself says it.
type FailureReason struct {
	// Source is "eventbridge" (the ERROR_CODE, ERROR_MESSAGE, RULE_ARN, TARGET_ARN and
	// RETRY_ATTEMPTS attributes EventBridge sets on events it could not deliver) or "dimension"
	// (the configured error dimension).
	Source        string `json:"source"`
	Code          string `json:"code"`
	Message       string `json:"message,omitempty"`
	Dimension     string `json:"dimension,omitempty"` // the error dimension's name
	RuleARN       string `json:"ruleArn,omitempty"`
	TargetARN     string `json:"targetArn,omitempty"`
	RetryAttempts *int   `json:"retryAttempts,omitempty"`
}

// Text is the reason on one line: its code, then its message.
func (r FailureReason) Text() string {
	if r.Message == "" || r.Message == r.Code {
		return r.Code
	}
	return r.Code + ": " + r.Message
}

// MessageQuery selects sampled messages: ToolName, Dimensions (by name, each a value) and
// Search (a substring of the body, the ids or a dimension value) filter; GroupBy counts the kept
// messages by "toolName" or a dimension's name; Limit (default 50, at most 500) and Cursor (from a
// previous page's NextCursor) paginate.
type MessageQuery struct {
	ToolName    string
	NearMaxOnly bool
	Dimensions  map[string]string
	Search      string
	GroupBy     string
	Limit       int
	Cursor      string
}

// ToolCount is how many sampled messages carry one tool name.
type ToolCount struct {
	ToolName string `json:"toolName"`
	Count    int    `json:"count"`
}

// MessagePage is GET /api/v1/queues/{queue}/messages.
type MessagePage struct {
	Queue         string      `json:"queue"`
	SampledAt     *time.Time  `json:"sampledAt"`
	Seen          int         `json:"seen"`
	ApproxVisible int64       `json:"approxVisible"`
	Coverage      float64     `json:"coverage"`
	Next          SampleDue   `json:"next"`
	Tools         []ToolCount `json:"tools"` // never nil; the whole sample, whatever the filters
	// Matched is how many messages of the sample the filters keep, over every page.
	Matched int `json:"matched"`
	// Dimensions name the dimensions a page can group and filter by; never nil.
	Dimensions []string `json:"dimensions"`
	// GroupBy and Groups: the kept messages counted by one field, largest first, when asked.
	GroupBy    string       `json:"groupBy,omitempty"`
	Groups     []ValueGroup `json:"groups"`   // never nil; empty without GroupBy
	Messages   []Message    `json:"messages"` // never nil
	NextCursor string       `json:"nextCursor"`
}

// ValueGroup is how many sampled messages share one value of a field (a tool name, a
// dimension), and when the first and the last of them were sent.
type ValueGroup struct {
	Value       string     `json:"value"` // "" for the messages without the field
	Count       int        `json:"count"`
	FirstSentAt *time.Time `json:"firstSentAt"`
	LastSentAt  *time.Time `json:"lastSentAt"`
}

// DimensionTop is a dimension's most frequent values in a sample.
type DimensionTop struct {
	Name   string       `json:"name"`
	Values []ValueGroup `json:"values"` // never nil; largest first, at most a few
	Others int          `json:"others"` // messages with a value not listed
}

// Triage is what a dead-letter queue's newest sample says went wrong: which tools, which values
// of each dimension, how much of the queue the sample saw. The summary, the alerts and the DLQ
// section of a queue's page show it.
type Triage struct {
	SampledAt     *time.Time     `json:"sampledAt"` // null before the first sample
	Seen          int            `json:"seen"`
	ApproxVisible int64          `json:"approxVisible"`
	Coverage      float64        `json:"coverage"`
	Tools         []ToolCount    `json:"topTools"`      // never nil; largest first
	OtherTools    int            `json:"otherTools"`    // messages of the tools not listed
	Dimensions    []DimensionTop `json:"topDimensions"` // never nil; in the configured order
	// Reasons are the most frequent failure reasons (their Text), largest first; never nil.
	Reasons []ValueGroup `json:"topReasons"`
}

// Redrive is a move task as the API and the redrive panel show it.
type Redrive struct {
	// ID is the move task's id in toolq (GET /api/v1/queues/{queue}/redrives/{id}).
	ID int64 `json:"id"`
	// Kind is "moveTask" for an SQS move task of the whole queue, "selection" for a selective
	// redrive (toolq's own job), which Selection then describes.
	Kind                 string   `json:"kind"`
	TaskHandle           string   `json:"taskHandle,omitempty"`
	Status               string   `json:"status"`
	SourceARN            string   `json:"sourceArn"`
	DestinationARN       string   `json:"destinationArn,omitempty"` // empty: original sources
	MaxMessagesPerSecond *int     `json:"maxMessagesPerSecond"`
	Moved                int64    `json:"moved"`
	ToMove               int64    `json:"toMove"`
	Percent              float64  `json:"percent"`       // 0..100
	RatePerSecond        float64  `json:"ratePerSecond"` // observed: moved / elapsed
	SecondsLeft          *float64 `json:"secondsLeft"`   // null when unknown or finished
	FailureReason        string   `json:"failureReason,omitempty"`
	// FailureAdvice says, for a failed task, what to do about its FailureReason: one sentence,
	// for any reason SQS gives (MoveTaskFailureAdvice).
	FailureAdvice string    `json:"failureAdvice,omitempty"`
	StartedAt     time.Time `json:"startedAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
	Running       bool      `json:"running"`
	// Outcome is what came back of it, as of the snapshot: null for a redrive toolq did not
	// remember (one of those older than its DLQ's ten newest, or one it has just started).
	Outcome *RedriveOutcome `json:"outcome"`
	// Selection is a selective redrive's selection and counts; absent for a move task.
	Selection *SelectionJob `json:"selection,omitempty"`
}

// SelectionJob is what a selective redrive chose and how far it got: Moved (the Redrive's) of
// Matched were sent and deleted from the DLQ; Held messages did not match and were held until
// the scan ended, Released of them are visible again; Failed matched but could not be moved and
// stay in the DLQ; NotReached is how many the scan could not reach (it stopped at the in-flight
// limit). Matched = Moved + Failed once the job has ended, unless it was cancelled.
type SelectionJob struct {
	Tools      []string            `json:"tools,omitempty"`
	Dimensions map[string][]string `json:"dimensions,omitempty"`
	Reasons    []string            `json:"reasons,omitempty"`
	Q          string              `json:"q,omitempty"`
	MessageIDs []string            `json:"messageIds,omitempty"`
	Groups     []string            `json:"groups,omitempty"`
	Actor      string              `json:"actor"`
	Matched    int64               `json:"matched"`
	Held       int64               `json:"held"`
	Released   int64               `json:"released"`
	Failed     int64               `json:"failed"`
	NotReached int64               `json:"notReached"`
}

// AuditEntry is one row of the audit log.
type AuditEntry struct {
	ID        int64     `json:"id"`
	At        time.Time `json:"at"`
	Actor     string    `json:"actor"`
	ActorKind string    `json:"actorKind"`
	// TokenID is the store id of the actor's API token (actorKind "token"), absent for other
	// kinds: tokens are named by people, and a revoked token's name may be given to a new one.
	TokenID int64          `json:"tokenId,omitempty"`
	Role    string         `json:"role"`
	Action  string         `json:"action"`
	Queue   string         `json:"queue"`
	Params  map[string]any `json:"params"` // never nil
	// Result is "intent" for what an action was about to ask of AWS, then its outcome:
	// "accepted", "refused", "failed", or "repeated" for a start answered by its idempotency key.
	Result string `json:"result"`
	Detail string `json:"detail"`
	// IntentID is, on an outcome, the id of the intent entry it ends; null otherwise.
	IntentID *int64 `json:"intentId"`
	// Code is a refusal's or failure's stable error code, as the API answered it.
	Code string `json:"code,omitempty"`
	// IdempotencyKey is the key a start carried, on its intent and on a repeat.
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

// Totals sums the overview.
type Totals struct {
	Queues      int   `json:"queues"`
	Visible     int64 `json:"visible"`
	InFlight    int64 `json:"inFlight"`
	Delayed     int64 `json:"delayed"`
	DLQMessages int64 `json:"dlqMessages"`
	Unknown     int   `json:"unknown"`
	Warning     int   `json:"warning"`
	Critical    int   `json:"critical"`
	// Misconfigured counts the queues the advisor found something on.
	Misconfigured int `json:"misconfigured"`
}

// Cost is the estimated AWS cost per day of the collector.
type Cost struct {
	TotalUSDPerDay      float64 `json:"totalUsdPerDay"`
	SQSUSDPerDay        float64 `json:"sqsUsdPerDay"`
	CloudWatchUSDPerDay float64 `json:"cloudWatchUsdPerDay"`
	SQSRequestsPerDay   float64 `json:"sqsRequestsPerDay"`
	MetricsPerDay       float64 `json:"metricsPerDay"`
	// AlarmRequestsPerDay are the DescribeAlarms calls (in CloudWatchUSDPerDay);
	// FreeRequestsPerDay the Lambda and EventBridge listings, which AWS does not bill.
	AlarmRequestsPerDay float64    `json:"alarmRequestsPerDay"`
	FreeRequestsPerDay  float64    `json:"freeRequestsPerDay"`
	At                  *time.Time `json:"at"`
	// Loops is the cost of each collector loop; never nil.
	Loops []LoopCost `json:"loops"`
	// Freshness says what the cadences priced buy; BudgetUSDPerDay is the budget they were
	// chosen for (0: none), OverBudget that even the slowest cost more.
	Freshness       string  `json:"freshness,omitempty"`
	BudgetUSDPerDay float64 `json:"budgetUsdPerDay,omitempty"`
	OverBudget      bool    `json:"overBudget,omitempty"`
	// Accounts is the estimate split by configured account, in their order; never nil, empty
	// without configured accounts.
	Accounts []AccountCost `json:"accounts"`
}

// AccountCost is what one configured account's queues and regions cost a day.
type AccountCost struct {
	Account             string  `json:"account"`
	TotalUSDPerDay      float64 `json:"totalUsdPerDay"`
	SQSUSDPerDay        float64 `json:"sqsUsdPerDay"`
	CloudWatchUSDPerDay float64 `json:"cloudWatchUsdPerDay"`
	SQSRequestsPerDay   float64 `json:"sqsRequestsPerDay"`
	MetricsPerDay       float64 `json:"metricsPerDay"`
}

// LoopCost is what one collector loop costs a day.
type LoopCost struct {
	Loop              string  `json:"loop"` // discovery, attributes, metrics, peek, movetasks
	USDPerDay         float64 `json:"usdPerDay"`
	SQSRequestsPerDay float64 `json:"sqsRequestsPerDay"`
	MetricsPerDay     float64 `json:"metricsPerDay"`
}

// Overview is the overview page: every queue, unhealthy first, then by account, region and name.
type Overview struct {
	Queues    []QueueSummary `json:"queues"`
	Totals    Totals         `json:"totals"`
	Freshness Freshness      `json:"freshness"`
	Cost      Cost           `json:"cost"`
	// Sight is what toolq could not read in its last cycles, worst first; never nil.
	Sight []SightProblem `json:"sight"`
	// Scopes are the queues grouped by account and region, in that order; never nil.
	Scopes []ScopeSummary `json:"scopes"`
	// Problems is what needs a person, each problem once, critical first; never nil.
	Problems []Problem `json:"problems"`
}

// ScopeSummary is one account's region on the overview: how many queues, how many unhealthy.
type ScopeSummary struct {
	Account   string `json:"account"`
	AccountID string `json:"accountId"`
	Region    string `json:"region"`
	Queues    int    `json:"queues"`
	Critical  int    `json:"critical"`
	Warning   int    `json:"warning"`
	// Blind: toolq cannot see this account's region (see Freshness.Blind).
	Blind bool `json:"blind"`
}

// Problem is one thing the overview says needs a person, counted once: a dead-letter queue
// holding messages is its DLQ's problem (the source's row only points to it), a blocked session
// its queue's, a region toolq cannot read a problem of its own.
type Problem struct {
	Kind     ProblemKind  `json:"kind"`
	Severity HealthStatus `json:"severity"` // warning or critical
	// Queue is the queue's name, "" for a problem of a region; Ref names it in links.
	Queue  string `json:"queue,omitempty"`
	Ref    string `json:"-"`
	Region string `json:"region"`
	// Text says what is wrong in one line, safe to show (the health reasons of its kind).
	Text string `json:"text"`
	// size and growing order the problems of one kind and severity: growing first, then the
	// largest (the deepest dead-letter queue, the most blocked sessions, the oldest message).
	size    float64
	growing bool
}

// ProblemKind names the health rule a problem comes from.
type ProblemKind string

// The kinds of problems, in the order the overview lists problems of one severity: what loses or
// holds back tool calls first, then what toolq cannot see, then the rest.
const (
	ProblemDeadLetter ProblemKind = "dead-letter"     // a DLQ holds messages, or grows
	ProblemBlocked    ProblemKind = "blocked-session" // a FIFO session waits behind a failing head
	ProblemSight      ProblemKind = "cannot-see"      // toolq cannot read a region or an operation
	ProblemStale      ProblemKind = "stale"           // a queue's data is old or missing
	ProblemOldest     ProblemKind = "oldest-message"  // the oldest message is past the threshold
	ProblemNearMax    ProblemKind = "near-max-receive"
	ProblemErrors     ProblemKind = "collector-errors"
	ProblemRetention  ProblemKind = "retention"
	ProblemGone       ProblemKind = "gone"
	// ProblemUnknown: a rule could not be checked (no CloudWatch datapoint yet); the row says
	// so, and it is no problem a person must act on.
	ProblemUnknown ProblemKind = "unknown"
)

// SightProblem is something toolq could not read in its last cycle in one region.
type SightProblem struct {
	Region string `json:"region"`
	// Blind: toolq cannot see the region at all (its queues cannot be listed, or none could be
	// read); what the pages show of it is not current.
	Blind      bool       `json:"blind"`
	Problem    string     `json:"problem"`             // one line, safe to show
	Operation  string     `json:"operation,omitempty"` // the AWS operation that failed
	Code       string     `json:"code,omitempty"`      // its error code
	Permission string     `json:"permission,omitempty"`
	Since      *time.Time `json:"since"` // when that operation last succeeded; null when never
}

// Summary is GET /api/v1/summary: what a bot posts as it is.
type Summary struct {
	GeneratedAt time.Time `json:"generatedAt"`
	Freshness   Freshness `json:"freshness"`
	// Totals count the queues by health and sum their depths: the healthy ones are counted,
	// not listed.
	Totals Totals `json:"totals"`
	// Unhealthy are the queues whose health is not ok, worst first: what Text says. The API
	// lists them, and every queue in Queues, only when asked (?all=true), so that a bad day's
	// summary stays a size a bot reads every minute.
	Unhealthy        []QueueSummary `json:"unhealthy,omitempty"`
	Queues           []QueueSummary `json:"queues,omitempty"`
	DeadLetterQueues []DLQDepth     `json:"deadLetterQueues"` // never nil
	RunningRedrives  []Redrive      `json:"runningRedrives"`  // never nil
	// RedriveOutcomes are, for each dead-letter queue, what came back of its newest redrive toolq
	// can count, while its window is open, the most bounced first; never nil.
	RedriveOutcomes []QueueRedriveOutcome `json:"redriveOutcomes"`
	// Cost is what watching costs in AWS API calls per day, at list prices.
	Cost Cost `json:"cost"`
	// Sight is what toolq could not read in its last cycles; never nil.
	Sight []SightProblem `json:"sight"`
	// Problems is what needs a person, each problem once, critical first: the overview's list.
	Problems []Problem `json:"problems"`
}

// DLQDepth is one dead-letter queue's depth for the summary, with what its newest sample says.
type DLQDepth struct {
	Name    string `json:"name"`
	Visible int64  `json:"visible"`
	// Ref is how links name the queue (its name, or its ARN when the name is ambiguous).
	Ref string `json:"-"`
	id  int64
	// Triage is what its newest sample says went wrong: for the summaryLines deepest only.
	Triage *Triage `json:"triage,omitempty"`
	// PageURL is the queue's page in the dashboard, set by the server from --public-url or the
	// request's own address.
	PageURL string `json:"pageUrl,omitempty"`
}

// QueueQuery filters the queue list: Health keeps those statuses (empty: all), DLQOnly keeps
// dead-letter queues, Misconfigured those with advice.
type QueueQuery struct {
	Health  []HealthStatus
	DLQOnly bool
	// Account keeps the queues of one account, by name or id; Region those of one region.
	// Empty: all.
	Account, Region string
	// Misconfigured keeps the queues the advisor found something on.
	Misconfigured bool
}
