package collector

import (
	"context"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// AWS list prices the cost estimate uses (us-east-1, without the free tier).
const (
	USDPerMillionStandardRequests = 0.40
	USDPerMillionFIFORequests     = 0.50
	USDPerThousandMetrics         = 0.01 // GetMetricData, per metric requested
	// USDPerThousandCloudWatchRequests prices CloudWatch's other API requests, DescribeAlarms
	// among them (the first million a month are free, which the estimate leaves out like every
	// free tier). Lambda's and EventBridge's listing calls are not billed.
	USDPerThousandCloudWatchRequests = 0.01
)

// CostQueue is what the estimate needs to know of one watched queue.
type CostQueue struct {
	FIFO       bool
	DeadLetter bool
	// Peeked says whether the collector samples the queue's messages, at PeekInterval.
	Peeked       bool
	PeekInterval time.Duration
	// ReceivesPerPass is what the queue's last pass spent (0: an empty queue, which costs only
	// the GetQueueAttributes read before the pass).
	ReceivesPerPass int
	// NoCloudWatch: the queue's region reads no CloudWatch (none configured, or it fails).
	NoCloudWatch bool
}

// CostConfig is the running configuration the estimate prices.
type CostConfig struct {
	Regions            int
	ListingsPerRegion  int // ListQueues and GetQueueUrl calls per discovery
	DiscoveryInterval  time.Duration
	AttributesInterval time.Duration
	MetricsInterval    time.Duration
	MoveTasksInterval  time.Duration
	CloudWatch         bool
	// ListSources says whether ListDeadLetterSourceQueues is called per queue per discovery.
	ListSources bool
	// AlarmCallsPerDiscovery and FreeCallsPerDiscovery are what one topology cycle (at the
	// discovery interval) calls: DescribeAlarms pages, and Lambda and EventBridge listings.
	AlarmCallsPerDiscovery int
	FreeCallsPerDiscovery  int
}

// EstimateCost prices a day of the configuration at list prices: every call each loop makes per
// day for the given queues, and the topology loop's calls as its last cycle made them. A queue's own calls are billed at its type's price; account-level
// listings at the standard price. The one-time backfill and the extra polls of a running move
// task are left out: they are not part of the steady state.
func EstimateCost(cfg CostConfig, queues []CostQueue, at time.Time) store.CostEstimate {
	perDay := func(every time.Duration) float64 {
		if every <= 0 {
			return 0
		}
		return float64(24*time.Hour) / float64(every)
	}
	var standard, fifo, metrics float64
	standard += float64(cfg.Regions*cfg.ListingsPerRegion) * perDay(cfg.DiscoveryInterval)
	for _, q := range queues {
		calls := perDay(cfg.AttributesInterval)
		if cfg.ListSources {
			calls += perDay(cfg.DiscoveryInterval)
		}
		if q.DeadLetter {
			calls += perDay(cfg.MoveTasksInterval)
		}
		if q.Peeked {
			// A pass reads the depth, receives, and hands back what it took: at most one
			// ChangeMessageVisibilityBatch per receive of ten.
			calls += perDay(q.PeekInterval) * float64(1+2*q.ReceivesPerPass)
		}
		if q.FIFO {
			fifo += calls
		} else {
			standard += calls
		}
		if cfg.CloudWatch && !q.NoCloudWatch {
			metrics += float64(len(metricsOf(q.FIFO))) * perDay(cfg.MetricsInterval)
		}
	}
	alarms := float64(cfg.AlarmCallsPerDiscovery) * perDay(cfg.DiscoveryInterval)
	e := store.CostEstimate{
		At:                  at,
		SQSRequestsPerDay:   standard + fifo,
		MetricsPerDay:       metrics,
		SQSUSDPerDay:        standard/1e6*USDPerMillionStandardRequests + fifo/1e6*USDPerMillionFIFORequests,
		CloudWatchUSDPerDay: metrics/1000*USDPerThousandMetrics + alarms/1000*USDPerThousandCloudWatchRequests,
		AlarmRequestsPerDay: alarms,
		FreeRequestsPerDay:  float64(cfg.FreeCallsPerDiscovery) * perDay(cfg.DiscoveryInterval),
	}
	e.TotalUSDPerDay = e.SQSUSDPerDay + e.CloudWatchUSDPerDay
	return e
}

// updateCost stores the estimate of the running configuration for the queues watched now. A
// region whose GetMetricData calls fail is not charged for CloudWatch: AWS bills answered calls.
func (c *Collector) updateCost(ctx context.Context) {
	listings := len(c.opts.QueuePrefixes) + len(c.opts.Queues)
	if listings == 0 {
		listings = 1
	}
	cloudWatch := make(map[*region]bool, len(c.regions))
	for _, r := range c.regions {
		_, failing := c.failing(r.Name, opGetMetricData)
		cloudWatch[r] = r.CloudWatch != nil && !failing
	}
	cfg := CostConfig{
		Regions:            len(c.regions),
		ListingsPerRegion:  listings,
		DiscoveryInterval:  c.opts.DiscoveryInterval,
		AttributesInterval: c.opts.AttributesInterval,
		MetricsInterval:    c.opts.MetricsInterval,
		MoveTasksInterval:  c.opts.MoveTasksInterval,
		CloudWatch:         true,
		ListSources:        true,
	}
	c.mu.Lock()
	cfg.AlarmCallsPerDiscovery, cfg.FreeCallsPerDiscovery = c.topologyCalls.alarms, c.topologyCalls.free
	c.mu.Unlock()
	dlqs := c.deadLetterARNs()
	sampled := c.sampledDeadLetterARNs()
	queues := c.watched()
	cqs := make([]CostQueue, 0, len(queues))
	for _, q := range queues {
		cq := CostQueue{DeadLetter: dlqs[q.arn], NoCloudWatch: !cloudWatch[q.region]}
		kind, peeked := c.peekKind(q, sampled[q.arn])
		st := q.state()
		cq.FIFO = st.fifo
		if peeked {
			cq.Peeked = true
			cq.PeekInterval = c.peekInterval(kind)
			cq.ReceivesPerPass = st.peekReceives
		}
		cqs = append(cqs, cq)
	}
	if err := c.store.SetCostEstimate(ctx, EstimateCost(cfg, cqs, c.now())); err != nil {
		c.warn(ctx, "collector: set cost estimate", "err", err)
	}
}
