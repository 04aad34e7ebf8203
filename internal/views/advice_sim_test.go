package views_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// simWorld is the simulator behind the stock clients, the real collector writing a real store,
// and the views over it: each advisor rule is made to fire and to clear in AWS's own terms, and
// read back as the pages would.
type simWorld struct {
	t     *testing.T
	ctx   context.Context
	clock *sqsim.ManualClock
	sim   *sqsim.Simulator
	c     awsconf.Clients
	store *store.Store
	coll  *collector.Collector
	views *views.Service
	acct  string
}

// worldOptions vary a simWorld: the sources opted in to sampling and the views' thresholds.
type worldOptions struct {
	peekSources []string
	thresholds  views.Thresholds
	// peekMax caps a sample's messages (default the collector's); dims are the tool calls'
	// dimensions, errorDim the one that holds their reason.
	peekMax  int
	dims     []collector.Dimension
	errorDim string
	// postgres puts the store on a database of the test's PostgreSQL server, not SQLite.
	postgres bool
}

func newSimWorld(t *testing.T, opts worldOptions) *simWorld {
	t.Helper()
	ctx := context.Background()
	clock := sqsim.NewManualClock(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	sim := sqsim.New(sqsim.Options{Clock: clock, Seed: 5})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	c, err := awsconf.Load(ctx, awsconf.Options{Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	dsn := storetest.Path(t)
	if opts.postgres {
		dsn = pgtest.DB(t)
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &simWorld{t: t, ctx: ctx, clock: clock, sim: sim, c: c, store: st, acct: "arn:aws:sqs:us-east-1:000000000000:",
		views: views.New(views.Options{Store: st, Now: clock.Now, Thresholds: opts.thresholds,
			Dimensions: dimensionNames(opts.dims), ErrorDimension: opts.errorDim}),
		coll: func() *collector.Collector {
			coll, err := collector.New(collector.Options{
				Regions: []collector.Region{{Name: "us-east-1", SQS: c.SQS, CloudWatch: c.CloudWatch, Lambda: c.Lambda, EventBridge: c.EventBridge}},
				// The counters (empty receives among them) every 5 min, as the demo asks them,
				// so that each round's six minutes bring them; the hourly default is the
				// advisor's concern in TestShortPollingReadsHourlyCounters.
				Store: st, Now: clock.Now, Backfill: -1, MetricsInterval: time.Minute, CountersInterval: 5 * time.Minute,
				Peek:       collector.PeekOptions{Sources: opts.peekSources, MaxMessages: opts.peekMax},
				Dimensions: opts.dims,
			})
			if err != nil {
				t.Fatal(err)
			}
			return coll
		}(),
	}
}

// dimensionNames are the names of dims, in order.
func dimensionNames(dims []collector.Dimension) []string {
	var out []string
	for _, d := range dims {
		out = append(out, d.Name)
	}
	return out
}

func (w *simWorld) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// queue creates a queue (FIFO when its name ends in .fifo) and returns its URL.
func (w *simWorld) queue(name string, attrs map[string]string) string {
	w.t.Helper()
	a := map[string]string{"ReceiveMessageWaitTimeSeconds": "20"}
	if strings.HasSuffix(name, ".fifo") {
		a["FifoQueue"] = "true"
	}
	for k, v := range attrs {
		a[k] = v
	}
	out, err := w.c.SQS.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a})
	w.must(err)
	return aws.ToString(out.QueueUrl)
}

// url returns the URL of the queue called name.
func (w *simWorld) url(name string) string {
	w.t.Helper()
	out, err := w.c.SQS.GetQueueUrl(w.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	w.must(err)
	return aws.ToString(out.QueueUrl)
}

func (w *simWorld) set(url string, attrs map[string]string) {
	w.t.Helper()
	_, err := w.c.SQS.SetQueueAttributes(w.ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs})
	w.must(err)
}

// policy is a RedrivePolicy to the queue dlq.
func (w *simWorld) policy(dlq string, maxReceiveCount int) string {
	return fmt.Sprintf(`{"deadLetterTargetArn":"%s%s","maxReceiveCount":%d}`, w.acct, dlq, maxReceiveCount)
}

// pair creates source → dlq with maxReceiveCount 3 and a 14-day DLQ, and returns their URLs.
func (w *simWorld) pair(source, dlq string, sourceAttrs map[string]string) (string, string) {
	w.t.Helper()
	d := w.queue(dlq, map[string]string{"MessageRetentionPeriod": "1209600"})
	a := map[string]string{"RedrivePolicy": w.policy(dlq, 3)}
	for k, v := range sourceAttrs {
		a[k] = v
	}
	return w.queue(source, a), d
}

func (w *simWorld) send(url, body, group string) {
	w.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	if group != "" {
		in.MessageGroupId = aws.String(group)
	}
	_, err := w.c.SQS.SendMessage(w.ctx, in)
	w.must(err)
}

// function creates a Lambda function with timeout seconds and maps it onto queue.
func (w *simWorld) function(queue string, timeout int32, in *lambda.CreateEventSourceMappingInput) string {
	w.t.Helper()
	_, err := w.c.Lambda.CreateFunction(w.ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("worker"), Role: aws.String("arn:aws:iam::000000000000:role/w"),
		Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Timeout: aws.Int32(timeout), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
	w.must(err)
	in.FunctionName, in.EventSourceArn = aws.String("worker"), aws.String(w.acct+queue)
	out, err := w.c.Lambda.CreateEventSourceMapping(w.ctx, in)
	w.must(err)
	return aws.ToString(out.UUID)
}

func (w *simWorld) updateMapping(uuid string, in *lambda.UpdateEventSourceMappingInput) {
	w.t.Helper()
	in.UUID = aws.String(uuid)
	_, err := w.c.Lambda.UpdateEventSourceMapping(w.ctx, in)
	w.must(err)
}

// target makes a rule on bus deliver to queue, with the target t (its Id and Arn filled in).
func (w *simWorld) target(bus, queue string, t ebtypes.Target) {
	w.t.Helper()
	if bus != "default" {
		if _, err := w.c.EventBridge.CreateEventBus(w.ctx, &eventbridge.CreateEventBusInput{Name: aws.String(bus)}); err != nil {
			if _, exists := errors.AsType[*ebtypes.ResourceAlreadyExistsException](err); !exists {
				w.t.Fatal(err)
			}
		}
	}
	_, err := w.c.EventBridge.PutRule(w.ctx, &eventbridge.PutRuleInput{Name: aws.String("tool-call-completed"), EventBusName: aws.String(bus), EventPattern: aws.String(`{"source":["mcp.tools"]}`)})
	w.must(err)
	t.Id, t.Arn = aws.String("audit"), aws.String(w.acct+queue)
	_, err = w.c.EventBridge.PutTargets(w.ctx, &eventbridge.PutTargetsInput{Rule: aws.String("tool-call-completed"), EventBusName: aws.String(bus), Targets: []ebtypes.Target{t}})
	w.must(err)
}

func (w *simWorld) alarm(queue, metric string) {
	w.t.Helper()
	_, err := w.c.CloudWatch.PutMetricAlarm(w.ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(queue + "-" + metric), Namespace: aws.String("AWS/SQS"), MetricName: aws.String(metric),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(queue)}},
		Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, TreatMissingData: aws.String("notBreaching"),
	})
	w.must(err)
}

