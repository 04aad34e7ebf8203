package views

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// What surrounds a queue (its Lambda consumers, the EventBridge rules that feed it or send it
// their failures, the alarms on it), as the pages and the API show it, and the advisor's facts.

// Dead-letter queue kinds (QueueSummary.DeadLetterKind).
const (
	// DeadLetterSQS: a RedrivePolicy names the queue; its messages are SQS messages a move task
	// returns to their source.
	DeadLetterSQS = "sqs"
	// DeadLetterEventBridge: an EventBridge target's DeadLetterConfig names it; its messages are
	// events that failed delivery.
	DeadLetterEventBridge = "eventbridge-target"
)

// eventBridgeNoRedrive is why an EventBridge target's dead-letter queue has no redrive.
const eventBridgeNoRedrive = "This is an EventBridge target's dead-letter queue: its messages are events EventBridge failed to deliver, " +
	"to be put on the bus again (PutEvents) once the cause is fixed, not SQS messages a move task could return to a source queue. " +
	"toolq does not redrive it."

// Consumer is one Lambda event source mapping that drains a queue.
type Consumer struct {
	UUID                    string    `json:"uuid"`
	Function                string    `json:"function"`
	FunctionARN             string    `json:"functionArn"`
	State                   string    `json:"state"`
	StateReason             string    `json:"stateReason,omitempty"`
	LastProcessingResult    string    `json:"lastProcessingResult,omitempty"`
	BatchSize               int       `json:"batchSize"`
	BatchingWindowSeconds   int       `json:"batchingWindowSeconds"`
	ReportBatchItemFailures bool      `json:"reportBatchItemFailures"`
	MaximumConcurrency      *int      `json:"maximumConcurrency"`     // null: not set
	FunctionTimeoutSeconds  *int      `json:"functionTimeoutSeconds"` // null: unknown (FunctionError says why)
	FunctionError           string    `json:"functionError,omitempty"`
	ReadAt                  time.Time `json:"readAt"`
}

// EventBridgeFeed is one EventBridge rule target that delivers to a queue, or that names a
// queue as its dead-letter queue.
type EventBridgeFeed struct {
	Bus       string `json:"bus"`
	Rule      string `json:"rule"`
	RuleARN   string `json:"ruleArn"`
	RuleState string `json:"ruleState"`
	TargetID  string `json:"targetId"`
	// Target is the queue the rule delivers to (its name when watched, else its ARN).
	Target    string `json:"target"`
	TargetARN string `json:"targetArn"`
	// DeadLetterQueue is the target's dead-letter queue, likewise; "" without one.
	DeadLetterQueue    string    `json:"deadLetterQueue,omitempty"`
	DeadLetterARN      string    `json:"deadLetterArn,omitempty"`
	MaxEventAgeSeconds *int      `json:"maxEventAgeSeconds"` // null: not set (24 h)
	MaxRetryAttempts   *int      `json:"maxRetryAttempts"`   // null: not set (185)
	ReadAt             time.Time `json:"readAt"`
}

// AlarmView is one CloudWatch alarm on a queue's metric.
type AlarmView struct {
	Name           string     `json:"name"`
	Metric         string     `json:"metric"`
	State          string     `json:"state"`
	StateReason    string     `json:"stateReason,omitempty"`
	StateUpdatedAt *time.Time `json:"stateUpdatedAt"`
	ActionsEnabled bool       `json:"actionsEnabled"`
}

// eventBridgeFailure reads EventBridge's failure attributes from a dead-lettered event's message
// attributes; ok is false without ERROR_CODE and RULE_ARN (not an EventBridge failure). It is the one reading of
// these attributes, for the messages views and any general failure-reason column alike.
func eventBridgeFailure(attrs []store.MessageAttribute) (FailureReason, bool) {
	f := FailureReason{Source: "eventbridge"}
	for _, a := range attrs {
		switch a.Name {
		case attrErrorCode:
			f.Code = safetext.Line(a.Value, 128)
		case attrErrorMessage:
			f.Message = safetext.Line(a.Value, 1000)
		case attrRuleARN:
			f.RuleARN = safetext.Line(a.Value, 512)
		case attrTargetARN:
			f.TargetARN = safetext.Line(a.Value, 512)
		case attrRetryAttempts:
			if n, err := strconv.Atoi(strings.TrimSpace(a.Value)); err == nil {
				f.RetryAttempts = &n
			}
		}
	}
	// EventBridge sets both; a tool call's own attribute called ERROR_CODE is not its failure.
	return f, f.Code != "" && f.RuleARN != ""
}

