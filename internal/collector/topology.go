package collector

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// The topology loop reads, at the discovery cadence, what surrounds the watched queues: the
// Lambda event source mappings that drain them (with each function's timeout), the EventBridge
// rules whose targets deliver to them or name them as dead-letter queues, and the CloudWatch
// alarms on their metrics. Every call goes through c.call, so that its outcome is in the sight:
// a denied lambda:ListEventSourceMappings shows on /status and on the queue pages instead of
// looking like a queue without consumers. Nothing here changes anything: the interfaces list,
// and only list.

// topologyCalls is what one topology cycle called, by how AWS bills it.
type topologyCalls struct {
	alarms int // DescribeAlarms: CloudWatch API requests
	free   int // Lambda and EventBridge listings: not billed
}

// CycleTopology reads every region's event source mappings, EventBridge targets and alarms
// and stores them; a queue that an EventBridge target of a watched queue names as its
// dead-letter queue is watched too, and sampled as a dead-letter queue. A listing that fails
// leaves what the last complete one stored.
func (c *Collector) CycleTopology(ctx context.Context) error {
	cy := c.startCycle(ctx, store.RunTopology)
	defer c.finish(ctx, cy)
	queues := c.watched()
	cy.queues.Store(int64(len(queues)))
	for _, r := range c.regions {
		cy.cover(r.key, 0)
	}
	var calls topologyCalls
	var mu sync.Mutex
	count := func(alarms, free int) {
		mu.Lock()
		calls.alarms += alarms
		calls.free += free
		mu.Unlock()
	}
	changed := c.readMappings(ctx, cy, queues, count)
	for _, r := range c.regions {
		if r.EventBridge != nil && !c.opts.DisableEventBridge {
			if c.readEventBridge(ctx, cy, r, count) {
				changed = true
			}
		}
		if r.CloudWatch != nil {
			if c.readAlarms(ctx, cy, r, count) {
				changed = true
			}
		}
	}
	c.mu.Lock()
	c.topologyCalls = calls
	c.mu.Unlock()
	c.updateCost(ctx)
	if changed {
		c.pub.Publish(events.Event{Kind: events.QueuesChanged, At: c.now()})
	}
	return ctx.Err()
}

// readMappings reads, region by region, every event source mapping of the account
// (ListEventSourceMappings without a filter, 100 a page: its calls grow with the mappings, not
// with the watched queues), keeps those whose EventSourceArn is a watched queue of the region,
// reads each mapped function's timeout once, and replaces the region's stored mappings. A
// region whose listing failed keeps its last reading. It reports whether anything was stored.
func (c *Collector) readMappings(ctx context.Context, cy *cycle, queues []*watchedQueue, count func(alarms, free int)) bool {
	if c.opts.DisableLambda {
		return false
	}
	watched := make(map[*region]map[string]bool)
	for _, q := range queues {
		if q.region.Lambda == nil {
			continue
		}
		if watched[q.region] == nil {
			watched[q.region] = make(map[string]bool)
		}
		watched[q.region][q.arn] = true
	}
	listed := make(map[*region][]store.EventSourceMapping)
	for _, r := range c.regions {
		if watched[r] == nil {
			continue
		}
		if mappings, ok := c.listMappings(ctx, cy, r, watched[r], count); ok {
			listed[r] = mappings
		}
	}
	// One GetFunctionConfiguration per function and cycle, however many queues it drains, as
	// many at once as the loop's budget allows.
	type functionKey struct {
		region *region
		arn    string
	}
	type timeout struct {
		seconds int
		err     string
	}
	timeouts := make(map[functionKey]timeout)
	for r, mappings := range listed {
		for _, m := range mappings {
			timeouts[functionKey{r, m.FunctionARN}] = timeout{}
		}
	}
	keys := slices.Collect(maps.Keys(timeouts))
	var mu sync.Mutex
	forEach(ctx, 2*cap(c.budget(cy.kind)), keys, func(k functionKey) {
		var t timeout
		t.seconds, t.err = c.functionTimeout(ctx, cy, k.region, k.arn, count)
		mu.Lock()
		timeouts[k] = t
		mu.Unlock()
	})
	for _, r := range c.regions {
		mappings, ok := listed[r]
		if !ok {
			continue
		}
		for i, m := range mappings {
			t := timeouts[functionKey{r, m.FunctionARN}]
			mappings[i].FunctionTimeoutSeconds, mappings[i].FunctionError = t.seconds, t.err
		}
		if err := c.store.ReplaceEventSourceMappings(ctx, r.key, mappings); err != nil {
			c.storeFailed(ctx, cy, "ReplaceEventSourceMappings", nil, err)
		}
	}
	return len(listed) > 0
}

