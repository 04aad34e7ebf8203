package views

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// The configuration advisor: rules taken from the seeds' five patterns (standard queue, FIFO per
// session, DLQ with replay, EventBridge with target DLQs, Lambda's event source mapping), each
// checked against one queue's facts as the collector stored them. advise is a pure function of
// those facts, so that each rule is tested alone: it fires on the facts that break it and clears
// on the facts that follow it. Advice is about configuration; health (health.go) is about what
// the queue is doing now, and neither raises the other.

// AdviceSeverity says how much a piece of advice matters: critical where messages or events are
// lost, tool calls run twice or someone should be looking now, warning where failures hide or
// cost more than they should, info where a setting only weakens a safety net (no rule is info
// today; the level is there for rules to come and for the API's consumers to switch on).
//
// It is the alerts' severity (AlertSeverity, ordered by Rank): one scale for both.
type AdviceSeverity = AlertSeverity

// Advice severities, worst last.
const (
	AdviceInfo     = SeverityInfo
	AdviceWarning  = SeverityWarning
	AdviceCritical = SeverityCritical
)

// AdviceRule is one rule of the advisor: its stable id (what --advice-off, the API and the
// Prometheus label use), its severity, why it matters in one line, and the pattern it belongs to
// with the page of AWS's documentation that teaches it.
type AdviceRule struct {
	ID       string         `json:"id"`
	Severity AdviceSeverity `json:"severity"`
	Why      string         `json:"why"`
	// Source names the pattern the rule belongs to ("Dead-letter queue and redrive"), SourceURL
	// the page of AWS's documentation that says what the rule checks.
	Source    string `json:"source"`
	SourceURL string `json:"sourceUrl"`
	// Off: the operator turned the rule off (--advice-off); it is not evaluated.
	Off bool `json:"off"`
	// check fires the rule on one queue's facts: what was found, and the fix (an aws CLI
	// command or a CDK line), ok false when the rule holds.
	check func(f *adviceFacts, th *Thresholds) (finding, fix string, ok bool)
}

// Advice is one rule that fires on one queue.
type Advice struct {
	Rule     string         `json:"rule"`
	Severity AdviceSeverity `json:"severity"`
	Queue    string         `json:"queue"`
	QueueARN string         `json:"queueArn"`
	Region   string         `json:"region"`
	// Finding is what was found on this queue, one line.
	Finding string `json:"finding"`
	// Why is the rule's reason, one line.
	Why string `json:"why"`
	// Fix is an aws CLI command or a CDK line that makes the rule hold; values from AWS in it are
	// quoted for a POSIX shell.
	Fix string `json:"fix"`
	// Source and SourceURL are the rule's (AdviceRule).
	Source    string `json:"source"`
	SourceURL string `json:"sourceUrl"`
}

// The patterns of tool-call queues the rules belong to (docs/advisor.md), as the rules name them.
const (
	patternStandard = "Standard queue"
	patternFIFO     = "FIFO queue per session"
	patternDLQ      = "Dead-letter queue and redrive"
	patternEventBus = "EventBridge targets with dead-letter queues"
	patternLambda   = "Lambda event source mapping"
	patternQuotas   = "SQS quotas"
)

// Pages of AWS's documentation the rules cite: the SQS Developer Guide, and for what Lambda and
// EventBridge own, their guides.
const (
	awsSQSGuide        = "https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/"
	awsDLQ             = awsSQSGuide + "sqs-dead-letter-queues.html"
	awsDLQRetention    = awsSQSGuide + "setting-up-dead-letter-queue-retention.html"
	awsDLQConfigure    = awsSQSGuide + "sqs-configure-dead-letter-queue.html"
	awsDLQRedrive      = awsSQSGuide + "sqs-configure-dead-letter-queue-redrive.html"
	awsDLQAlarms       = awsSQSGuide + "dead-letter-queues-alarms-cloudwatch.html"
	awsMetrics         = awsSQSGuide + "sqs-available-cloudwatch-metrics.html"
	awsHighThroughput  = awsSQSGuide + "high-throughput-fifo.html"
	awsFIFOTerms       = awsSQSGuide + "FIFO-key-terms.html"
	awsLongPolling     = awsSQSGuide + "best-practices-setting-up-long-polling.html"
	awsQueueQuotas     = awsSQSGuide + "quotas-queues.html"
	awsLambdaTrigger   = awsSQSGuide + "sqs-configure-lambda-function-trigger.html"
	awsLambdaErrors    = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html"
	awsLambdaScaling   = "https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-scaling.html"
	awsEventBridgeDLQ  = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-event-delivery.html"
	awsEventBridgeRetr = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rule-retry-policy.html"
	awsEventBridgeBus  = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-what-is-how-it-works-concepts.html"
)