// round lets six minutes pass (the simulator evaluates its alarms, CloudWatch's minutes close)
// and runs every collector cycle once, as the loops would over that time.
func (w *simWorld) round() {
	w.t.Helper()
	for range 6 {
		w.clock.Advance(time.Minute)
		w.sim.Tick()
	}
	w.must(w.coll.Discover(w.ctx))
	w.must(w.coll.CycleAttributes(w.ctx))
	w.must(w.coll.CycleMetrics(w.ctx))
	w.must(w.coll.PeekDue(w.ctx))
	w.must(w.coll.CycleTopology(w.ctx))
}

// fired returns the queues rule fires on, as GET /api/v1/advice says.
func (w *simWorld) fired(rule string) []string {
	w.t.Helper()
	list, err := w.views.Advice(w.ctx, views.AdviceQuery{Rule: rule})
	w.must(err)
	var queues []string
	for _, a := range list.Advice {
		queues = append(queues, a.Queue)
	}
	return queues
}

// TestAdviceRulesOnTheSimulator makes each rule fire and clear through the stock clients, the
// collector and the store, and reads the advice from the views.
func TestAdviceRulesOnTheSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		rule, queue string
		opts        worldOptions
		fire        func(w *simWorld)
		clear       func(w *simWorld)
	}{
		{"no-dlq", "notifications", worldOptions{},
			func(w *simWorld) { w.queue("notifications", nil); w.queue("notifications-dlq", nil) },
			func(w *simWorld) {
				w.set(w.url("notifications"), map[string]string{"RedrivePolicy": w.policy("notifications-dlq", 3)})
			}},
		{"dlq-retention-not-longer", "exports-dlq", worldOptions{},
			func(w *simWorld) {
				_, d := w.pair("exports", "exports-dlq", nil)
				w.set(d, map[string]string{"MessageRetentionPeriod": "3600"})
			},
			func(w *simWorld) { w.set(w.url("exports-dlq"), map[string]string{"MessageRetentionPeriod": "1209600"}) }},
		{"redrives-bounce-back", "tool-calls-dlq", worldOptions{},
			func(w *simWorld) {
				src, _ := w.pair("tool-calls", "tool-calls-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "1"})
				for i := range 4 {
					w.send(src, toolCall(i, "web_search", ""), "")
				}
				w.work(src, func(string) bool { return false })
				w.round()
				w.redrive("tool-calls-dlq")
				w.work(src, func(string) bool { return false }) // the server is still down
			},
			func(w *simWorld) {
				w.redrive("tool-calls-dlq")
				w.work(w.url("tool-calls"), func(string) bool { return true }) // fixed
			}},
		{"max-receive-count-1", "web-search", worldOptions{},
			func(w *simWorld) {
				s, _ := w.pair("web-search", "web-search-dlq", nil)
				w.set(s, map[string]string{"RedrivePolicy": w.policy("web-search-dlq", 1)})
			},
			func(w *simWorld) {
				w.set(w.url("web-search"), map[string]string{"RedrivePolicy": w.policy("web-search-dlq", 3)})
			}},
		{"max-receive-count-high", "web-search", worldOptions{},
			func(w *simWorld) {
				s, _ := w.pair("web-search", "web-search-dlq", nil)
				w.set(s, map[string]string{"RedrivePolicy": w.policy("web-search-dlq", 12)})
			},
			func(w *simWorld) {
				w.set(w.url("web-search"), map[string]string{"RedrivePolicy": w.policy("web-search-dlq", 5)})
			}},
		{"fifo-high-throughput-half", "calls.fifo", worldOptions{},
			func(w *simWorld) {
				w.pair("calls.fifo", "calls-dlq.fifo", map[string]string{"DeduplicationScope": "messageGroup"})
			},
			func(w *simWorld) {
				w.set(w.url("calls.fifo"), map[string]string{"FifoThroughputLimit": "perMessageGroupId"})
			}},
		{"content-dedup-changing-body", "calls.fifo", worldOptions{peekSources: []string{"calls.fifo"}},
			func(w *simWorld) {
				s, _ := w.pair("calls.fifo", "calls-dlq.fifo", map[string]string{"ContentBasedDeduplication": "true"})
				w.send(s, `{"toolCallId":"tc_1","toolName":"create_document","sentAt":1764460000000}`, "sess_1")
			},
			func(w *simWorld) {
				w.set(w.url("calls.fifo"), map[string]string{"ContentBasedDeduplication": "false"})
			}},
		{"short-polling", "web-search", worldOptions{},
			func(w *simWorld) {
				s, _ := w.pair("web-search", "web-search-dlq", map[string]string{"ReceiveMessageWaitTimeSeconds": "0"})
				w.round() // the queue's first CloudWatch window starts here
				for range 400 {
					_, err := w.c.SQS.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s)})
					w.must(err)
				}
			},
			func(w *simWorld) {
				w.set(w.url("web-search"), map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
			}},
		{"dlq-no-alarm", "web-search-dlq", worldOptions{},
			func(w *simWorld) { w.pair("web-search", "web-search-dlq", nil) },
			func(w *simWorld) { w.alarm("web-search-dlq", "ApproximateNumberOfMessagesVisible") }},
		{"dlq-alarm-misses-moves", "web-search-dlq", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", nil)
				w.alarm("web-search-dlq", "NumberOfMessagesSent")
			},
			func(w *simWorld) { w.alarm("web-search-dlq", "ApproximateNumberOfMessagesVisible") }},
		{"alarm-firing", "web-search-dlq", worldOptions{},
			func(w *simWorld) {
				_, d := w.pair("web-search", "web-search-dlq", nil)
				w.alarm("web-search-dlq", "ApproximateNumberOfMessagesVisible")
				w.send(d, `{"toolCallId":"tc_1"}`, "")
			},
			func(w *simWorld) {
				_, err := w.c.SQS.PurgeQueue(w.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(w.url("web-search-dlq"))})
				w.must(err)
			}},
		{"inflight-near-limit", "web-search", worldOptions{thresholds: views.Thresholds{InFlightLimit: 10}},
			func(w *simWorld) {
				s, _ := w.pair("web-search", "web-search-dlq", nil)
				for i := range 9 {
					w.send(s, fmt.Sprintf(`{"toolCallId":"tc_%d"}`, i), "")
				}
				_, err := w.c.SQS.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(s), MaxNumberOfMessages: 9, VisibilityTimeout: 600})
				w.must(err)
			},
			func(w *simWorld) {}}, // the next round lets the ten-minute visibility timeout end
		{"hot-fifo-groups", "calls.fifo", worldOptions{peekSources: []string{"calls.fifo"}},
			func(w *simWorld) {
				s, _ := w.pair("calls.fifo", "calls-dlq.fifo", map[string]string{"ContentBasedDeduplication": "true"})
				for i := range 25 {
					w.send(s, fmt.Sprintf(`{"toolCallId":"tc_%d"}`, i), "sess_hot")
				}
			},
			func(w *simWorld) {
				s := w.url("calls.fifo")
				_, err := w.c.SQS.PurgeQueue(w.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(s)})
				w.must(err)
				// toolq received each message it sampled as often as it may (maxReceiveCount − 2)
				// and pauses the queue until it sees it empty: a round while it is.
				w.round()
				for i := range 30 {
					w.send(s, fmt.Sprintf(`{"toolCallId":"tc_b%d"}`, i), fmt.Sprintf("sess_%d", i%10))
				}
			}},
		{"esm-no-batch-item-failures", "web-search", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "360"})
				w.function("web-search", 30, &lambda.CreateEventSourceMappingInput{BatchSize: aws.Int32(10), ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
			},
			func(w *simWorld) {
				w.updateMapping(w.mapping(), &lambda.UpdateEventSourceMappingInput{FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures}})
			}},
		{"esm-no-maximum-concurrency", "web-search", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "360"})
				w.function("web-search", 30, &lambda.CreateEventSourceMappingInput{BatchSize: aws.Int32(1)})
			},
			func(w *simWorld) {
				w.updateMapping(w.mapping(), &lambda.UpdateEventSourceMappingInput{ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
			}},
		{"visibility-below-6x-lambda-timeout", "web-search", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "60"})
				w.function("web-search", 30, &lambda.CreateEventSourceMappingInput{BatchSize: aws.Int32(1), ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
			},
			func(w *simWorld) { w.set(w.url("web-search"), map[string]string{"VisibilityTimeout": "180"}) }},
		{"esm-disabled", "web-search", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "360"})
				w.function("web-search", 30, &lambda.CreateEventSourceMappingInput{BatchSize: aws.Int32(1), Enabled: aws.Bool(false), ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
			},
			func(w *simWorld) {
				w.updateMapping(w.mapping(), &lambda.UpdateEventSourceMappingInput{Enabled: aws.Bool(true)})
			}},
		{"esm-failing", "web-search", worldOptions{},
			func(w *simWorld) {
				w.pair("web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "360"})
				w.function("web-search", 30, &lambda.CreateEventSourceMappingInput{BatchSize: aws.Int32(1), ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)}})
				_, err := w.c.Lambda.DeleteFunction(w.ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("worker")})
				w.must(err)
			},
			func(w *simWorld) {
				_, err := w.c.Lambda.CreateFunction(w.ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("worker"), Role: aws.String("arn:aws:iam::000000000000:role/w"),
					Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Timeout: aws.Int32(30), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
				w.must(err)
			}},
		{"eventbridge-target-no-dlq", "audit", worldOptions{},
			func(w *simWorld) {
				w.pair("audit", "audit-dlq", nil)
				w.queue("audit-events-dlq", nil)
				w.target("mcp", "audit", ebtypes.Target{RetryPolicy: &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600)}})
			},
			func(w *simWorld) {
				w.target("mcp", "audit", ebtypes.Target{DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.acct + "audit-events-dlq")},
					RetryPolicy: &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600)}})
			}},
		{"eventbridge-max-event-age-long", "audit", worldOptions{},
			func(w *simWorld) {
				w.pair("audit", "audit-dlq", nil)
				w.queue("audit-events-dlq", nil)
				w.target("mcp", "audit", ebtypes.Target{DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.acct + "audit-events-dlq")}})
			},
			func(w *simWorld) {
				w.target("mcp", "audit", ebtypes.Target{DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.acct + "audit-events-dlq")},
					RetryPolicy: &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600)}})
			}},
		{"eventbridge-default-bus", "audit", worldOptions{},
			func(w *simWorld) {
				w.pair("audit", "audit-dlq", nil)
				w.queue("audit-events-dlq", nil)
				w.target("default", "audit", ebtypes.Target{DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.acct + "audit-events-dlq")},
					RetryPolicy: &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600)}})
			},
			func(w *simWorld) {
				_, err := w.c.EventBridge.RemoveTargets(w.ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String("tool-call-completed"), Ids: []string{"audit"}})
				w.must(err)
			}},
	}
	covered := map[string]bool{"fifo-dlq-not-fifo": true} // SQS refuses it: TestFIFODLQNotFIFOIsRefusedBySQS
	for _, tt := range tests {
		covered[tt.rule] = true
		t.Run(tt.rule, func(t *testing.T) {
			w := newSimWorld(t, tt.opts)
			tt.fire(w)
			w.round()
			if got := w.fired(tt.rule); !slices.Contains(got, tt.queue) {
				t.Fatalf("fires: %s is on %v, want %s", tt.rule, got, tt.queue)
			}
			tt.clear(w)
			w.round()
			if got := w.fired(tt.rule); slices.Contains(got, tt.queue) {
				t.Errorf("clears: %s still on %v", tt.rule, got)
			}
		})
	}
	for _, id := range views.AdviceRuleIDs() {
		if !covered[id] {
			t.Errorf("rule %s is not made to fire on the simulator", id)
		}
	}
}

// mapping returns the one event source mapping of the world.
func (w *simWorld) mapping() string {
	w.t.Helper()
	out, err := w.c.Lambda.ListEventSourceMappings(w.ctx, &lambda.ListEventSourceMappingsInput{})
	w.must(err)
	if len(out.EventSourceMappings) != 1 {
		w.t.Fatalf("%d mappings", len(out.EventSourceMappings))
	}
	return aws.ToString(out.EventSourceMappings[0].UUID)
}

// TestFIFODLQNotFIFOIsRefusedBySQS: fifo-dlq-not-fifo cannot be made to fire on the simulator,
// because SQS (and so the simulator) refuses a standard DLQ for a FIFO source; the rule is
// there for endpoints that accept one, and its facts are tested in TestAdviceRules.
func TestFIFODLQNotFIFOIsRefusedBySQS(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{})
	w.queue("calls-dlq", nil)
	_, err := w.c.SQS.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("calls.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "RedrivePolicy": w.policy("calls-dlq", 3)}})
	if err == nil || !strings.Contains(err.Error(), "same type") {
		t.Errorf("CreateQueue with a standard DLQ for a FIFO source: %v, want SQS's refusal", err)
	}
}