// listMappings pages through every event source mapping of r and returns those of the watched
// queues (by ARN), ordered by queue and UUID; ok is false when a call failed, so that what is
// stored stays.
func (c *Collector) listMappings(ctx context.Context, cy *cycle, r *region, watched map[string]bool, count func(alarms, free int)) ([]store.EventSourceMapping, bool) {
	k := skipKey{region: r.key, op: opListEventSourceMappings}
	if c.skipping(k) {
		return nil, false
	}
	mappings := []store.EventSourceMapping{}
	in := &lambda.ListEventSourceMappingsInput{MaxItems: aws.Int32(100)}
	for range maxPages {
		var out *lambda.ListEventSourceMappingsOutput
		// Recorded against no queue: a policy that denies Lambda must not make every queue's
		// health look failing; the sight and the queue pages say what cannot be read.
		err := c.call(ctx, cy, r, opListEventSourceMappings, nil, func(ctx context.Context) error {
			var err error
			out, err = r.Lambda.ListEventSourceMappings(ctx, in)
			return err
		}, c.recordOnce(k))
		count(0, 1)
		if err != nil {
			return nil, false
		}
		now := c.now()
		for _, m := range out.EventSourceMappings {
			// The account's other sources (Kinesis, DynamoDB, queues not watched) are not ours.
			queue := aws.ToString(m.EventSourceArn)
			if !watched[queue] {
				continue
			}
			mapping := store.EventSourceMapping{
				UUID:                  safetext.Store(aws.ToString(m.UUID), 128),
				Region:                r.key,
				QueueARN:              queue,
				FunctionARN:           safetext.Store(aws.ToString(m.FunctionArn), 256),
				State:                 safetext.Store(aws.ToString(m.State), 64),
				StateReason:           safetext.Store(aws.ToString(m.StateTransitionReason), 256),
				LastProcessingResult:  safetext.Store(aws.ToString(m.LastProcessingResult), awscalls.MaxMessage),
				BatchSize:             int(aws.ToInt32(m.BatchSize)),
				BatchingWindowSeconds: int(aws.ToInt32(m.MaximumBatchingWindowInSeconds)),
				ReadAt:                now,
			}
			for _, t := range m.FunctionResponseTypes {
				if t == "ReportBatchItemFailures" {
					mapping.ReportBatchItemFailures = true
				}
			}
			if m.ScalingConfig != nil {
				mapping.MaximumConcurrency = int(aws.ToInt32(m.ScalingConfig.MaximumConcurrency))
			}
			if mapping.UUID != "" {
				mappings = append(mappings, mapping)
			}
		}
		if out.NextMarker == nil || *out.NextMarker == "" || (in.Marker != nil && *in.Marker == *out.NextMarker) {
			slices.SortFunc(mappings, func(a, b store.EventSourceMapping) int {
				return cmp.Or(strings.Compare(a.QueueARN, b.QueueARN), strings.Compare(a.UUID, b.UUID))
			})
			return mappings, true
		}
		in.Marker = out.NextMarker
	}
	return nil, false
}

// functionTimeout reads a function's timeout in seconds, or says why it could not.
func (c *Collector) functionTimeout(ctx context.Context, cy *cycle, r *region, functionARN string, count func(alarms, free int)) (int, string) {
	k := skipKey{region: r.key, op: opGetFunctionConfiguration}
	if c.skipping(k) {
		return 0, "GetFunctionConfiguration is not called for now: it was refused (see the status page)"
	}
	var out *lambda.GetFunctionConfigurationOutput
	err := c.call(ctx, cy, r, opGetFunctionConfiguration, nil, func(ctx context.Context) error {
		var err error
		out, err = r.Lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(functionARN)})
		return err
	}, c.recordOnce(k))
	count(0, 1)
	if err != nil {
		f := awscalls.Describe(err)
		return 0, safetext.Store("GetFunctionConfiguration failed with "+f.Code+": "+f.Message, awscalls.MaxMessage)
	}
	return int(aws.ToInt32(out.Timeout)), ""
}