// Defaults of the advisor's thresholds (Thresholds).
const (
	// DefaultInFlightLimit is SQS's in-flight quota per queue (120,000 messages).
	DefaultInFlightLimit = 120_000
	// DefaultEmptyReceivesPerMinute is how many empty receives a minute, on average over
	// shortPollWindow, mark a short-polling consumer: one long-polling worker makes 3, one that
	// short-polls about 100 (the seeds' 144,000 a day).
	DefaultEmptyReceivesPerMinute = 30
)

// Rule thresholds that are the seeds' numbers, not options.
const (
	inFlightShare       = 0.8 // of the in-flight limit
	maxReceiveCountHigh = 10
	sixfold             = 6 // the queue's visibility timeout against a Lambda consumer's timeout
	maxEventAge         = 6 * time.Hour
	defaultEventAge     = 24 * time.Hour // EventBridge's MaximumEventAgeInSeconds when unset
	hotGroupShare       = 0.8            // of a FIFO queue's visible backlog
	hotGroups           = 3
	hotGroupMinBacklog  = 20
	shortPollWindow     = 15 * time.Minute
	dlqRetention        = 14 * 24 * time.Hour // the seeds' advice: the maximum
	receiveBatch        = 10                  // the most messages one receive, and so one sample of one FIFO group, holds
)

// adviceFacts is everything the rules look at for one queue, gathered from the store beforehand.
type adviceFacts struct {
	Now   time.Time
	Queue store.Queue
	// DLQ is the watched queue its RedrivePolicy names; nil without one or when not watched.
	DLQ *store.Queue
	// Sources are, for a dead-letter queue, its watched sources.
	Sources []store.Queue
	Latest  *store.AttributeSample
	// EmptyReceives are its newest NumberOfEmptyReceives datapoints: those within
	// shortPollWindow of the newest, read as far back as two of the collector's counter asks.
	EmptyReceives []store.MetricPoint
	// Bodies are bodies of its messages as sampled: its own newest sample's, else those its DLQ's
	// newest sample holds from it.
	Bodies []string
	// Sample and Groups are its own newest sample and that sample's FIFO groups.
	Sample *store.Sample
	Groups []store.GroupBacklog
	// Mappings are the Lambda event source mappings that drain it.
	Mappings []store.EventSourceMapping
	// Feeds are the enabled EventBridge rule targets that deliver to it.
	Feeds []store.EventBridgeTarget
	// Alarms are the CloudWatch alarms on its metrics; AlarmsRead says whether DescribeAlarms
	// answered in its region (its newest call succeeded), without which no alarm rule is checked.
	Alarms     []store.QueueAlarm
	AlarmsRead bool
	// Redrives are a dead-letter queue's newest move tasks with what came back of each, newest
	// first.
	Redrives []Redrive
}

// isDeadLetter reports whether the facts' queue is a dead-letter queue of either kind.
func (f *adviceFacts) isDeadLetter() bool { return deadLetter(f.Queue) }

// source reports whether the queue is a working queue whose attributes have been read: the
// queues the source-side rules are about.
func (f *adviceFacts) source() bool {
	return !f.isDeadLetter() && !f.Queue.AttributesAt.IsZero()
}

// deadLetter reports whether q is a dead-letter queue: some queue's RedrivePolicy names it, or
// some EventBridge target's DeadLetterConfig does.
func deadLetter(q store.Queue) bool { return q.IsDeadLetterQueue() || q.IsEventBridgeDeadLetterQueue() }

