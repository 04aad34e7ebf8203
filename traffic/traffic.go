// Package traffic produces synthetic MCP tool-call traffic on SQS for the demo: ordered
// sessions on a FIFO queue, independent calls on standard queues, workers that long-poll,
// take realistic times and delete what succeeds, poison pills that end in the DLQs, a FIFO
// session blocked behind its failing head, bursts, and hostile text in tool arguments. With
// Options.Integrations, workers also announce completed calls on an EventBridge bus whose rule
// feeds an audit queue (oversized events fail into its target dead-letter queue), and a Lambda
// event source mapping and an alarm complete the seeds' patterns.
//
// It talks to AWS only through the stock clients, so it can drive any endpoint: the
// embedded simulator, kumo or a real account. What it decides (which calls, when, which
// attempts fail) follows from Options.Seed alone; only the wall-clock pacing varies.
package traffic

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Options configures a Generator. Every field is optional.
type Options struct {
	// Seed makes the traffic reproducible: the same seed gives the same calls and outcomes.
	Seed int64
	// Logger receives the generator's logs; nil discards them.
	Logger *slog.Logger
	// Rate is the average number of tool calls per second, bursts excluded. Default 1.5.
	Rate float64
	// VisibilityTimeout, when set, replaces every source queue's own (5 to 10 s). It paces
	// how soon poison pills reach the DLQs: after maxReceiveCount timeouts.
	VisibilityTimeout time.Duration
	// WaitTime is the long-polling wait of the workers' receives, at most 20 s (the default).
	WaitTime time.Duration
	// StatsEvery is how often a summary is logged at info level. Default one minute.
	StatsEvery time.Duration
	// QueuePrefix, when set, prefixes every queue's name in SQS (a second account's demo queues,
	// told apart from the first's by name as well as by account).
	QueuePrefix string
	// Integrations, when set, add the demo's EventBridge bus (workers publish every completed
	// tool call on it), its Lambda consumer of web-search and its alarm (see Integrate).
	Integrations Integrations
}

// Generator produces and consumes the demo traffic.
type Generator struct {
	client *sqs.Client
	opts   Options
	log    *slog.Logger
	specs  []queueSpec
	stats  stats
	// crawlerBack is when the crawler MCP server comes back from the demo's outage (Run's start
	// plus crawlerOutage): its calls sent before then fail, those sent after succeed.
	crawlerBack time.Time
}

// stats counts what the generator did, for the periodic summary.
type stats struct {
	sent, succeeded, failed, dropped, sendErrors, events atomic.Int64
}

// New returns a Generator that uses client.
func New(client *sqs.Client, opts Options) *Generator {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// SQS counts both in whole seconds; a zero wait would turn long polling into a busy loop.
	if opts.WaitTime <= 0 || opts.WaitTime > 20*time.Second {
		opts.WaitTime = 20 * time.Second
	}
	opts.WaitTime = max(opts.WaitTime.Truncate(time.Second), time.Second)
	if opts.VisibilityTimeout > 0 {
		opts.VisibilityTimeout = max(opts.VisibilityTimeout.Truncate(time.Second), time.Second)
	}
	if opts.StatsEvery <= 0 {
		opts.StatsEvery = time.Minute
	}
	return &Generator{
		client: client,
		opts:   opts,
		log:    opts.Logger.With("component", "traffic"),
		specs:  demoQueues(opts.VisibilityTimeout),
	}
}

// Run creates the demo topology, then produces and consumes until ctx ends. It returns nil
// when ctx ends and an error only if the topology cannot be set up.
func (g *Generator) Run(ctx context.Context) error {
	topo, err := setup(ctx, g.client, g.specs, g.opts.QueuePrefix)
	if err == nil {
		err = Integrate(ctx, topo, g.opts.Integrations)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	g.log.Info("traffic started", "queues", len(topo.Queues), "seed", g.opts.Seed)
	g.crawlerBack = time.Now().Add(crawlerOutage)

	var wg sync.WaitGroup
	for _, spec := range g.specs {
		q, _ := topo.Queue(spec.name)
		for i := range spec.workers {
			w := &worker{g: g, queue: q, spec: spec, log: g.log.With("queue", q.Name, "worker", i)}
			wg.Go(func() { w.run(ctx) })
		}
	}
	wg.Go(func() { g.produce(ctx, topo) })
	wg.Go(func() { g.logStats(ctx) })
	wg.Wait()
	g.log.Info("traffic stopped")
	return nil
}

func (g *Generator) planConfig() planConfig {
	cfg := planConfig{rate: g.opts.Rate, maxReceiveCount: 3}
	for _, s := range g.specs {
		if s.name == QueueToolCalls {
			cfg.fifoRedelivery = s.redelivery()
			cfg.maxReceiveCount = s.maxReceiveCount
		}
	}
	return cfg
}

func (g *Generator) logStats(ctx context.Context) {
	t := time.NewTicker(g.opts.StatsEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			g.log.Info("traffic summary",
				"sent", g.stats.sent.Load(), "succeeded", g.stats.succeeded.Load(),
				"failed_attempts", g.stats.failed.Load(), "dropped", g.stats.dropped.Load(),
				"send_errors", g.stats.sendErrors.Load(), "events", g.stats.events.Load())
		}
	}
}

// sleep waits d or until ctx ends, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// backoff is the pause after the n-th consecutive failed call: it doubles from half a second
// up to ten, so an endpoint that is down or throttling is not hammered.
func backoff(n int) time.Duration {
	return min(500*time.Millisecond<<min(n, 5), 10*time.Second)
}

// canceled reports whether err only says that ctx ended.
func canceled(ctx context.Context, err error) bool {
	return ctx.Err() != nil || errors.Is(err, context.Canceled)
}
