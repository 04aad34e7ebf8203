package collector

import (
	"math"
	"testing"

	"github.com/toolq/toolq/internal/store"
)

// defaultCadences are the cadences of the default options.
var defaultCadences = store.Cadences{
	Attributes: DefaultAttributesInterval, QuietAttributes: DefaultQuietAttributesInterval, QuietDeadLetter: DefaultQuietDeadLetterInterval,
	OldestAge: DefaultMetricsInterval, Counters: DefaultCountersInterval, MoveTasks: DefaultDiscoveryInterval,
	PeekDeadLetter: DefaultPeekDeadLetterInterval, PeekSource: DefaultPeekSourceInterval, Discovery: DefaultDiscoveryInterval,
}

// defaultCostConfig is the default cadences with one prefix in one region.
var defaultCostConfig = CostConfig{Regions: 1, ListingsPerRegion: 1, Cadences: defaultCadences, CloudWatch: true, ListSources: true}

// fleet is n source queues that hold messages, each with a dead-letter queue that is quiet, and
// empty but every filledEvery-th, which holds a few messages (one receive per pass); fifoShare of
// them FIFO. filledEvery 10 is the fleet of docs/collector.md's table; 1, one where every DLQ
// holds messages.
func fleet(n int, fifoShare float64, filledEvery int) []CostQueue {
	var qs []CostQueue
	for i := range n {
		fifo := float64(i) < float64(n)*fifoShare
		dlq := CostQueue{FIFO: fifo, DeadLetter: true, Peeked: true, Quiet: true, ReadAsDeadLetter: true}
		if i%filledEvery == 0 {
			dlq.ReceivesPerPass = 1
		}
		qs = append(qs, CostQueue{FIFO: fifo, HeldMessages: true}, dlq)
	}
	return qs
}