// AdviceRules are every rule of the advisor, in the order the pages list them.
var AdviceRules = []AdviceRule{
	{ID: "no-dlq", Severity: AdviceCritical, Source: patternDLQ, SourceURL: awsDLQ,
		Why:   "without a dead-letter queue a message that always fails is retried until its retention ends, and a worker that drops it loses it",
		check: checkNoDLQ},
	{ID: "dlq-retention-not-longer", Severity: AdviceCritical, Source: patternDLQ, SourceURL: awsDLQRetention,
		Why:   "a standard queue's message keeps its enqueue time when it moves, so a DLQ that keeps messages no longer than its source can drop them on arrival",
		check: checkDLQRetention},
	{ID: "max-receive-count-1", Severity: AdviceWarning, Source: patternDLQ, SourceURL: awsDLQ,
		Why:   "maxReceiveCount 1 sends a transient failure (a throttle, a timeout) to the DLQ at once: false alarms",
		check: checkMaxReceiveOne},
	{ID: "max-receive-count-high", Severity: AdviceWarning, Source: patternDLQ, SourceURL: awsDLQ,
		Why:   "maxReceiveCount 10 or more lets a bad message loop for many deliveries before it is quarantined: slow detection",
		check: checkMaxReceiveHigh},
	{ID: "fifo-dlq-not-fifo", Severity: AdviceCritical, Source: patternDLQ, SourceURL: awsDLQConfigure,
		Why:   "the dead-letter queue of a FIFO queue must also be a FIFO queue; SQS refuses the policy, so failures have nowhere to go",
		check: checkFIFODLQ},
	{ID: "fifo-high-throughput-half", Severity: AdviceWarning, Source: patternFIFO, SourceURL: awsHighThroughput,
		Why:   "high-throughput FIFO needs both DeduplicationScope=messageGroup and FifoThroughputLimit=perMessageGroupId; one alone does nothing",
		check: checkHighThroughputHalf},
	{ID: "content-dedup-changing-body", Severity: AdviceWarning, Source: patternFIFO, SourceURL: awsFIFOTerms,
		Why:   "content-based deduplication hashes the body, so a field that changes between retries (a timestamp, a request id) defeats it and a retried call runs twice",
		check: checkContentDedup},
	{ID: "short-polling", Severity: AdviceWarning, Source: patternStandard, SourceURL: awsLongPolling,
		Why:   "ReceiveMessageWaitTimeSeconds 0 makes every empty receive return at once: about 144,000 billed calls a day per worker",
		check: checkShortPolling},
	{ID: "dlq-no-alarm", Severity: AdviceWarning, Source: patternDLQ, SourceURL: awsDLQAlarms,
		Why:   "a dead-letter queue without an alarm on its depth is found only when someone looks; the seeds alarm within a minute of the first message",
		check: checkDLQNoAlarm},
	{ID: "dlq-alarm-misses-moves", Severity: AdviceWarning, Source: patternDLQ, SourceURL: awsMetrics,
		Why:   "NumberOfMessagesSent does not count the messages SQS moves to a DLQ after failed receives, so that alarm never sees a redrive policy's failures; alarm on the DLQ's depth",
		check: checkDLQAlarmOnSentOnly},
	{ID: "alarm-firing", Severity: AdviceCritical, Source: patternDLQ, SourceURL: awsDLQAlarms,
		Why:   "an alarm on this queue is in ALARM: someone should be looking now",
		check: checkAlarmFiring},
	{ID: "redrives-bounce-back", Severity: AdviceWarning, Source: patternDLQ, SourceURL: awsDLQRedrive,
		Why:   "most of what the last redrive replayed failed again and is back: the cause is not fixed, and another redrive replays the same calls again",
		check: checkRedrivesBounceBack},
	{ID: "inflight-near-limit", Severity: AdviceWarning, Source: patternQuotas, SourceURL: awsQueueQuotas,
		Why:   "past 120,000 messages in flight SQS refuses receives (OverLimit): consumers stall while messages wait",
		check: checkInFlight},
	{ID: "hot-fifo-groups", Severity: AdviceWarning, Source: patternFIFO, SourceURL: awsFIFOTerms,
		Why:   "a FIFO group is delivered one message at a time, so a few groups holding most of the backlog serialise the queue behind a few sessions",
		check: checkHotGroups},
	{ID: "esm-no-batch-item-failures", Severity: AdviceWarning, Source: patternLambda, SourceURL: awsLambdaErrors,
		Why:   "without ReportBatchItemFailures one failed message makes the whole batch retry, re-running the tool calls that succeeded",
		check: checkBatchItemFailures},
	{ID: "esm-no-maximum-concurrency", Severity: AdviceWarning, Source: patternLambda, SourceURL: awsLambdaScaling,
		Why:   "without ScalingConfig.MaximumConcurrency a burst scales the mapping to the function's whole concurrency and saturates downstream rate limits",
		check: checkMaximumConcurrency},
	{ID: "visibility-below-6x-lambda-timeout", Severity: AdviceCritical, Source: patternLambda, SourceURL: awsLambdaTrigger,
		Why:   "a visibility timeout under 6× the function's timeout expires while Lambda still runs the message, so another invocation runs it too",
		check: checkVisibilityVsLambda},
	{ID: "esm-disabled", Severity: AdviceWarning, Source: patternLambda, SourceURL: awsLambdaTrigger,
		Why:   "a disabled event source mapping drains nothing: the queue only grows",
		check: checkMappingDisabled},
	{ID: "esm-failing", Severity: AdviceCritical, Source: patternLambda, SourceURL: awsLambdaTrigger,
		Why:   "Lambda reports a problem polling the queue: no message reaches the function",
		check: checkMappingFailing},
	{ID: "eventbridge-target-no-dlq", Severity: AdviceCritical, Source: patternEventBus, SourceURL: awsEventBridgeDLQ,
		Why:   "an EventBridge target without a dead-letter queue drops the events it fails to deliver once retries end",
		check: checkTargetNoDLQ},
	{ID: "eventbridge-max-event-age-long", Severity: AdviceWarning, Source: patternEventBus, SourceURL: awsEventBridgeRetr,
		Why:   "EventBridge retries a failing target for up to 24 hours by default; a maxEventAge of 1 to 6 hours fails fast into the DLQ",
		check: checkMaxEventAge},
	{ID: "eventbridge-default-bus", Severity: AdviceWarning, Source: patternEventBus, SourceURL: awsEventBridgeBus,
		Why:   "the default bus carries every AWS service's events: application events there make patterns noisy and expose tool payloads to every rule",
		check: checkDefaultBus},
}