// readEventBridge lists the region's buses, their rules and the rules' targets. A complete
// reading replaces what is stored for the region, updates which queues are EventBridge
// dead-letter queues, and watches the dead-letter queue of every target that is a watched
// queue. It reports whether the set of watched queues changed or targets were stored.
func (c *Collector) readEventBridge(ctx context.Context, cy *cycle, r *region, count func(alarms, free int)) bool {
	targets, complete := c.listEventBridge(ctx, cy, r, count)
	if !complete || ctx.Err() != nil {
		return false
	}
	if err := c.store.ReplaceEventBridgeTargets(ctx, r.key, targets); err != nil {
		c.storeFailed(ctx, cy, "ReplaceEventBridgeTargets", nil, err)
		return false
	}
	c.setEventBridgeDLQs(r.key, targets)
	for _, t := range targets {
		c.mu.Lock()
		target := c.queues[t.TargetARN]
		c.mu.Unlock()
		if target != nil && c.adoptARN(ctx, cy, t.DeadLetterARN, target, &storedQueues{}) {
			c.log.Info("collector: watching an EventBridge target's dead-letter queue", "queue", arn.QueueName(t.DeadLetterARN), "rule", t.RuleName)
		}
	}
	return true
}

// listEventBridge returns every target of every rule of every bus of r, and whether every call
// succeeded.
func (c *Collector) listEventBridge(ctx context.Context, cy *cycle, r *region, count func(alarms, free int)) ([]store.EventBridgeTarget, bool) {
	eb := r.EventBridge
	var buses []ebtypes.EventBus
	var busToken *string
	for page := 0; ; page++ {
		if page == maxPages {
			return nil, false
		}
		var out *eventbridge.ListEventBusesOutput
		if !c.ebCall(ctx, cy, r, opListEventBuses, count, func(ctx context.Context) error {
			var err error
			out, err = eb.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{NextToken: busToken, Limit: aws.Int32(100)})
			return err
		}) {
			return nil, false
		}
		buses = append(buses, out.EventBuses...)
		if out.NextToken == nil || *out.NextToken == "" || (busToken != nil && *busToken == *out.NextToken) {
			break
		}
		busToken = out.NextToken
	}
	type ruleOfBus struct {
		bus  ebtypes.EventBus
		rule ebtypes.Rule
	}
	var rules []ruleOfBus
	for _, bus := range buses {
		busName := aws.ToString(bus.Name)
		var ruleToken *string
		for page := 0; ; page++ {
			if page == maxPages {
				return nil, false
			}
			var page *eventbridge.ListRulesOutput
			if !c.ebCall(ctx, cy, r, opListRules, count, func(ctx context.Context) error {
				var err error
				page, err = eb.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String(busName), NextToken: ruleToken, Limit: aws.Int32(100)})
				return err
			}) {
				return nil, false
			}
			for _, rule := range page.Rules {
				rules = append(rules, ruleOfBus{bus, rule})
			}
			if page.NextToken == nil || *page.NextToken == "" || (ruleToken != nil && *ruleToken == *page.NextToken) {
				break
			}
			ruleToken = page.NextToken
		}
	}
	// Each rule's targets, as many rules at once as the collector calls AWS.
	now := c.now()
	byRule := make([][]store.EventBridgeTarget, len(rules))
	failed := make([]bool, len(rules))
	forEach(ctx, 2*cap(c.budget(cy.kind)), indexes(len(rules)), func(i int) {
		var ok bool
		byRule[i], ok = c.listTargets(ctx, cy, r, rules[i].bus, rules[i].rule, now, count)
		failed[i] = !ok
	})
	targets := []store.EventBridgeTarget{}
	for i := range rules {
		if failed[i] {
			return nil, false
		}
		targets = append(targets, byRule[i]...)
	}
	return targets, ctx.Err() == nil
}

