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
	// Quiet: unchanged for the quiet interval, and empty or ReadAsDeadLetter, so read at
	// Cadences.QuietAttributes, or at Cadences.QuietDeadLetter when ReadAsDeadLetter: a
	// dead-letter queue of a redrive policy or of an EventBridge target, whose next message is
	// news whatever it holds.
	Quiet            bool
	ReadAsDeadLetter bool
	// HeldMessages: a source queue that holds messages, whose age of the oldest message is asked
	// at Cadences.OldestAge.
	HeldMessages bool
	// Peeked says whether the collector samples the queue's messages: at Cadences.PeekSource
	// when PeekSource (an opted-in source), else at Cadences.PeekDeadLetter. Guarded: it has a
	// RedrivePolicy, so each sample reads its depth first (the receive guard needs it fresh);
	// any other queue's sample takes the attribute loop's.
	Peeked     bool
	PeekSource bool
	Guarded    bool
	// ReceivesPerPass is what the queue's last pass spent (0: an empty queue, which costs only
	// the GetQueueAttributes read before the pass).
	ReceivesPerPass int
	// NoCloudWatch: the queue's region reads no CloudWatch (none configured, or it fails).
	NoCloudWatch bool
}

// CostConfig is the running configuration the estimate prices.
type CostConfig struct {
	Regions           int
	ListingsPerRegion int // ListQueues and GetQueueUrl calls per discovery
	Cadences          store.Cadences
	CloudWatch        bool
	// ListSources says whether ListDeadLetterSourceQueues is called per queue per discovery.
	ListSources bool
	// AlarmCallsPerDiscovery and FreeCallsPerDiscovery are what one topology cycle (at the
	// discovery interval) calls: DescribeAlarms pages, and Lambda and EventBridge listings.
	AlarmCallsPerDiscovery int
	FreeCallsPerDiscovery  int
}

// EstimateCost prices a day of the configuration at list prices: every call each loop makes per
// day for the given queues, as they are now (which hold messages, which are quiet), and the
// topology loop's calls as its last cycle made them. A queue's own calls are billed at its
// type's price; account-level listings at the standard price. The one-time backfill and the
// extra polls of a running move task are left out: they are not part of the steady state.
func EstimateCost(cfg CostConfig, queues []CostQueue, at time.Time) store.CostEstimate {
	perDay := func(every time.Duration) float64 {
		if every <= 0 {
			return 0
		}
		return float64(24*time.Hour) / float64(every)
	}
	cad := cfg.Cadences
	type tally struct{ standard, fifo, metrics float64 }
	loops := map[string]*tally{}
	for _, kind := range costLoops {
		loops[kind] = &tally{}
	}
	loops[store.RunDiscovery].standard += float64(cfg.Regions*cfg.ListingsPerRegion) * perDay(cad.Discovery)
	for _, q := range queues {
		calls := func(kind string, n float64) {
			if q.FIFO {
				loops[kind].fifo += n
			} else {
				loops[kind].standard += n
			}
		}
		switch {
		case !q.Quiet:
			calls(store.RunAttributes, perDay(cad.Attributes))
		case q.ReadAsDeadLetter:
			calls(store.RunAttributes, perDay(cad.QuietDeadLetter))
		default:
			calls(store.RunAttributes, perDay(cad.QuietAttributes))
		}
		if cfg.ListSources {
			calls(store.RunDiscovery, perDay(cad.Discovery))
		}
		if q.DeadLetter {
			calls(store.RunMoveTasks, perDay(cad.MoveTasks))
		}
		if q.Peeked {
			// A pass receives and hands back what it took: at most one
			// ChangeMessageVisibilityBatch per receive of ten; a guarded queue's reads its depth
			// first.
			every := cad.PeekDeadLetter
			if q.PeekSource {
				every = cad.PeekSource
			}
			reads := 0
			if q.Guarded {
				reads = 1
			}
			calls(store.RunPeek, perDay(every)*float64(reads+2*q.ReceivesPerPass))
		}
		if cfg.CloudWatch && !q.NoCloudWatch && !q.DeadLetter {
			m := loops[store.RunMetrics]
			m.metrics += float64(len(counterMetrics(q.FIFO))) * perDay(cad.Counters)
			if q.HeldMessages {
				m.metrics += perDay(cad.OldestAge)
			}
		}
	}
	e := store.CostEstimate{At: at, Cadences: cad, Loops: []store.LoopCost{}}
	alarms := float64(cfg.AlarmCallsPerDiscovery) * perDay(cad.Discovery)
	e.AlarmRequestsPerDay = alarms
	e.FreeRequestsPerDay = float64(cfg.FreeCallsPerDiscovery) * perDay(cad.Discovery)
	for _, kind := range costLoops {
		t := loops[kind]
		l := store.LoopCost{
			Loop:        kind,
			SQSRequests: t.standard + t.fifo,
			Metrics:     t.metrics,
			USD: t.standard/1e6*USDPerMillionStandardRequests + t.fifo/1e6*USDPerMillionFIFORequests +
				t.metrics/1000*USDPerThousandMetrics,
		}
		if kind == store.RunTopology {
			l.USD += alarms / 1000 * USDPerThousandCloudWatchRequests
			e.CloudWatchUSDPerDay += alarms / 1000 * USDPerThousandCloudWatchRequests
		}
		e.Loops = append(e.Loops, l)
		e.SQSRequestsPerDay += l.SQSRequests
		e.MetricsPerDay += l.Metrics
		e.CloudWatchUSDPerDay += t.metrics / 1000 * USDPerThousandMetrics
		e.TotalUSDPerDay += l.USD
	}
	e.SQSUSDPerDay = e.TotalUSDPerDay - e.CloudWatchUSDPerDay
	return e
}

