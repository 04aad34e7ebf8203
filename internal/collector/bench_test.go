package collector

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/sqsim"
)

// benchLatency is injected into every simulated call: roughly an SQS round trip from a
// container in the same region.
const benchLatency = 20 * time.Millisecond

// benchEnv is a simulator with n standard queues, discovered by a collector with the given
// concurrency, and then a latency on every call.
func benchEnv(b *testing.B, n, concurrency int) (*env, *Collector) {
	b.Helper()
	e := newEnv(b)
	for i := range n {
		e.createQueue(fmt.Sprintf("tool-calls-%04d", i), nil)
	}
	c := e.collector(func(o *Options) { o.Concurrency = concurrency })
	must(b, c.Discover(e.ctx))
	e.sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
	e.sim.ResetCallCounts()
	return e, c
}

// reportCalls reports the simulator's calls per operation per cycle.
func reportCalls(b *testing.B, e *env, ops ...string) {
	for _, op := range ops {
		b.ReportMetric(float64(e.sim.CallCount(op))/float64(b.N), op+"/op")
	}
}

// BenchmarkAttributeCycle1000Queues measures one attribute cycle over 1,000 queues with 20 ms
// per call: the wall time is about 1,000 / Concurrency × 20 ms plus the SQLite writes.
func BenchmarkAttributeCycle1000Queues(b *testing.B) {
	for _, concurrency := range []int{8, 32} {
		b.Run("concurrency="+strconv.Itoa(concurrency), func(b *testing.B) {
			e, c := benchEnv(b, 1000, concurrency)
			b.ReportAllocs()
			for b.Loop() {
				must(b, c.CycleAttributes(e.ctx))
				e.advance(DefaultAttributesInterval)
			}
			reportCalls(b, e, "GetQueueAttributes")
		})
	}
}

// BenchmarkMetricsCycle1000Queues measures one CloudWatch cycle over 1,000 standard queues:
// 6,000 queries in 12 GetMetricData calls of at most 500.
func BenchmarkMetricsCycle1000Queues(b *testing.B) {
	e, c := benchEnv(b, 1000, DefaultConcurrency)
	b.ReportAllocs()
	for b.Loop() {
		e.advance(DefaultMetricsInterval)
		must(b, c.CycleMetrics(e.ctx))
	}
	reportCalls(b, e, "GetMetricData")
	queries := 0
	for _, n := range e.sim.MetricQueriesPerCall() {
		queries += n
	}
	b.ReportMetric(float64(queries)/float64(b.N), "queries/op")
}

// BenchmarkTopologyCycle1000Queues measures one topology cycle over 1,000 queues with 20 ms
// per call, 100 of them drained by a Lambda function each and 100 fed by an EventBridge rule:
// 1,000 ListEventSourceMappings and 100 GetFunctionConfiguration, Concurrency at a time for the
// first, and one region's serial EventBridge listing (1 + 2 buses + 100 rules) and DescribeAlarms.
func BenchmarkTopologyCycle1000Queues(b *testing.B) {
	e := newEnv(b)
	for i := range 1000 {
		_, arn := e.createQueue(fmt.Sprintf("tool-calls-%04d", i), nil)
		if i%10 != 0 {
			continue
		}
		name := fmt.Sprintf("worker-%04d", i)
		_, err := e.fn.CreateFunction(e.ctx, &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String("arn:aws:iam::000000000000:role/w"),
			Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Timeout: aws.Int32(30), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
		must(b, err)
		_, err = e.fn.CreateEventSourceMapping(e.ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String(name), EventSourceArn: aws.String(arn)})
		must(b, err)
		if i == 0 {
			_, err = e.eb.CreateEventBus(e.ctx, &eventbridge.CreateEventBusInput{Name: aws.String("mcp")})
			must(b, err)
		}
		rule := fmt.Sprintf("rule-%04d", i)
		_, err = e.eb.PutRule(e.ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String("mcp"), EventPattern: aws.String(`{"source":["mcp.tools"]}`)})
		must(b, err)
		_, err = e.eb.PutTargets(e.ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String("mcp"), Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(arn)}}})
		must(b, err)
	}
	c := e.collector(nil)
	must(b, c.Discover(e.ctx))
	e.sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
	e.sim.ResetCallCounts()
	b.ReportAllocs()
	for b.Loop() {
		must(b, c.CycleTopology(e.ctx))
		e.advance(DefaultDiscoveryInterval)
	}
	reportCalls(b, e, "ListEventSourceMappings", "GetFunctionConfiguration", "ListRules", "ListTargetsByRule", "DescribeAlarms")
}

// BenchmarkPeekPass500Messages measures one pass over a dead-letter queue of 500 tool calls
// (the default cap): 50 receives of ten, 50 hand-backs of ten, 500 messages parsed and stored.
func BenchmarkPeekPass500Messages(b *testing.B) {
	e := newEnv(b)
	_, dlqURL := e.createPair("tool-calls", "tool-calls-dlq", 3)
	for i := 0; i < 500; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := range 10 {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(toolCallBody("create_document", i+j, "sess_"+strconv.Itoa(j))),
			})
		}
		_, err := e.sqs.SendMessageBatch(e.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL), Entries: entries})
		must(b, err)
	}
	c := e.collector(nil)
	must(b, c.Discover(e.ctx))
	e.sim.ResetCallCounts()
	b.ReportAllocs()
	for b.Loop() {
		e.advance(DefaultPeekDeadLetterInterval)
		must(b, c.PeekDue(e.ctx))
	}
	reportCalls(b, e, "ReceiveMessage", "ChangeMessageVisibilityBatch", "DeleteMessage")
}