// listTargets pages through one rule's targets.
func (c *Collector) listTargets(ctx context.Context, cy *cycle, r *region, bus ebtypes.EventBus, rule ebtypes.Rule, now time.Time, count func(alarms, free int)) ([]store.EventBridgeTarget, bool) {
	var out []store.EventBridgeTarget
	var token *string
	for range maxPages {
		var page *eventbridge.ListTargetsByRuleOutput
		if !c.ebCall(ctx, cy, r, opListTargetsByRule, count, func(ctx context.Context) error {
			var err error
			page, err = r.EventBridge.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{
				Rule: rule.Name, EventBusName: bus.Name, NextToken: token, Limit: aws.Int32(100),
			})
			return err
		}) {
			return nil, false
		}
		for _, t := range page.Targets {
			target := store.EventBridgeTarget{
				Region:           r.key,
				BusName:          safetext.Store(aws.ToString(bus.Name), 256),
				BusARN:           safetext.Store(aws.ToString(bus.Arn), 512),
				RuleName:         safetext.Store(aws.ToString(rule.Name), 256),
				RuleARN:          safetext.Store(aws.ToString(rule.Arn), 512),
				RuleState:        safetext.Store(string(rule.State), 64),
				TargetID:         safetext.Store(aws.ToString(t.Id), 128),
				TargetARN:        safetext.Store(aws.ToString(t.Arn), 512),
				MaxRetryAttempts: -1,
				ReadAt:           now,
			}
			if t.DeadLetterConfig != nil {
				target.DeadLetterARN = safetext.Store(aws.ToString(t.DeadLetterConfig.Arn), 512)
			}
			if p := t.RetryPolicy; p != nil {
				target.MaxEventAgeSeconds = int(aws.ToInt32(p.MaximumEventAgeInSeconds))
				if p.MaximumRetryAttempts != nil {
					target.MaxRetryAttempts = int(*p.MaximumRetryAttempts)
				}
			}
			if target.RuleARN != "" && target.TargetID != "" {
				out = append(out, target)
			}
		}
		if page.NextToken == nil || *page.NextToken == "" || (token != nil && *token == *page.NextToken) {
			return out, true
		}
		token = page.NextToken
	}
	return out, true
}

// ebCall makes one EventBridge listing call, an optional operation: a denial is recorded once
// and the operation left alone for a while, like the other optional listings.
func (c *Collector) ebCall(ctx context.Context, cy *cycle, r *region, op string, count func(alarms, free int), fn func(context.Context) error) bool {
	k := skipKey{region: r.key, op: op}
	if c.skipping(k) {
		return false
	}
	err := c.call(ctx, cy, r, op, nil, fn, c.recordOnce(k))
	count(0, 1)
	return err == nil
}

// setEventBridgeDLQs keeps, for region, the queues its targets name as dead-letter queues.
func (c *Collector) setEventBridgeDLQs(region string, targets []store.EventBridgeTarget) {
	dlqs := make(map[string]bool)
	for _, t := range targets {
		if strings.HasPrefix(t.DeadLetterARN, "arn:") {
			dlqs[t.DeadLetterARN] = true
		}
	}
	c.mu.Lock()
	c.eventBridgeDLQs[region] = dlqs
	c.mu.Unlock()
}

// resumeTopology loads which queues are EventBridge dead-letter queues from what an earlier run
// stored, so that a restart samples them as dead-letter queues from its first peek.
func (c *Collector) resumeTopology(ctx context.Context) {
	targets, err := c.store.EventBridgeTargets(ctx)
	if err != nil {
		c.warn(ctx, "collector: load EventBridge targets", "err", err)
		return
	}
	byRegion := make(map[string][]store.EventBridgeTarget)
	for _, t := range targets {
		byRegion[t.Region] = append(byRegion[t.Region], t)
	}
	for region, ts := range byRegion {
		c.setEventBridgeDLQs(region, ts)
	}
}