// AdviceRuleByID returns the rule with that id.
func AdviceRuleByID(id string) (AdviceRule, bool) {
	i := slices.IndexFunc(AdviceRules, func(r AdviceRule) bool { return r.ID == id })
	if i < 0 {
		return AdviceRule{}, false
	}
	return AdviceRules[i], true
}

// AdviceRuleIDs returns every rule's id, in order.
func AdviceRuleIDs() []string {
	ids := make([]string, 0, len(AdviceRules))
	for _, r := range AdviceRules {
		ids = append(ids, r.ID)
	}
	return ids
}

// advise applies every rule not in off to one queue's facts, worst first. A gone queue gets no
// advice: its configuration is history. Never nil.
func advise(f *adviceFacts, th *Thresholds, off map[string]bool) []Advice {
	out := []Advice{}
	if f.Queue.Gone() {
		return out
	}
	for _, r := range AdviceRules {
		if len(off) > 0 && off[r.ID] {
			continue
		}
		finding, fix, ok := r.check(f, th)
		if !ok {
			continue
		}
		out = append(out, Advice{
			Rule: r.ID, Severity: r.Severity, Queue: f.Queue.Name, QueueARN: f.Queue.ARN, Region: f.Queue.Region,
			Finding: finding, Why: r.Why, Fix: fix, Source: r.Source, SourceURL: r.SourceURL,
		})
	}
	slices.SortStableFunc(out, func(a, b Advice) int { return cmp.Compare(b.Severity.Rank(), a.Severity.Rank()) })
	return out
}

// The rules. Each returns what it found and the fix when it fires.

func checkNoDLQ(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !f.source() || q.Attributes["RedrivePolicy"] != "" {
		return "", "", false
	}
	finding := "no dead-letter queue (no RedrivePolicy)"
	if r, ok := retention(q); ok {
		finding += fmt.Sprintf(": a failing message is retried for %s", humanDuration(r))
	}
	dlqName := strings.TrimSuffix(q.Name, ".fifo") + "-dlq"
	create := "MessageRetentionPeriod=1209600"
	if q.FIFO {
		dlqName += ".fifo"
		create = "FifoQueue=true," + create
	}
	dlqARN := siblingARN(q.ARN, dlqName)
	fix := fmt.Sprintf("aws sqs create-queue --queue-name %s --attributes %s && %s",
		shellQuote(dlqName), create, setRedrivePolicy(q, dlqARN, 3))
	return finding, fix, true
}

func checkDLQRetention(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	src, own, theirs, short := retentionShortfall(q, f.Sources)
	if !short {
		return "", "", false
	}
	finding := fmt.Sprintf("keeps messages %s, not longer than source %s's %s", humanDuration(own), safetext.Line(src.Name, 80), humanDuration(theirs))
	fix := fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes MessageRetentionPeriod=%d",
		shellQuote(q.URL), int(dlqRetention/time.Second))
	return finding, fix, true
}

// retentionShortfall reports whether a standard dead-letter queue keeps messages no longer than
// one of its sources, and which: a message keeps its enqueue time when SQS moves it there, so it
// can expire on arrival. FIFO resets the time on the move. The health rule and the advisor share
// it.
func retentionShortfall(dlq store.Queue, sources []store.Queue) (src store.Queue, own, theirs time.Duration, short bool) {
	if !dlq.IsDeadLetterQueue() || dlq.FIFO {
		return store.Queue{}, 0, 0, false
	}
	own, ok := retention(dlq)
	if !ok {
		return store.Queue{}, 0, 0, false
	}
	for _, s := range sources {
		if theirs, ok := retention(s); ok && own <= theirs {
			return s, own, theirs, true
		}
	}
	return store.Queue{}, 0, 0, false
}

func checkMaxReceiveOne(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if q.DeadLetterTargetARN == "" || q.MaxReceiveCount != 1 {
		return "", "", false
	}
	return "maxReceiveCount is 1", setRedrivePolicy(q, q.DeadLetterTargetARN, 3), true
}

func checkMaxReceiveHigh(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if q.DeadLetterTargetARN == "" || q.MaxReceiveCount < maxReceiveCountHigh {
		return "", "", false
	}
	return fmt.Sprintf("maxReceiveCount is %d", q.MaxReceiveCount), setRedrivePolicy(q, q.DeadLetterTargetARN, 5), true
}

func checkFIFODLQ(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !q.FIFO || q.DeadLetterTargetARN == "" {
		return "", "", false
	}
	dlqFIFO := strings.HasSuffix(arn.QueueName(q.DeadLetterTargetARN), ".fifo")
	if f.DLQ != nil {
		dlqFIFO = f.DLQ.FIFO
	}
	if dlqFIFO {
		return "", "", false
	}
	name := strings.TrimSuffix(q.Name, ".fifo") + "-dlq.fifo"
	fix := fmt.Sprintf("aws sqs create-queue --queue-name %s --attributes FifoQueue=true,MessageRetentionPeriod=1209600 && %s",
		shellQuote(name), setRedrivePolicy(q, siblingARN(q.ARN, name), max(q.MaxReceiveCount, 3)))
	return fmt.Sprintf("its dead-letter queue %s is a standard queue", safetext.Line(arn.QueueName(q.DeadLetterTargetARN), 80)), fix, true
}