// costLoops are the loops that make AWS calls, in the order the estimate lists them.
var costLoops = []string{store.RunDiscovery, store.RunAttributes, store.RunMetrics, store.RunPeek, store.RunMoveTasks, store.RunTopology}

// budgetSteps are the cadences a budget may slow the collector to, freshest first: each step
// keeps the slower of its own and the previous step's. What goes first is what costs most and
// whose freshness matters least: the CloudWatch counters (an hour of one-minute points costs what
// one point does), then the age of the oldest message, then samples and move tasks, and last of
// all the depths.
var budgetSteps = []store.Cadences{
	{Counters: 3 * time.Hour},
	{Counters: 6 * time.Hour, OldestAge: 10 * time.Minute},
	{OldestAge: 15 * time.Minute, PeekDeadLetter: 5 * time.Minute, MoveTasks: 15 * time.Minute},
	{Attributes: 30 * time.Second, QuietAttributes: 2 * time.Minute, QuietDeadLetter: time.Minute, Counters: 12 * time.Hour},
	{Attributes: time.Minute, QuietAttributes: 5 * time.Minute, QuietDeadLetter: 2 * time.Minute, OldestAge: 30 * time.Minute, Counters: 24 * time.Hour,
		PeekDeadLetter: 15 * time.Minute, PeekSource: 15 * time.Minute, MoveTasks: 30 * time.Minute},
}

// slower returns, field by field, the slower of a and b.
func slower(a, b store.Cadences) store.Cadences {
	return store.Cadences{
		Attributes: max(a.Attributes, b.Attributes), QuietAttributes: max(a.QuietAttributes, b.QuietAttributes),
		QuietDeadLetter: max(a.QuietDeadLetter, b.QuietDeadLetter), OldestAge: max(a.OldestAge, b.OldestAge),
		Counters: max(a.Counters, b.Counters), MoveTasks: max(a.MoveTasks, b.MoveTasks),
		PeekDeadLetter: max(a.PeekDeadLetter, b.PeekDeadLetter), PeekSource: max(a.PeekSource, b.PeekSource),
		Discovery: max(a.Discovery, b.Discovery),
	}
}

// PlanCadences returns the freshest cadences, from cfg's own through budgetSteps, whose estimate
// for the queues fits budget (USD a day), with that estimate; over is true when even the slowest
// do not fit, and they are returned. A budget of 0 or less keeps cfg's cadences.
func PlanCadences(budget float64, cfg CostConfig, queues []CostQueue, at time.Time) (e store.CostEstimate, over bool) {
	e = EstimateCost(cfg, queues, at)
	if budget <= 0 {
		return e, false
	}
	e.BudgetUSDPerDay = budget
	plan := cfg
	for _, step := range budgetSteps {
		if e.TotalUSDPerDay <= budget {
			return e, false
		}
		plan.Cadences = slower(plan.Cadences, step)
		e = EstimateCost(plan, queues, at)
		e.BudgetUSDPerDay = budget
	}
	e.OverBudget = e.TotalUSDPerDay > budget
	return e, e.OverBudget
}