// eventBridgeDLQARNs returns the ARNs of the queues EventBridge targets name as dead-letter
// queues, in every region.
func (c *Collector) eventBridgeDLQARNs() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]bool)
	for _, dlqs := range c.eventBridgeDLQs {
		maps.Copy(out, dlqs)
	}
	return out
}

// sampledDeadLetterARNs returns the ARNs of every kind of dead-letter queue, sampled by default:
// those a RedrivePolicy names (or ListDeadLetterSourceQueues gives sources) and those
// EventBridge targets name. Only the first kind has move tasks.
func (c *Collector) sampledDeadLetterARNs() map[string]bool {
	dlqs := c.deadLetterARNs()
	maps.Copy(dlqs, c.eventBridgeDLQARNs())
	return dlqs
}

// readAlarms pages through DescribeAlarms (metric alarms) and stores those on AWS/SQS metrics,
// one row per queue and metric they watch. It reports whether a complete reading was stored.
func (c *Collector) readAlarms(ctx context.Context, cy *cycle, r *region, count func(alarms, free int)) bool {
	k := skipKey{region: r.key, op: opDescribeAlarms}
	if c.skipping(k) {
		return false
	}
	alarms := []store.QueueAlarm{}
	in := &cloudwatch.DescribeAlarmsInput{AlarmTypes: []cwtypes.AlarmType{cwtypes.AlarmTypeMetricAlarm}, MaxRecords: aws.Int32(100)}
	for page := 0; ; page++ {
		if page == maxPages {
			return false
		}
		var out *cloudwatch.DescribeAlarmsOutput
		err := c.call(ctx, cy, r, opDescribeAlarms, nil, func(ctx context.Context) error {
			var err error
			out, err = r.CloudWatch.DescribeAlarms(ctx, in)
			return err
		}, c.recordOnce(k))
		count(1, 0)
		if err != nil {
			return false
		}
		now := c.now()
		for _, a := range out.MetricAlarms {
			alarms = append(alarms, queueAlarms(a, now)...)
		}
		if out.NextToken == nil || *out.NextToken == "" || (in.NextToken != nil && *in.NextToken == *out.NextToken) {
			break
		}
		in.NextToken = out.NextToken
	}
	if err := c.store.ReplaceQueueAlarms(ctx, r.key, alarms); err != nil {
		c.storeFailed(ctx, cy, "ReplaceQueueAlarms", nil, err)
		return false
	}
	return true
}

// queueAlarms turns one metric alarm into a row per AWS/SQS queue metric it watches: its own
// metric, or the metrics of a metric-math alarm's queries. Alarms on other namespaces give none.
func queueAlarms(a cwtypes.MetricAlarm, now time.Time) []store.QueueAlarm {
	base := store.QueueAlarm{
		AlarmName:      safetext.Store(aws.ToString(a.AlarmName), 256),
		AlarmARN:       safetext.Store(aws.ToString(a.AlarmArn), 512),
		State:          safetext.Store(string(a.StateValue), 32),
		StateReason:    safetext.Store(aws.ToString(a.StateReason), awscalls.MaxMessage),
		StateUpdatedAt: aws.ToTime(a.StateUpdatedTimestamp),
		ActionsEnabled: aws.ToBool(a.ActionsEnabled),
		ReadAt:         now,
	}
	var out []store.QueueAlarm
	add := func(namespace, metric string, dims []cwtypes.Dimension) {
		if namespace != "AWS/SQS" || metric == "" {
			return
		}
		for _, d := range dims {
			if aws.ToString(d.Name) == "QueueName" && aws.ToString(d.Value) != "" {
				row := base
				row.QueueName = safetext.Store(aws.ToString(d.Value), 256)
				row.MetricName = safetext.Store(metric, 256)
				out = append(out, row)
			}
		}
	}
	add(aws.ToString(a.Namespace), aws.ToString(a.MetricName), a.Dimensions)
	for _, q := range a.Metrics {
		if q.MetricStat != nil && q.MetricStat.Metric != nil {
			m := q.MetricStat.Metric
			add(aws.ToString(m.Namespace), aws.ToString(m.MetricName), m.Dimensions)
		}
	}
	return out
}