// topology is what the snapshot holds of the queues' surroundings, keyed for summarize.
type topology struct {
	mappings map[string][]store.EventSourceMapping // by queue ARN
	feeds    map[string][]store.EventBridgeTarget  // by target ARN
	failures map[string][]store.EventBridgeTarget  // by dead-letter queue ARN
	alarms   map[[2]string][]store.QueueAlarm      // by region, queue name
}

// readTopology reads the stored mappings, targets and alarms.
func (s *Service) readTopology(ctx context.Context) (topology, error) {
	t := topology{
		mappings: map[string][]store.EventSourceMapping{}, feeds: map[string][]store.EventBridgeTarget{},
		failures: map[string][]store.EventBridgeTarget{}, alarms: map[[2]string][]store.QueueAlarm{},
	}
	mappings, err := s.store.EventSourceMappings(ctx)
	if err != nil {
		return t, err
	}
	for _, m := range mappings {
		t.mappings[m.QueueARN] = append(t.mappings[m.QueueARN], m)
	}
	targets, err := s.store.EventBridgeTargets(ctx)
	if err != nil {
		return t, err
	}
	for _, tg := range targets {
		// A disabled rule delivers nothing: it neither feeds a queue nor fails into one.
		if tg.RuleState == "DISABLED" {
			continue
		}
		t.feeds[tg.TargetARN] = append(t.feeds[tg.TargetARN], tg)
		if tg.DeadLetterARN != "" {
			t.failures[tg.DeadLetterARN] = append(t.failures[tg.DeadLetterARN], tg)
		}
	}
	alarms, err := s.store.QueueAlarms(ctx)
	if err != nil {
		return t, err
	}
	for _, a := range alarms {
		k := [2]string{a.Region, a.QueueName}
		t.alarms[k] = append(t.alarms[k], a)
	}
	return t, nil
}

// queueAlarms returns the alarms on q's metrics.
func (t topology) queueAlarms(q store.Queue) []store.QueueAlarm {
	return t.alarms[[2]string{q.Scope(), q.Name}]
}

// adviceFacts gathers one queue's facts for the advisor: from the snapshot, plus the few reads
// only some queues need (the empty receives of a short-polling queue, the bodies of a FIFO queue
// with content-based deduplication).
func (s *Service) adviceFacts(ctx context.Context, rd *readings, q store.Queue, in adviceInputs) (adviceFacts, error) {
	f := adviceFacts{
		Now: rd.now, Queue: q, Mappings: rd.topology.mappings[q.ARN], Feeds: rd.topology.feeds[q.ARN],
		Alarms: rd.topology.queueAlarms(q), AlarmsRead: rd.sight.read(q.Scope(), "DescribeAlarms"), Groups: in.groups,
		DLQ: in.dlq, Sources: in.sources, Latest: in.latest, Sample: in.sample,
	}
	for _, t := range rd.redrives[q.ID] {
		r := redriveOf(t, rd.now)
		r.Outcome = rd.outcomes[t.ID]
		f.Redrives = append(f.Redrives, r)
	}
	if shortPolling(q) {
		f.EmptyReceives = rd.emptyReceives[q.ID]
	}
	if q.FIFO && q.Attributes["ContentBasedDeduplication"] == "true" {
		bodies, err := s.sampledBodies(ctx, rd, q)
		if err != nil {
			return f, err
		}
		f.Bodies = bodies
	}
	return f, nil
}

// shortPolling reports whether a queue's receives return at once (ReceiveMessageWaitTimeSeconds
// 0), which the advisor's short-polling rule checks against its empty receives.
func shortPolling(q store.Queue) bool { return q.Attributes["ReceiveMessageWaitTimeSeconds"] == "0" }