func TestEstimateCost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		queues       []CostQueue
		wantRequests float64
		wantMetrics  float64
		wantUSD      float64
	}{
		{
			// 288 ListQueues; per queue 5,760 GetQueueAttributes + 288 ListDeadLetterSourceQueues;
			// 5 counters a queue, hourly.
			name:         "ten standard queues, empty but not quiet",
			queues:       make([]CostQueue, 10),
			wantRequests: 288 + 10*(5760+288),
			wantMetrics:  10 * 5 * 24,
			wantUSD:      (288+10*6048)/1e6*0.40 + 10*5*24/1000.0*0.01,
		},
		{
			// + the age of the oldest message every 5 minutes.
			name:         "one standard queue holding messages",
			queues:       []CostQueue{{HeldMessages: true}},
			wantRequests: 288 + 5760 + 288,
			wantMetrics:  5*24 + 288,
			wantUSD:      (288+5760+288)/1e6*0.40 + (5*24+288)/1000.0*0.01,
		},
		{
			// A quiet FIFO DLQ holding messages: 2,880 GetQueueAttributes (every 30 s), 288
			// ListMessageMoveTasks, 1,440 passes of 1 receive + 1 release (the depth is the
			// attribute loop's); no CloudWatch.
			name:         "one peeked quiet FIFO dead-letter queue",
			queues:       []CostQueue{{FIFO: true, DeadLetter: true, Quiet: true, ReadAsDeadLetter: true, Peeked: true, ReceivesPerPass: 1}},
			wantRequests: 288 + 2880 + 288 + 288 + 1440*2,
			wantMetrics:  0,
			wantUSD:      288/1e6*0.40 + (2880+288+288+1440*2)/1e6*0.50,
		},
		{
			// An empty quiet DLQ costs its reads alone: its samples make no call.
			name:         "one peeked empty dead-letter queue",
			queues:       []CostQueue{{DeadLetter: true, Quiet: true, ReadAsDeadLetter: true, Peeked: true}},
			wantRequests: 288 + 2880 + 288 + 288,
			wantUSD:      (288 + 2880 + 288 + 288) / 1e6 * 0.40,
		},
		{
			// An opted-in source with a RedrivePolicy: each of its 288 samples reads its depth
			// first, then 2 receives and 2 releases; 5 counters hourly, the age every 5 min.
			name:         "one guarded opted-in source",
			queues:       []CostQueue{{HeldMessages: true, Peeked: true, PeekSource: true, Guarded: true, ReceivesPerPass: 2}},
			wantRequests: 288 + 5760 + 288 + 288*5,
			wantMetrics:  5*24 + 288,
			wantUSD:      (288+5760+288+288*5)/1e6*0.40 + (5*24+288)/1000.0*0.01,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EstimateCost(defaultCostConfig, tt.queues, t0)
			if !near(got.SQSRequestsPerDay, tt.wantRequests) || !near(got.MetricsPerDay, tt.wantMetrics) || !near(got.TotalUSDPerDay, tt.wantUSD) {
				t.Errorf("estimate = %+v, want %v requests, %v metrics, $%v", got, tt.wantRequests, tt.wantMetrics, tt.wantUSD)
			}
			if !near(got.SQSUSDPerDay+got.CloudWatchUSDPerDay, got.TotalUSDPerDay) || !got.At.Equal(t0) {
				t.Errorf("estimate parts do not add up: %+v", got)
			}
			sum := 0.0
			for _, l := range got.Loops {
				sum += l.USD
			}
			if !near(sum, got.TotalUSDPerDay) || len(got.Loops) != len(costLoops) {
				t.Errorf("loops %+v add up to $%v, want $%v", got.Loops, sum, got.TotalUSDPerDay)
			}
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestCostForFleetSizes prints the tables of docs/collector.md (go test -run CostForFleet -v) and
// holds the bound: at most $5 a day per 1,000 queues at the defaults, also when every
// dead-letter queue holds messages.
func TestCostForFleetSizes(t *testing.T) {
	t.Parallel()
	for _, f := range []struct {
		name        string
		filledEvery int
	}{{"every tenth DLQ holds messages", 10}, {"every DLQ holds messages", 1}} {
		t.Run(f.name, func(t *testing.T) {
			prev := 0.0
			for _, n := range []int{5, 50, 500, 2500, 5000} {
				e := EstimateCost(defaultCostConfig, fleet(n, 0.5, f.filledEvery), t0)
				t.Logf("%4d source queues + %4d DLQs: %9.0f SQS requests/day $%.4f, %7.0f metrics/day $%.4f, total $%.4f/day, $%.2f/month",
					n, n, e.SQSRequestsPerDay, e.SQSUSDPerDay, e.MetricsPerDay, e.CloudWatchUSDPerDay, e.TotalUSDPerDay, e.TotalUSDPerDay*30)
				for _, l := range e.Loops {
					t.Logf("      %-10s %10.0f requests %8.0f metrics $%.4f", l.Loop, l.SQSRequests, l.Metrics, l.USD)
				}
				if e.TotalUSDPerDay <= prev {
					t.Errorf("cost does not grow with the fleet")
				}
				// Per 1,000 queues: a fleet of ten, three of its five pairs FIFO, says little.
				if perThousand := e.TotalUSDPerDay / float64(2*n) * 1000; 2*n >= 1000 && perThousand > 5 {
					t.Errorf("%d queues: $%.2f a day per 1,000 queues, over $5", 2*n, perThousand)
				}
				prev = e.TotalUSDPerDay
			}
		})
	}
}

// TestPlanCadences: without a budget, or within it, the configured cadences stay; a tighter
// budget slows them step by step, never faster than configured, and says when even the slowest
// do not fit.
func TestPlanCadences(t *testing.T) {
	t.Parallel()
	queues := fleet(500, 0.5, 10)
	full := EstimateCost(defaultCostConfig, queues, t0).TotalUSDPerDay
	tests := []struct {
		name   string
		budget float64
		over   bool
	}{
		{"no budget", 0, false},
		{"a budget above the cost", full + 1, false},
		{"three quarters", full * 0.75, false},
		{"a third", full / 3, false},
		{"a cent", 0.01, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, over := PlanCadences(tt.budget, defaultCostConfig, queues, t0)
			if over != tt.over || e.OverBudget != tt.over {
				t.Fatalf("over budget = %v (%v), want %v: $%.2f for a budget of $%.2f", over, e.OverBudget, tt.over, e.TotalUSDPerDay, tt.budget)
			}
			if tt.budget <= 0 || tt.budget >= full {
				if e.Cadences != defaultCadences || !near(e.TotalUSDPerDay, full) {
					t.Errorf("cadences %+v at $%.2f, want the configured ones at $%.2f", e.Cadences, e.TotalUSDPerDay, full)
				}
				return
			}
			if !tt.over && e.TotalUSDPerDay > tt.budget {
				t.Errorf("planned $%.2f, over the budget of $%.2f", e.TotalUSDPerDay, tt.budget)
			}
			if slower(e.Cadences, defaultCadences) != e.Cadences {
				t.Errorf("cadences %+v faster than configured", e.Cadences)
			}
			if e.BudgetUSDPerDay != tt.budget {
				t.Errorf("budget recorded %v", e.BudgetUSDPerDay)
			}
			t.Logf("$%.2f: %s", e.TotalUSDPerDay, e.Cadences.String())
		})
	}
}

func TestCostEstimateStoredAfterCycles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 3)
	c := e.collector(func(o *Options) { o.MoveTasksInterval = 0 })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	must(t, c.CycleAttributes(e.ctx))
	got, err := e.store.GetCostEstimate(e.ctx)
	must(t, err)
	// The whole account is watched: its redrive policies name every pair, and no
	// ListDeadLetterSourceQueues is made.
	cfg := defaultCostConfig
	cfg.ListSources = false
	want := EstimateCost(cfg, []CostQueue{
		{}, // the source: empty, just changed
		{DeadLetter: true, ReadAsDeadLetter: true, Peeked: true, ReceivesPerPass: 1}, // all 3 messages in one answer: no receive after the last
	}, e.clock.Now())
	if !near(got.TotalUSDPerDay, want.TotalUSDPerDay) || !near(got.SQSRequestsPerDay, want.SQSRequestsPerDay) {
		t.Errorf("stored estimate = %+v, want %+v", got, want)
	}
	if got.Cadences != defaultCadences || len(got.Loops) != len(costLoops) {
		t.Errorf("stored cadences %+v, loops %+v", got.Cadences, got.Loops)
	}
}
