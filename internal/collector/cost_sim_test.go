package collector

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// pricedSQS is the real SQS client, counting its calls by price: FIFO queues' and the others'.
// The simulator counts calls by operation only; this says which of them AWS bills at the FIFO
// price, and its totals must match the simulator's.
type pricedSQS struct {
	SQSAPI
	mu             sync.Mutex
	standard, fifo int
}

func (p *pricedSQS) count(queue string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.HasSuffix(queue, ".fifo") {
		p.fifo++
	} else {
		p.standard++
	}
}

func (p *pricedSQS) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.standard, p.fifo = 0, 0
}

func (p *pricedSQS) ListQueues(ctx context.Context, in *sqs.ListQueuesInput, o ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error) {
	p.count("")
	return p.SQSAPI.ListQueues(ctx, in, o...)
}

func (p *pricedSQS) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, o ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	p.count("")
	return p.SQSAPI.GetQueueUrl(ctx, in, o...)
}

func (p *pricedSQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	p.count(aws.ToString(in.QueueUrl))
	return p.SQSAPI.GetQueueAttributes(ctx, in, o...)
}

func (p *pricedSQS) ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, o ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error) {
	p.count(aws.ToString(in.QueueUrl))
	return p.SQSAPI.ListDeadLetterSourceQueues(ctx, in, o...)
}

func (p *pricedSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	p.count(aws.ToString(in.QueueUrl))
	return p.SQSAPI.ReceiveMessage(ctx, in, o...)
}

func (p *pricedSQS) ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, o ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error) {
	p.count(aws.ToString(in.QueueUrl))
	return p.SQSAPI.ChangeMessageVisibilityBatch(ctx, in, o...)
}

func (p *pricedSQS) ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, o ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error) {
	p.count(aws.ToString(in.SourceArn))
	return p.SQSAPI.ListMessageMoveTasks(ctx, in, o...)
}

// steadyFleet creates pairs source queues, each holding messages that nobody consumes, with a
// dead-letter queue that is empty but every filledEvery-th, which holds a few (10: the fleet of
// docs/collector.md's table; 1: every DLQ holds messages); half of them FIFO. It returns a
// collector over them at the default cadences (no backfill), its pricing client, and has
// discovered them.
func steadyFleet(tb testing.TB, e *env, pairs, filledEvery int) (*Collector, *pricedSQS) {
	tb.Helper()
	for i := range pairs {
		ext, group := "", func(*sqs.SendMessageInput) {}
		if i%2 == 0 {
			ext, group = ".fifo", inGroup("g", fmt.Sprint(i))
		}
		src, dlq := e.createPair(fmt.Sprintf("fleet-%04d%s", i, ext), fmt.Sprintf("fleet-%04d-dlq%s", i, ext), 3)
		e.send(src, toolCallBody("search", i, "s"), group)
		if i%filledEvery == 0 {
			for k := range 3 {
				e.send(dlq, toolCallBody("search", k, "s"), inGroup("g", fmt.Sprintf("%d-%d", i, k)), func(in *sqs.SendMessageInput) {
					if filepath.Ext(aws.ToString(in.QueueUrl)) != ".fifo" {
						in.MessageGroupId, in.MessageDeduplicationId = nil, nil
					}
				})
			}
		}
	}
	priced := &pricedSQS{SQSAPI: e.sqs}
	c := e.collector(func(o *Options) {
		o.Regions[0].SQS = priced
		o.MoveTasksInterval = 0 // the default, the discovery interval
	})
	must(tb, c.Discover(e.ctx))
	return c, priced
}

// runLoops drives every loop of c as Run does, each at its own tick, on the manual clock, for d
// from the clock's current time, second by second.
func runLoops(tb testing.TB, e *env, c *Collector, d time.Duration) {
	tb.Helper()
	loops := []struct {
		every time.Duration
		cycle func(context.Context) error
	}{
		{c.opts.DiscoveryInterval, c.Discover},
		{c.opts.AttributesInterval, c.AttributesDue},
		{c.opts.MetricsInterval, c.CycleMetrics},
		{peekDueCheck, c.PeekDue},
		{c.opts.MoveTasksRunningInterval, c.PollMoveTasks},
	}
	for at := time.Duration(0); at < d; at += time.Second {
		for _, l := range loops {
			if at%l.every == 0 {
				must(tb, l.cycle(e.ctx))
			}
		}
		e.advance(time.Second)
	}
}