// readEmptyReceives reads the newest shortPollWindow of NumberOfEmptyReceives of every
// short-polling queue, by queue id, in one statement for all of them: a thousand such queues are
// one read a build, not a thousand.
func (s *Service) readEmptyReceives(ctx context.Context, rd *readings) (map[int64][]store.MetricPoint, error) {
	var ids []int64
	for _, q := range rd.queues {
		if shortPolling(q) {
			ids = append(ids, q.ID)
		}
	}
	// The collector asks CloudWatch for the counters at its counters cadence (hourly by default),
	// each time for the minutes since: the newest shortPollWindow of datapoints is read back as
	// far as two of those asks.
	reach := shortPollWindow + 2*max(rd.cadence.Counters, 0)
	series, err := s.store.MetricSeriesOfQueues(ctx, ids, "NumberOfEmptyReceives", rd.now.Add(-reach), rd.now)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	for id, points := range series {
		series[id] = newestWithin(points, shortPollWindow)
	}
	return series, nil
}

// adviceInputs are what a queue's summary has looked up in the snapshot for its health rules and
// hands on to its advice: its watched dead-letter queue (nil: none), for a dead-letter queue its
// watched sources, its newest depth sample and its newest message sample (nil: none), and that
// sample's FIFO groups.
type adviceInputs struct {
	dlq     *store.Queue
	sources []store.Queue
	latest  *store.AttributeSample
	sample  *store.Sample
	groups  []store.GroupBacklog
}

// maxAdviceBodies bounds the bodies the content-deduplication rule reads per queue.
const maxAdviceBodies = 20

// sampledBodies returns bodies of q's messages as sampled: from its own newest sample, else those
// of its dead-letter queue's newest sample that came from q.
func (s *Service) sampledBodies(ctx context.Context, rd *readings, q store.Queue) ([]string, error) {
	sampleID, fromDLQ := int64(0), false
	if sample, ok := rd.samples[q.ID]; ok && sample.Seen > 0 {
		sampleID = sample.ID
	} else if dlq, ok := rd.byARN[q.DeadLetterTargetARN]; ok {
		if sample, ok := rd.samples[dlq.ID]; ok {
			sampleID, fromDLQ = sample.ID, true
		}
	}
	if sampleID == 0 {
		return nil, nil
	}
	msgs, err := s.store.SampleMessages(ctx, sampleID, store.MessageFilter{Limit: maxAdviceBodies * 5})
	if err != nil {
		return nil, fmt.Errorf("views: bodies of %s: %w", q.Name, err)
	}
	var bodies []string
	for _, m := range msgs {
		if fromDLQ && m.DeadLetterSourceARN != q.ARN {
			continue
		}
		bodies = append(bodies, m.Body)
		if len(bodies) == maxAdviceBodies {
			break
		}
	}
	return bodies, nil
}

// consumersOf returns the queue's Lambda consumers as the queue page shows them.
func consumersOf(mappings []store.EventSourceMapping) []Consumer {
	out := make([]Consumer, 0, len(mappings))
	for _, m := range mappings {
		c := Consumer{
			UUID: m.UUID, Function: functionName(m.FunctionARN), FunctionARN: m.FunctionARN, State: m.State,
			StateReason: m.StateReason, LastProcessingResult: m.LastProcessingResult, BatchSize: m.BatchSize,
			BatchingWindowSeconds: m.BatchingWindowSeconds, ReportBatchItemFailures: m.ReportBatchItemFailures,
			FunctionError: m.FunctionError, ReadAt: m.ReadAt.UTC(),
		}
		if m.MaximumConcurrency > 0 {
			n := m.MaximumConcurrency
			c.MaximumConcurrency = &n
		}
		if m.FunctionTimeoutSeconds > 0 {
			n := m.FunctionTimeoutSeconds
			c.FunctionTimeoutSeconds = &n
		}
		out = append(out, c)
	}
	return out
}