func checkHighThroughputHalf(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !q.FIFO {
		return "", "", false
	}
	scope := q.Attributes["DeduplicationScope"] == "messageGroup"
	limit := q.Attributes["FifoThroughputLimit"] == "perMessageGroupId"
	if scope == limit {
		return "", "", false
	}
	finding := "DeduplicationScope is messageGroup but FifoThroughputLimit is " + cmp.Or(safetext.Line(q.Attributes["FifoThroughputLimit"], 40), "not set")
	if limit {
		finding = "FifoThroughputLimit is perMessageGroupId but DeduplicationScope is " + cmp.Or(safetext.Line(q.Attributes["DeduplicationScope"], 40), "not set")
	}
	fix := fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes DeduplicationScope=messageGroup,FifoThroughputLimit=perMessageGroupId", shellQuote(q.URL))
	return finding, fix, true
}

// changingFields are body fields that differ between two sends of the same tool call: times and
// per-request ids. Matched at any depth, case and underscores aside (sentAt, sent_at).
var changingFields = map[string]bool{
	"sentat": true, "timestamp": true, "ts": true, "time": true, "createdat": true, "requestedat": true,
	"requestid": true, "traceid": true, "nonce": true, "attempt": true,
}

// changingField reports whether a body field's name is one of changingFields.
func changingField(key string) bool {
	return len(key) <= 32 && changingFields[strings.ReplaceAll(strings.ToLower(key), "_", "")]
}

func checkContentDedup(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !q.FIFO || q.Attributes["ContentBasedDeduplication"] != "true" {
		return "", "", false
	}
	var fields []string
	for _, b := range f.Bodies {
		for _, k := range changingKeys(b) {
			if !slices.Contains(fields, k) {
				fields = append(fields, k)
			}
		}
	}
	if len(fields) == 0 {
		return "", "", false
	}
	slices.Sort(fields)
	finding := fmt.Sprintf("ContentBasedDeduplication is on and sampled bodies carry %s", strings.Join(fields, ", "))
	fix := fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes ContentBasedDeduplication=false  # and send MessageDeduplicationId=toolCallId", shellQuote(q.URL))
	return finding, fix, true
}

// changingKeys returns the keys of a JSON body that match changingFields, made safe to show;
// nothing for a body that is not a JSON object.
func changingKeys(body string) []string {
	var v any
	if len(body) > 1<<20 || json.Unmarshal([]byte(body), &v) != nil {
		return nil
	}
	var out []string
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 4 {
			return
		}
		for k, child := range m {
			if changingField(k) {
				out = append(out, safetext.Line(k, 40))
			}
			walk(child, depth+1)
		}
	}
	walk(v, 0)
	return out
}

func checkShortPolling(f *adviceFacts, th *Thresholds) (string, string, bool) {
	q := f.Queue
	if !shortPolling(q) {
		return "", "", false
	}
	var sum float64
	var minutes float64
	for _, p := range f.EmptyReceives {
		if p.Period <= 0 {
			continue
		}
		sum += p.Value
		minutes += float64(p.Period) / 60
	}
	if minutes == 0 {
		return "", "", false
	}
	perMinute := sum / minutes
	if perMinute < th.EmptyReceivesPerMinute {
		return "", "", false
	}
	finding := fmt.Sprintf("ReceiveMessageWaitTimeSeconds is 0 and consumers made %.0f empty receives a minute (%s a day)", perMinute, formatCount(perMinute*24*60))
	fix := fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes ReceiveMessageWaitTimeSeconds=20", shellQuote(q.URL))
	return finding, fix, true
}

// depthAlarmMetrics are the metrics whose alarm tells of a dead-letter queue's arrivals.
var depthAlarmMetrics = []string{"ApproximateNumberOfMessagesVisible", "NumberOfMessagesSent"}

func checkDLQNoAlarm(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	if !f.isDeadLetter() || !f.AlarmsRead {
		return "", "", false
	}
	for _, a := range f.Alarms {
		if slices.Contains(depthAlarmMetrics, a.MetricName) {
			return "", "", false
		}
	}
	finding := "no CloudWatch alarm on ApproximateNumberOfMessagesVisible or NumberOfMessagesSent"
	if len(f.Alarms) > 0 {
		finding += fmt.Sprintf(" (its %s watch other metrics)", plural(int64(len(f.Alarms)), "alarm"))
	}
	return finding, depthAlarmFix(f.Queue), true
}