// costFromCallCounts prices what the simulator counted (its totals checked against the pricing
// client's split) over a span, as a day.
func costFromCallCounts(tb testing.TB, e *env, priced *pricedSQS, span time.Duration) (requests, metrics, usd float64) {
	tb.Helper()
	total := 0
	for _, n := range e.sim.CallCounts() {
		total += n
	}
	total -= e.sim.CallCount("GetMetricData")
	priced.mu.Lock()
	standard, fifo := priced.standard, priced.fifo
	priced.mu.Unlock()
	if standard+fifo != total {
		tb.Fatalf("the simulator counted %d SQS calls, the pricing client %d", total, standard+fifo)
	}
	for _, n := range e.sim.MetricQueriesPerCall() {
		metrics += float64(n)
	}
	day := float64(24*time.Hour) / float64(span)
	requests = float64(total) * day
	metrics *= day
	usd = (float64(standard)*day/1e6)*USDPerMillionStandardRequests + (float64(fifo)*day/1e6)*USDPerMillionFIFORequests +
		metrics/1000*USDPerThousandMetrics
	return requests, metrics, usd
}

// TestCostEstimateAgreesWithCallCounts runs every loop of the collector for an hour of a steady
// fleet, after a warm-up, and prices the calls the simulator counted: the collector's own
// estimate of a day must be what an hour of calls comes to, times 24; for the fleet of the
// cost table and for one where every dead-letter queue holds messages.
func TestCostEstimateAgreesWithCallCounts(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name        string
		filledEvery int
	}{{"every tenth DLQ holds messages", 10}, {"every DLQ holds messages", 1}} {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t)
			c, priced := steadyFleet(t, e, 10, f.filledEvery)
			runLoops(t, e, c, 5*time.Minute) // every DLQ quiet, every queue read once
			e.sim.ResetCallCounts()
			priced.reset()
			runLoops(t, e, c, time.Hour)
			requests, metrics, usd := costFromCallCounts(t, e, priced, time.Hour)
			est, err := e.store.GetCostEstimate(e.ctx)
			must(t, err)
			t.Logf("counted: %.0f requests, %.0f metrics, $%.4f a day; estimated: %.0f, %.0f, $%.4f",
				requests, metrics, usd, est.SQSRequestsPerDay, est.MetricsPerDay, est.TotalUSDPerDay)
			for _, l := range est.Loops {
				t.Logf("  estimated %-10s %8.0f requests %6.0f metrics $%.4f", l.Loop, l.SQSRequests, l.Metrics, l.USD)
			}
			t.Logf("  counted by operation in the hour: %v", e.sim.CallCounts())
			within := func(got, want float64) bool { return math.Abs(got-want) <= 0.01*want }
			if !within(requests, est.SQSRequestsPerDay) || !within(metrics, est.MetricsPerDay) || !within(usd, est.TotalUSDPerDay) {
				t.Errorf("counted %.0f requests, %.0f metrics, $%.4f a day; the estimate says %.0f, %.0f, $%.4f",
					requests, metrics, usd, est.SQSRequestsPerDay, est.MetricsPerDay, est.TotalUSDPerDay)
			}
			if est.Cadences != c.opts.cadences() {
				t.Errorf("estimated at %+v, running at %+v", est.Cadences, c.opts.cadences())
			}
		})
	}
}

// TestBudgetSlowsTheCollector: with a budget under the default cost, the collector runs at the
// slower cadences its estimate chose, and the calls it makes fit the budget.
func TestBudgetSlowsTheCollector(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c, priced := steadyFleet(t, e, 10, 10)
	c.opts.BudgetUSDPerDay = 0.05
	runLoops(t, e, c, 10*time.Minute)
	e.sim.ResetCallCounts()
	priced.reset()
	runLoops(t, e, c, 2*time.Hour)
	_, _, usd := costFromCallCounts(t, e, priced, 2*time.Hour)
	est, err := e.store.GetCostEstimate(e.ctx)
	must(t, err)
	if est.Cadences == c.opts.cadences() || est.BudgetUSDPerDay != 0.05 || c.cadence() != est.Cadences {
		t.Fatalf("the collector runs at %+v, the estimate says %+v for a budget of %v", c.cadence(), est.Cadences, est.BudgetUSDPerDay)
	}
	if est.OverBudget || est.TotalUSDPerDay > 0.05 || usd > 0.05*1.02 {
		t.Errorf("estimated $%.4f, counted $%.4f a day, for a budget of $0.05", est.TotalUSDPerDay, usd)
	}
	t.Logf("$%.4f counted, $%.4f estimated: %s", usd, est.TotalUSDPerDay, est.Cadences)
}