// feedsOf returns targets as the queue page shows them, queues named as the snapshot knows them.
func feedsOf(rd *readings, targets []store.EventBridgeTarget) []EventBridgeFeed {
	name := func(a string) string {
		if q, ok := rd.byARN[a]; ok {
			return q.Name
		}
		return a
	}
	out := make([]EventBridgeFeed, 0, len(targets))
	for _, t := range targets {
		f := EventBridgeFeed{
			Bus: t.BusName, Rule: t.RuleName, RuleARN: t.RuleARN, RuleState: t.RuleState, TargetID: t.TargetID,
			Target: name(t.TargetARN), TargetARN: t.TargetARN, DeadLetterARN: t.DeadLetterARN, ReadAt: t.ReadAt.UTC(),
		}
		if t.DeadLetterARN != "" {
			f.DeadLetterQueue = name(t.DeadLetterARN)
		}
		if t.MaxEventAgeSeconds > 0 {
			n := t.MaxEventAgeSeconds
			f.MaxEventAgeSeconds = &n
		}
		if t.MaxRetryAttempts >= 0 {
			n := t.MaxRetryAttempts
			f.MaxRetryAttempts = &n
		}
		out = append(out, f)
	}
	return out
}

// alarmsOf returns a queue's alarms as the queue page shows them, one per alarm.
func alarmsOf(alarms []store.QueueAlarm) []AlarmView {
	out := []AlarmView{}
	for _, a := range alarms {
		if slices.ContainsFunc(out, func(v AlarmView) bool { return v.Name == a.AlarmName }) {
			continue
		}
		out = append(out, AlarmView{Name: a.AlarmName, Metric: a.MetricName, State: a.State, StateReason: a.StateReason,
			StateUpdatedAt: timePtr(a.StateUpdatedAt), ActionsEnabled: a.ActionsEnabled})
	}
	return out
}

// AdviceList is GET /api/v1/advice: what the advisor found on every watched queue, the rules it
// checks, and what it could not check.
type AdviceList struct {
	GeneratedAt time.Time `json:"generatedAt"`
	// Advice is every rule that fires, worst first, then by queue; never nil.
	Advice []Advice `json:"advice"`
	// Rules are every rule, those turned off (--advice-off) marked; never nil.
	Rules []AdviceRule `json:"rules"`
	// Unchecked says which rules could not be checked where, and why; never nil.
	Unchecked []AdviceGap `json:"unchecked"`
}

// AdviceGap is a set of rules toolq could not check in a region: what they read cannot be read.
type AdviceGap struct {
	Region string   `json:"region"`
	Rules  []string `json:"rules"`
	Reason string   `json:"reason"`
}

// AdviceQuery filters the advice: a queue (by id, 0: all), a rule id ("" all).
type AdviceQuery struct {
	QueueID int64
	Rule    string
}

// Advice returns the advice on the watched queues, as the current snapshot has it.
func (s *Service) Advice(ctx context.Context, aq AdviceQuery) (AdviceList, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return AdviceList{}, err
	}
	return AdviceList{GeneratedAt: snap.At, Advice: snap.Advice(aq), Rules: s.adviceRules(), Unchecked: snap.readings.sight.adviceGaps()}, nil
}

// adviceRules returns the rule catalogue with the rules turned off marked.
func (s *Service) adviceRules() []AdviceRule {
	out := slices.Clone(AdviceRules)
	for i := range out {
		out[i].Off = s.adviceOff[out[i].ID]
	}
	return out
}

// The rules each unreadable source of facts leaves unchecked.
var (
	alarmRules       = []string{"dlq-no-alarm", "dlq-alarm-misses-moves", "alarm-firing"}
	lambdaRules      = []string{"esm-no-batch-item-failures", "esm-no-maximum-concurrency", "visibility-below-6x-lambda-timeout", "esm-disabled", "esm-failing"}
	eventBridgeRules = []string{"eventbridge-target-no-dlq", "eventbridge-max-event-age-long", "eventbridge-default-bus"}
)

// newestWithin returns the points within window of the newest one (points oldest first).
func newestWithin(points []store.MetricPoint, window time.Duration) []store.MetricPoint {
	if len(points) == 0 {
		return points
	}
	from := points[len(points)-1].At.Add(-window)
	i := 0
	for i < len(points) && points[i].At.Before(from) {
		i++
	}
	return points[i:]
}