// updateCost stores the estimate of the running configuration for the queues watched now. A
// region whose GetMetricData calls fail is not charged for CloudWatch: AWS bills answered calls.
// With a budget, it first chooses the cadences that fit it (PlanCadences) and runs the loops at
// them from now on.
func (c *Collector) updateCost(ctx context.Context) {
	listings := len(c.opts.QueuePrefixes) + len(c.opts.Queues)
	if listings == 0 {
		listings = 1
	}
	cloudWatch := make(map[*region]bool, len(c.regions))
	for _, r := range c.regions {
		_, failing := c.failing(r.key, opGetMetricData)
		cloudWatch[r] = r.CloudWatch != nil && !failing
	}
	cfg := CostConfig{
		Regions:           len(c.regions),
		ListingsPerRegion: listings,
		Cadences:          c.opts.cadences(),
		CloudWatch:        true,
		ListSources:       c.selects(),
	}
	c.mu.Lock()
	cfg.AlarmCallsPerDiscovery, cfg.FreeCallsPerDiscovery = c.topologyCalls.alarms, c.topologyCalls.free
	c.mu.Unlock()
	running := c.cadence()
	now := c.now()
	dlqs := c.deadLetterARNs()
	sampled := c.sampledDeadLetterARNs()
	queues := c.watched()
	cqs := make([]CostQueue, 0, len(queues))
	accountOf := make([]string, 0, len(queues)) // cqs[i]'s account
	for _, q := range queues {
		accountOf = append(accountOf, q.region.Account)
		cq := CostQueue{DeadLetter: dlqs[q.arn], NoCloudWatch: !cloudWatch[q.region]}
		kind, peeked := c.peekKind(q, sampled[q.arn])
		st := q.state()
		cq.FIFO = st.fifo
		cq.Quiet, cq.ReadAsDeadLetter = quiet(st, now, running, sampled[q.arn]), sampled[q.arn]
		cq.HeldMessages = st.visible+st.inFlight > 0
		if peeked {
			cq.Peeked, cq.PeekSource, cq.Guarded = true, kind == store.SampleSource, st.redrivePolicy != ""
			cq.ReceivesPerPass = st.peekReceives
		}
		cqs = append(cqs, cq)
	}
	e, over := PlanCadences(c.opts.BudgetUSDPerDay, cfg, cqs, now)
	if e.Cadences != running {
		c.cadences.Store(&e.Cadences)
		c.log.Info("collector: cadences for the budget", "budget_usd_per_day", c.opts.BudgetUSDPerDay,
			"estimate_usd_per_day", e.TotalUSDPerDay, "over_budget", over, "freshness", e.Cadences.String())
	}
	e.Accounts = c.accountCosts(cfg, e, cqs, accountOf, now)
	if err := c.store.SetCostEstimate(ctx, e); err != nil {
		c.warn(ctx, "collector: set cost estimate", "err", err)
	}
}

// accountCosts splits the estimate e of cfg by configured account: each account's queues and
// regions priced at e's cadences. The topology loop's calls, which the collector counts for the
// whole cycle, are split by the accounts' share of the watched regions. Nil without configured
// accounts.
func (c *Collector) accountCosts(cfg CostConfig, e store.CostEstimate, queues []CostQueue, accountOf []string, at time.Time) []store.AccountCost {
	var names []string
	regions := map[string]int{}
	for _, r := range c.regions {
		if r.Account == "" {
			continue
		}
		if regions[r.Account] == 0 {
			names = append(names, r.Account)
		}
		regions[r.Account]++
	}
	if len(names) == 0 {
		return nil
	}
	var topologyUSD float64
	for _, l := range e.Loops {
		if l.Loop == store.RunTopology {
			topologyUSD = l.USD
		}
	}
	out := make([]store.AccountCost, 0, len(names))
	for _, name := range names {
		var mine []CostQueue
		for i, q := range queues {
			if accountOf[i] == name {
				mine = append(mine, q)
			}
		}
		sub := cfg
		sub.Cadences = e.Cadences
		sub.Regions = regions[name]
		sub.AlarmCallsPerDiscovery, sub.FreeCallsPerDiscovery = 0, 0
		ae := EstimateCost(sub, mine, at)
		share := float64(regions[name]) / float64(len(c.regions))
		out = append(out, store.AccountCost{
			Account:           name,
			SQSRequestsPerDay: ae.SQSRequestsPerDay, MetricsPerDay: ae.MetricsPerDay,
			SQSUSDPerDay:        ae.SQSUSDPerDay,
			CloudWatchUSDPerDay: ae.CloudWatchUSDPerDay + topologyUSD*share,
			TotalUSDPerDay:      ae.TotalUSDPerDay + topologyUSD*share,
		})
	}
	return out
}