func checkDLQAlarmOnSentOnly(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !q.IsDeadLetterQueue() || !f.AlarmsRead {
		return "", "", false
	}
	sent := false
	for _, a := range f.Alarms {
		switch a.MetricName {
		case "ApproximateNumberOfMessagesVisible":
			return "", "", false
		case "NumberOfMessagesSent":
			sent = true
		}
	}
	if !sent {
		return "", "", false
	}
	return "its only depth alarm watches NumberOfMessagesSent", depthAlarmFix(q), true
}

// depthAlarmFix is the alarm the seeds advise on a dead-letter queue: its first message within a
// minute, on its depth (which counts moves, unlike NumberOfMessagesSent).
func depthAlarmFix(q store.Queue) string {
	return fmt.Sprintf("aws cloudwatch put-metric-alarm --alarm-name %s --namespace AWS/SQS --metric-name ApproximateNumberOfMessagesVisible "+
		"--dimensions Name=QueueName,Value=%s --statistic Maximum --period 60 --evaluation-periods 1 --threshold 1 "+
		"--comparison-operator GreaterThanOrEqualToThreshold --treat-missing-data notBreaching --alarm-actions \"$ALERT_TOPIC_ARN\"",
		shellQuote(q.Name+"-depth"), shellQuote(q.Name))
}

func checkAlarmFiring(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	if !f.AlarmsRead {
		return "", "", false
	}
	var firing []string
	for _, a := range f.Alarms {
		if a.State == "ALARM" && !slices.Contains(firing, a.AlarmName) {
			firing = append(firing, a.AlarmName)
		}
	}
	if len(firing) == 0 {
		return "", "", false
	}
	var finding strings.Builder
	for i, name := range firing {
		if i > 0 {
			finding.WriteString("; ")
		}
		finding.WriteString("alarm " + safetext.Line(name, 80) + " is in ALARM")
		for _, a := range f.Alarms {
			if a.AlarmName == name && !a.StateUpdatedAt.IsZero() {
				finding.WriteString(" since " + a.StateUpdatedAt.UTC().Format("Jan 2 15:04 UTC"))
				break
			}
		}
	}
	fix := fmt.Sprintf("aws cloudwatch describe-alarm-history --alarm-name %s --history-item-type StateUpdate --max-records 5", shellQuote(firing[0]))
	return finding.String(), fix, true
}

// redrivesLooked is how many of a DLQ's newest redrives the bounce-back rule names.
const redrivesLooked = 3

// checkRedrivesBounceBack fires when the newest ended redrive toolq can count bounced most of
// the messages it knew it moved (Thresholds.RedriveBounceShare), and says how the ones before
// it did.
func checkRedrivesBounceBack(f *adviceFacts, th *Thresholds) (string, string, bool) {
	var counted []Redrive
	for _, r := range f.Redrives {
		if o := r.Outcome; o != nil && !r.Running && o.State != OutcomeBlind && o.Remembered > 0 && len(counted) < redrivesLooked {
			counted = append(counted, r)
		}
	}
	if len(counted) == 0 || !counted[0].Outcome.MostBounced {
		return "", "", false
	}
	most := 0
	for _, r := range counted {
		if r.Outcome.MostBounced {
			most++
		}
	}
	last := counted[0].Outcome
	finding := fmt.Sprintf("its last redrive (%s) bounced %s of what toolq knew it moved: %s",
		counted[0].StartedAt.Format("2006-01-02 15:04 UTC"), percentText(last.BouncedShare), last.Line)
	if len(counted) > 1 {
		finding += fmt.Sprintf("; %d of its last %d redrives bounced most of theirs", most, len(counted))
	}
	fix := fmt.Sprintf("curl -s \"$TOOLQ_URL/api/v1/queues/%s/redrives/%d\"   # what came back, by tool and server: fix that first",
		url.PathEscape(f.Queue.Name), counted[0].ID)
	return finding, fix, true
}

func checkInFlight(f *adviceFacts, th *Thresholds) (string, string, bool) {
	if f.Latest == nil || float64(f.Latest.InFlight) < inFlightShare*float64(th.InFlightLimit) {
		return "", "", false
	}
	q := f.Queue
	finding := fmt.Sprintf("%s messages in flight, %.0f%% of the %s limit", formatCount(float64(f.Latest.InFlight)),
		100*float64(f.Latest.InFlight)/float64(th.InFlightLimit), formatCount(float64(th.InFlightLimit)))
	fix := fmt.Sprintf("aws cloudwatch put-metric-alarm --alarm-name %s --namespace AWS/SQS --metric-name ApproximateNumberOfMessagesNotVisible "+
		"--dimensions Name=QueueName,Value=%s --statistic Maximum --period 60 --evaluation-periods 5 --threshold %d "+
		"--comparison-operator GreaterThanOrEqualToThreshold --alarm-actions \"$ALERT_TOPIC_ARN\"  # and have consumers delete or release what they finish",
		shellQuote(q.Name+"-in-flight"), shellQuote(q.Name), int64(inFlightShare*float64(th.InFlightLimit)))
	return finding, fix, true
}

