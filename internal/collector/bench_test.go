package collector

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
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
// the account's mappings in one ListEventSourceMappings page of 100, 100 GetFunctionConfiguration
// at the loop's budget, the EventBridge listing (1 + 2 buses + 100 rules) and DescribeAlarms.
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

// longBench says whether the benchmarks of 5,000 and 10,000 queues that run the collector in
// real time run (TOOLQ_BENCH_LONG=1): their attribute cycles come every 15 s of the clock, and a
// naive loop over 5,000 queues alone takes minutes.
func longBench() bool { return os.Getenv("TOOLQ_BENCH_LONG") != "" }

// fleetSizes are the queue counts those benchmarks run at: 1,000 always, 5,000 and 10,000 with
// TOOLQ_BENCH_LONG.
func fleetSizes() []int {
	if longBench() {
		return []int{1000, 5000, 10000}
	}
	return []int{1000}
}

// scaleSizes are the queue counts of BenchmarkFleet, whose costs are fitted to a power of the
// fleet's size (docs/performance.md).
var scaleSizes = []int{1000, 5000, 10000}

// engines are the stores the fleet benchmarks run on.
var engines = []string{"sqlite", "postgres"}

// openEngine opens a fresh store of an engine for a benchmark: SQLite in a new temporary
// directory, PostgreSQL a new database of the package's test server.
func (e *env) openEngine(engine string) *store.Store {
	e.t.Helper()
	db := filepath.Join(e.t.TempDir(), "toolq.db")
	if engine == "postgres" {
		db = pgtest.DB(e.t)
	}
	st, err := store.Open(e.ctx, db)
	if err != nil {
		e.t.Fatalf("store.Open: %v", err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// onceFleet returns the environment of a fleet that create makes, once, on the first call (a
// -bench pattern may select one engine only), with every call then taking benchLatency: the
// sub-benchmarks of both engines share the fleet, and the parent benchmark's lifetime.
func onceFleet(b *testing.B, create func(e *env)) func() *env {
	var e *env
	return func() *env {
		if e == nil {
			e = newEnv(b)
			create(e)
			e.sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
		}
		return e
	}
}

// BenchmarkFleet measures discovery and the attribute cycle at 1,000, 5,000 and 10,000 queues
// (sources, each with a DLQ, selected by a prefix so that ListDeadLetterSourceQueues is asked
// too) on SQLite and on PostgreSQL, 20 ms a call: a discovery on an empty store (a fresh
// start), a discovery by a new collector on the same store (a restart: every queue is resumed
// from the store), an attribute cycle of every queue, and the floor of that cycle, the same
// GetQueueAttributes calls in an ideal loop of DefaultConcurrency in flight that stores
// nothing. It reports each with its AWS calls and store statements, then, per engine, each
// cost's exponent fitted over the three sizes (1: linear).
func BenchmarkFleet(b *testing.B) {
	fits := map[string]map[string][]float64{} // engine → figure → one value per size
	for _, n := range scaleSizes {
		fleet := onceFleet(b, func(e *env) {
			for i := range n / 2 {
				e.createPair(fmt.Sprintf("fleet-%05d", i), fmt.Sprintf("fleet-%05d-dlq", i), 3)
			}
		})
		for _, engine := range engines {
			b.Run(fmt.Sprintf("queues=%d/engine=%s", n, engine), func(b *testing.B) {
				e := fleet()
				e.t = b
				var f fleetFigures
				for b.Loop() {
					f = measureFleet(b, e, engine)
				}
				f.report(b, n)
				if fits[engine] == nil {
					fits[engine] = map[string][]float64{}
				}
				for name, v := range f.costs() {
					fits[engine][name] = append(fits[engine][name], v)
				}
			})
		}
	}
	for _, engine := range engines {
		for _, name := range slices.Sorted(maps.Keys(fits[engine])) {
			if vs := fits[engine][name]; len(vs) == len(scaleSizes) {
				b.Logf("engine=%s %s grows as n^%.2f (%v at %v queues)", engine, name, exponent(scaleSizes, vs), vs, scaleSizes)
			}
		}
	}
}

// fleetFigures are one BenchmarkFleet measure.
type fleetFigures struct {
	discovery, rediscovery, cycle, floor time.Duration
	// calls and statements of the fresh discovery, the restart's and the cycle
	discoveryCalls, rediscoveryCalls, cycleCalls                map[string]int
	discoveryStatements, rediscoveryStatements, cycleStatements int
}

// measureFleet runs the four measures of BenchmarkFleet once, on a new store of engine.
func measureFleet(b *testing.B, e *env, engine string) fleetFigures {
	var f fleetFigures
	e.store = e.openEngine(engine)
	var statements atomic.Int64
	e.store.Trace(func(store.Statement) { statements.Add(1) })
	selection := func(o *Options) { o.QueuePrefixes = []string{"fleet-"} }
	step := func(run func()) (time.Duration, map[string]int, int) {
		e.sim.ResetCallCounts()
		statements.Store(0)
		start := time.Now()
		run()
		return time.Since(start), e.sim.CallCounts(), int(statements.Load())
	}
	f.discovery, f.discoveryCalls, f.discoveryStatements = step(func() { must(b, e.collector(selection).Discover(e.ctx)) })
	c := e.collector(selection)
	f.rediscovery, f.rediscoveryCalls, f.rediscoveryStatements = step(func() { must(b, c.Discover(e.ctx)) })
	e.advance(DefaultAttributesInterval)
	f.cycle, f.cycleCalls, f.cycleStatements = step(func() { must(b, c.CycleAttributes(e.ctx)) })
	queues := c.watched()
	f.floor, _, _ = step(func() {
		forEach(e.ctx, DefaultConcurrency, queues, func(q *watchedQueue) {
			_, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(q.url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
			})
			must(b, err)
		})
	})
	e.store.Trace(nil)
	return f
}

// costs are the figures whose growth BenchmarkFleet fits, in seconds and counts.
func (f fleetFigures) costs() map[string]float64 {
	total := func(calls map[string]int) float64 {
		n := 0
		for _, c := range calls {
			n += c
		}
		return float64(n)
	}
	return map[string]float64{
		"discovery-s": f.discovery.Seconds(), "rediscovery-s": f.rediscovery.Seconds(),
		"cycle-s": f.cycle.Seconds(), "floor-s": f.floor.Seconds(),
		"discovery-calls": total(f.discoveryCalls), "discovery-statements": float64(f.discoveryStatements),
		"rediscovery-statements": float64(f.rediscoveryStatements), "cycle-statements": float64(f.cycleStatements),
	}
}

func (f fleetFigures) report(b *testing.B, n int) {
	b.ReportMetric(f.discovery.Seconds(), "discovery-s")
	b.ReportMetric(f.rediscovery.Seconds(), "rediscovery-s")
	b.ReportMetric(f.cycle.Seconds(), "cycle-s")
	b.ReportMetric(f.floor.Seconds(), "floor-s")
	b.ReportMetric(f.cycle.Seconds()/f.floor.Seconds(), "cycle/floor")
	b.ReportMetric(float64(f.discoveryStatements)/float64(n), "discovery-statements/queue")
	b.ReportMetric(float64(f.rediscoveryStatements)/float64(n), "rediscovery-statements/queue")
	b.ReportMetric(float64(f.cycleStatements)/float64(n), "cycle-statements/queue")
	for _, op := range []string{"ListQueues", "GetQueueAttributes", "GetQueueUrl", "ListDeadLetterSourceQueues"} {
		b.ReportMetric(float64(f.discoveryCalls[op]), "discovery-"+op)
		b.ReportMetric(float64(f.rediscoveryCalls[op]), "rediscovery-"+op)
	}
	b.ReportMetric(float64(f.cycleCalls["GetQueueAttributes"])/float64(n), "cycle-GetQueueAttributes/queue")
}

// exponent is the slope of log(value) against log(size) by least squares: how a cost grows with
// the fleet (1: linearly, 2: as its square).
func exponent(sizes []int, values []float64) float64 {
	var sx, sy, sxx, sxy float64
	for i, n := range sizes {
		x, y := math.Log(float64(n)), math.Log(values[i])
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	k := float64(len(sizes))
	return (k*sxy - sx*sy) / (k*sxx - sx*sx)
}

// BenchmarkCycleVersusNaive times, in one run, an attribute cycle of the collector over a fleet
// of source queues with their DLQs, 20 ms a call, against a naive loop that reads and stores
// each queue in turn; it reports both, the speed-up, and the calls per cycle over the fewest
// the cycle can make (one GetQueueAttributes a queue), then the same for a CloudWatch cycle (one
// GetMetricData per 500 queries).
func BenchmarkCycleVersusNaive(b *testing.B) {
	for _, n := range fleetSizes() {
		b.Run(fmt.Sprintf("queues=%d", n), func(b *testing.B) {
			e := newEnv(b)
			c, _ := steadyFleet(b, e, n/2, 10)
			queues := c.watched()
			e.sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
			var naive, cycle, metrics time.Duration
			var calls, metricCalls, queries int
			for b.Loop() {
				e.advance(DefaultAttributesInterval)
				start := time.Now()
				for _, q := range queues {
					out, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{
						QueueUrl: aws.String(q.url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
					})
					must(b, err)
					must(b, e.store.SaveQueueAttributes(e.ctx, store.QueueAttributes{QueueID: q.id, At: e.clock.Now(), Attributes: out.Attributes,
						Depth: store.AttributeSample{Visible: attrInt(out.Attributes, "ApproximateNumberOfMessages")}}))
				}
				naive = time.Since(start)
				e.sim.ResetCallCounts()
				start = time.Now()
				must(b, c.CycleAttributes(e.ctx))
				cycle = time.Since(start)
				calls = e.sim.CallCount("GetQueueAttributes")
				e.advance(DefaultCountersInterval)
				e.sim.ResetCallCounts()
				start = time.Now()
				must(b, c.CycleMetrics(e.ctx))
				metrics = time.Since(start)
				metricCalls = e.sim.CallCount("GetMetricData")
				queries = 0
				for _, q := range e.sim.MetricQueriesPerCall() {
					queries += q
				}
			}
			b.ReportMetric(naive.Seconds(), "naive-s")
			b.ReportMetric(cycle.Seconds(), "cycle-s")
			b.ReportMetric(naive.Seconds()/cycle.Seconds(), "speedup-x")
			b.ReportMetric(float64(calls)/float64(len(queues)), "attribute-calls/min")
			b.ReportMetric(metrics.Seconds(), "metrics-cycle-s")
			b.ReportMetric(float64(queries), "metric-queries")
			b.ReportMetric(float64(metricCalls)/math.Ceil(float64(queries)/maxQueriesPerCall), "metric-calls/min")
		})
	}
}

// BenchmarkCostPerDay runs every loop of the collector, as Run does, for an hour of a steady
// fleet on the manual clock (sources holding messages, DLQs empty but every tenth, or every DLQ
// holding messages), after a five-minute warm-up, and prices what the simulator counted as a
// day, per 1,000 queues; next to it the collector's own estimate. The fleet is 200 queues (1,000
// with TOOLQ_BENCH_LONG, which takes five minutes): every call but the account's one ListQueues
// per discovery is per queue, so the cost per 1,000 queues is the same.
func BenchmarkCostPerDay(b *testing.B) {
	for _, f := range []struct {
		name        string
		filledEvery int
	}{{"dlqs=tenth-hold", 10}, {"dlqs=all-hold", 1}} {
		b.Run(f.name, func(b *testing.B) {
			e := newEnv(b)
			pairs := 100
			if longBench() {
				pairs = 500
			}
			c, priced := steadyFleet(b, e, pairs, f.filledEvery)
			per1000 := 1000 / float64(2*pairs)
			var usd, requests, metrics float64
			for b.Loop() {
				runLoops(b, e, c, 5*time.Minute)
				e.sim.ResetCallCounts()
				priced.reset()
				runLoops(b, e, c, time.Hour)
				requests, metrics, usd = costFromCallCounts(b, e, priced, time.Hour)
			}
			est, err := e.store.GetCostEstimate(e.ctx)
			must(b, err)
			b.ReportMetric(usd*per1000, "counted-usd/day/1000q")
			b.ReportMetric(est.TotalUSDPerDay*per1000, "estimated-usd/day/1000q")
			b.ReportMetric(requests*per1000, "sqs-requests/day/1000q")
			b.ReportMetric(metrics*per1000, "metrics/day/1000q")
			for _, l := range est.Loops {
				b.ReportMetric(l.USD*per1000, l.Loop+"-usd/day/1000q")
			}
		})
	}
}

// BenchmarkServe runs the collector as serve does (Run, real time, every loop at once with its
// own budget) over a fleet of sources with their DLQs, selected by a prefix, at 20 ms a call, on
// SQLite and on PostgreSQL, and reports when the first full attribute cycle landed (every queue
// with a depth sample), the longest attribute cycle while the other loops ran, and, after a
// restart on the same store, when the first full cycle landed again. 1,000 queues; 5,000 and
// 10,000 with TOOLQ_BENCH_LONG (their attribute cycles come every 15 s of the clock).
func BenchmarkServe(b *testing.B) {
	for _, n := range fleetSizes() {
		fleet := onceFleet(b, func(e *env) {
			_, _ = steadyFleet(b, e, n/2, 10) // creates the fleet; its collector is not used
		})
		for _, engine := range engines {
			b.Run(fmt.Sprintf("queues=%d/engine=%s", n, engine), func(b *testing.B) {
				e := fleet()
				e.t = b
				var first, restart, longest time.Duration
				for b.Loop() {
					e.store = e.openEngine(engine)
					first, longest = serveUntilCycles(b, e, n, 3)
					restart, _ = serveUntilCycles(b, e, n, 1)
				}
				b.ReportMetric(first.Seconds(), "first-full-cycle-s")
				b.ReportMetric(restart.Seconds(), "restart-full-cycle-s")
				b.ReportMetric(longest.Seconds(), "longest-attribute-cycle-s")
			})
		}
	}
}

// serveUntilCycles runs a new collector over e's store in real time until cycles attribute
// cycles over most of n queues have finished after the first full one, and returns when the
// first one landed and the longest attribute cycle. It reads every queue's newest depth twice a
// second until the first full cycle, and then only the runs: at 10,000 queues the newest depths
// are a read of its own.
func serveUntilCycles(b *testing.B, e *env, n, cycles int) (first, longest time.Duration) {
	b.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	c := e.collector(func(o *Options) {
		o.Now = time.Now
		o.MoveTasksInterval = 0
		o.QueuePrefixes = []string{"fleet-"}
	})
	start := time.Now()
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	seen := 0
	for time.Since(start) < 5*time.Minute {
		if first == 0 {
			time.Sleep(500 * time.Millisecond)
			latest, err := e.store.LatestAttributeSamples(e.ctx)
			must(b, err)
			fresh := 0
			for _, a := range latest {
				if !a.At.Before(start) {
					fresh++
				}
			}
			if fresh < n {
				continue
			}
			first = time.Since(start)
		}
		time.Sleep(250 * time.Millisecond)
		runs, err := e.store.RunsSince(e.ctx, store.RunAttributes, start)
		must(b, err)
		seen = 0
		for _, r := range runs {
			if r.Queues >= n/2 { // a cycle over the queues due, most of them
				seen++
			}
			if d := r.FinishedAt.Sub(r.StartedAt); d > longest {
				longest = d
			}
		}
		if seen > cycles {
			return first, longest
		}
	}
	b.Fatalf("after 5 minutes: first full cycle %v, %d cycles", first, seen)
	return first, longest
}
