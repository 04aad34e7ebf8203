package collector

import (
	"math"
	"testing"
	"time"
)

// defaultCostConfig is the default cadences with one prefix in one region.
var defaultCostConfig = CostConfig{
	Regions: 1, ListingsPerRegion: 1,
	DiscoveryInterval: DefaultDiscoveryInterval, AttributesInterval: DefaultAttributesInterval,
	MetricsInterval: DefaultMetricsInterval, MoveTasksInterval: DefaultAttributesInterval,
	CloudWatch: true, ListSources: true,
}

// fleet is n source queues, each with a dead-letter queue that holds a few messages (one
// receive per pass); fifoShare of them FIFO.
func fleet(n int, fifoShare float64) []CostQueue {
	var qs []CostQueue
	for i := range n {
		fifo := float64(i) < float64(n)*fifoShare
		qs = append(qs,
			CostQueue{FIFO: fifo},
			CostQueue{FIFO: fifo, DeadLetter: true, Peeked: true, PeekInterval: DefaultPeekDeadLetterInterval, ReceivesPerPass: 1})
	}
	return qs
}

func TestEstimateCost(t *testing.T) {
	tests := []struct {
		name         string
		queues       []CostQueue
		wantRequests float64
		wantMetrics  float64
		wantUSD      float64
	}{
		{
			// 288 ListQueues; per queue 5,760 GetQueueAttributes + 288 ListDeadLetterSourceQueues.
			name:         "ten standard queues",
			queues:       make([]CostQueue, 10),
			wantRequests: 288 + 10*(5760+288),
			wantMetrics:  10 * 6 * 288,
			wantUSD:      (288+10*6048)/1e6*0.40 + 10*6*288/1000.0*0.01,
		},
		{
			// A FIFO DLQ: + 5,760 ListMessageMoveTasks + 1,440 passes of 1 read + 1 receive + 1 release.
			name:         "one peeked FIFO dead-letter queue",
			queues:       []CostQueue{{FIFO: true, DeadLetter: true, Peeked: true, PeekInterval: time.Minute, ReceivesPerPass: 1}},
			wantRequests: 288 + 5760 + 288 + 5760 + 1440*3,
			wantMetrics:  8 * 288,
			wantUSD:      288/1e6*0.40 + (5760+288+5760+1440*3)/1e6*0.50 + 8*288/1000.0*0.01,
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
		})
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestCostForFleetSizes prints the table of docs/collector.md (go test -run CostForFleet -v).
func TestCostForFleetSizes(t *testing.T) {
	prev := 0.0
	for _, n := range []int{5, 50, 500} {
		e := EstimateCost(defaultCostConfig, fleet(n, 0.5), t0)
		t.Logf("%4d source queues + %4d DLQs: %9.0f SQS requests/day $%.4f, %7.0f metrics/day $%.4f, total $%.4f/day, $%.2f/month",
			n, n, e.SQSRequestsPerDay, e.SQSUSDPerDay, e.MetricsPerDay, e.CloudWatchUSDPerDay, e.TotalUSDPerDay, e.TotalUSDPerDay*30)
		if e.TotalUSDPerDay <= prev {
			t.Errorf("cost does not grow with the fleet")
		}
		prev = e.TotalUSDPerDay
	}
}

func TestCostEstimateStoredAfterCycles(t *testing.T) {
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 3)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	must(t, c.CycleAttributes(e.ctx))
	got, err := e.store.GetCostEstimate(e.ctx)
	must(t, err)
	want := EstimateCost(defaultCostConfig, []CostQueue{
		{DeadLetter: false},
		{DeadLetter: true, Peeked: true, PeekInterval: time.Minute, ReceivesPerPass: 1}, // all 3 messages in one answer: no receive after the last
	}, e.clock.Now())
	if !near(got.TotalUSDPerDay, want.TotalUSDPerDay) || !near(got.SQSRequestsPerDay, want.SQSRequestsPerDay) {
		t.Errorf("stored estimate = %+v, want %+v", got, want)
	}
}