func checkHotGroups(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	q := f.Queue
	if !q.FIFO || f.isDeadLetter() || f.Sample == nil || len(f.Groups) == 0 {
		return "", "", false
	}
	backlog := f.Sample.ApproxVisible
	if backlog < hotGroupMinBacklog {
		return "", "", false
	}
	// A sample sees at most one receive (10 messages) of each group: a group seen at that cap
	// holds more. What the sample did not see is behind such groups, so the hottest groups'
	// share is what they showed plus the unseen rest, when few enough groups were capped to own
	// it.
	groups := slices.Clone(f.Groups)
	slices.SortFunc(groups, func(a, b store.GroupBacklog) int { return cmp.Compare(b.Messages, a.Messages) })
	capped := 0
	for _, g := range groups {
		if g.Messages >= receiveBatch {
			capped++
		}
	}
	if capped > hotGroups {
		return "", "", false
	}
	top := min(len(groups), hotGroups)
	held := int64(0)
	for _, g := range groups[:top] {
		held += int64(g.Messages)
	}
	if capped > 0 {
		held += max(backlog-int64(f.Sample.Seen), 0)
	}
	if float64(held) < hotGroupShare*float64(backlog) {
		return "", "", false
	}
	names := make([]string, 0, top)
	for _, g := range groups[:top] {
		names = append(names, safetext.Line(g.GroupID, 64))
	}
	finding := fmt.Sprintf("%s hold about %d of its %d visible messages (%s)", plural(int64(top), "group"), min(held, backlog), backlog, strings.Join(names, ", "))
	fix := fmt.Sprintf("aws sqs send-message --queue-url %s --message-group-id \"$SESSION_ID\" --message-deduplication-id \"$TOOL_CALL_ID\" --message-body \"$CALL\"  # one group per session, never a constant", shellQuote(q.URL))
	return finding, fix, true
}

// enabledMappings are the mappings that drain the queue, disabled ones left to esm-disabled.
func enabledMappings(f *adviceFacts) []store.EventSourceMapping {
	var out []store.EventSourceMapping
	for _, m := range f.Mappings {
		if m.State != "Disabled" {
			out = append(out, m)
		}
	}
	return out
}

func checkBatchItemFailures(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, m := range enabledMappings(f) {
		if m.BatchSize > 1 && !m.ReportBatchItemFailures {
			return fmt.Sprintf("%s's mapping takes batches of %d without ReportBatchItemFailures", functionName(m.FunctionARN), m.BatchSize),
				fmt.Sprintf("aws lambda update-event-source-mapping --uuid %s --function-response-types ReportBatchItemFailures", shellQuote(m.UUID)), true
		}
	}
	return "", "", false
}

func checkMaximumConcurrency(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, m := range enabledMappings(f) {
		if m.MaximumConcurrency == 0 {
			return fmt.Sprintf("%s's mapping has no MaximumConcurrency", functionName(m.FunctionARN)),
				fmt.Sprintf("aws lambda update-event-source-mapping --uuid %s --scaling-config MaximumConcurrency=10  # the downstream rate limit / requests per tool call", shellQuote(m.UUID)), true
		}
	}
	return "", "", false
}

func checkVisibilityVsLambda(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	vt, ok := visibilityTimeout(f.Queue)
	if !ok {
		return "", "", false
	}
	for _, m := range enabledMappings(f) {
		if m.FunctionTimeoutSeconds <= 0 {
			continue
		}
		need := time.Duration(sixfold*m.FunctionTimeoutSeconds) * time.Second
		if vt < need {
			finding := fmt.Sprintf("VisibilityTimeout %s is less than 6× %s's timeout of %d s", humanSeconds(vt), functionName(m.FunctionARN), m.FunctionTimeoutSeconds)
			fix := fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes VisibilityTimeout=%d", shellQuote(f.Queue.URL), min(int(need/time.Second), 43200))
			return finding, fix, true
		}
	}
	return "", "", false
}

func checkMappingDisabled(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, m := range f.Mappings {
		if m.State == "Disabled" {
			finding := fmt.Sprintf("%s's mapping is Disabled", functionName(m.FunctionARN))
			if m.StateReason != "" {
				finding += " (" + safetext.Line(m.StateReason, 80) + ")"
			}
			return finding, fmt.Sprintf("aws lambda update-event-source-mapping --uuid %s --enabled", shellQuote(m.UUID)), true
		}
	}
	return "", "", false
}

func checkMappingFailing(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, m := range f.Mappings {
		if strings.HasPrefix(m.LastProcessingResult, "PROBLEM") {
			return fmt.Sprintf("%s's mapping reports %s", functionName(m.FunctionARN), safetext.Line(m.LastProcessingResult, 200)),
				fmt.Sprintf("aws lambda get-event-source-mapping --uuid %s --query '[State,LastProcessingResult]'  # fix what it names: the function, its role, the queue", shellQuote(m.UUID)), true
		}
	}
	return "", "", false
}

func checkTargetNoDLQ(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, t := range f.Feeds {
		if t.DeadLetterARN == "" {
			dlq := siblingARN(f.Queue.ARN, strings.TrimSuffix(f.Queue.Name, ".fifo")+"-events-dlq")
			return fmt.Sprintf("rule %s on bus %s delivers here with no target dead-letter queue", safetext.Line(t.RuleName, 64), safetext.Line(t.BusName, 64)),
				putTargetFix(t, dlq, cmp.Or(t.MaxEventAgeSeconds, 3600)), true
		}
	}
	return "", "", false
}

func checkMaxEventAge(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, t := range f.Feeds {
		age := time.Duration(t.MaxEventAgeSeconds) * time.Second
		if t.MaxEventAgeSeconds == 0 {
			age = defaultEventAge
		}
		if age > maxEventAge {
			what := fmt.Sprintf("maxEventAge %s", humanDuration(age))
			if t.MaxEventAgeSeconds == 0 {
				what = "no maxEventAge (EventBridge's default, 24 h)"
			}
			return fmt.Sprintf("rule %s's target retries with %s", safetext.Line(t.RuleName, 64), what), putTargetFix(t, t.DeadLetterARN, 3600), true
		}
	}
	return "", "", false
}

func checkDefaultBus(f *adviceFacts, _ *Thresholds) (string, string, bool) {
	for _, t := range f.Feeds {
		if t.BusName == "default" {
			return fmt.Sprintf("rule %s delivering here is on the default bus", safetext.Line(t.RuleName, 64)),
				"new events.Rule(this, 'ToolCallCompleted', { eventBus: new events.EventBus(this, 'McpBus', { eventBusName: 'mcp-tool-calls' }), eventPattern: { source: ['mcp.tools'] } });", true
		}
	}
	return "", "", false
}

// putTargetFix is the put-targets command that gives t a dead-letter queue and a max event age.
// put-targets replaces the whole target: a target with an input transformer keeps it only if
// the command carries it too, which is why the fix names the target's id and ARN explicitly.
func putTargetFix(t store.EventBridgeTarget, dlqARN string, ageSeconds int) string {
	target := map[string]any{"Id": t.TargetID, "Arn": t.TargetARN, "RetryPolicy": map[string]any{"MaximumEventAgeInSeconds": ageSeconds}}
	if dlqARN != "" {
		target["DeadLetterConfig"] = map[string]any{"Arn": dlqARN}
	}
	js, _ := json.Marshal([]any{target})
	return fmt.Sprintf("aws events put-targets --event-bus-name %s --rule %s --targets %s", shellQuote(t.BusName), shellQuote(t.RuleName), shellQuote(string(js)))
}

// setRedrivePolicy is the command that gives q a RedrivePolicy to dlqARN.
func setRedrivePolicy(q store.Queue, dlqARN string, maxReceiveCount int) string {
	policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": dlqARN, "maxReceiveCount": strconv.Itoa(maxReceiveCount)})
	attrs, _ := json.Marshal(map[string]string{"RedrivePolicy": string(policy)})
	return fmt.Sprintf("aws sqs set-queue-attributes --queue-url %s --attributes %s", shellQuote(q.URL), shellQuote(string(attrs)))
}

// siblingARN is the ARN of a queue called name beside the queue of queueARN.
func siblingARN(queueARN, name string) string {
	a, err := arn.ParseQueue(queueARN)
	if err != nil {
		return name
	}
	a.Name = name
	return a.String()
}

// functionName is the name of a function ARN, made safe to show.
func functionName(functionARN string) string {
	name := functionARN
	if i := strings.LastIndex(functionARN, ":function:"); i >= 0 {
		name = functionARN[i+len(":function:"):]
	}
	return safetext.Line(name, 64)
}

// visibilityTimeout reads a queue's VisibilityTimeout attribute.
func visibilityTimeout(q store.Queue) (time.Duration, bool) {
	v, err := strconv.Atoi(q.Attributes["VisibilityTimeout"])
	if err != nil || v < 0 {
		return 0, false
	}
	return time.Duration(v) * time.Second, true
}

// humanSeconds says a short duration in seconds, a longer one as humanDuration does.
func humanSeconds(d time.Duration) string {
	if d < 10*time.Minute {
		return fmt.Sprintf("%d s", int64(d/time.Second))
	}
	return humanDuration(d)
}

// formatCount writes a count with thousands separators: 144,000.
func formatCount(v float64) string {
	s := strconv.FormatInt(int64(v+0.5), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// shellSafe reports whether s needs no quoting as a POSIX shell word: letters, digits and
// _@%+=:,./- only.
func shellSafe(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("_@%+=:,./-", r):
		default:
			return false
		}
	}
	return true
}

// shellQuote makes s one word of a POSIX shell command: values in a fix come from AWS (queue
// names and URLs of an endpoint, alarm names, rule names) and must not become shell syntax when
// an operator pastes the command.
func shellQuote(s string) string {
	if shellSafe(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
