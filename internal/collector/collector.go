// Package collector turns the SQS and CloudWatch APIs into toolq's time-series picture of every
// watched tool-call queue. It is the only package that reads from AWS. Each concern runs in its
// own loop at its own cadence: discovery, queue attributes, CloudWatch metrics, message peeks,
// move-task polling, the queues' topology (Lambda consumers, EventBridge rules, alarms) and
// pruning. Everything goes to the store; change events tell the live pages
// to read again.
//
// The collector must never harm what it watches. It never deletes, sends or purges (its SQSAPI
// has no such methods); it receives messages only from dead-letter queues and from source queues
// the operator opted in, and hands every message it took back at once. See docs/collector.md.
package collector

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// Default cadences and limits of Options.
const (
	DefaultDiscoveryInterval        = 5 * time.Minute
	DefaultAttributesInterval       = 15 * time.Second
	DefaultQuietAttributesInterval  = time.Minute
	DefaultQuietDeadLetterInterval  = 30 * time.Second
	DefaultMetricsInterval          = 5 * time.Minute
	DefaultCountersInterval         = time.Hour
	DefaultPeekDeadLetterInterval   = time.Minute
	DefaultPeekSourceInterval       = 5 * time.Minute
	DefaultMoveTasksRunningInterval = 2 * time.Second
	DefaultPruneInterval            = time.Hour
	DefaultConcurrency              = 32
	DefaultPeekMaxMessages          = 500
	DefaultPeekVisibilityTimeout    = 20 * time.Second
	DefaultPeekBodyCap              = 64 << 10
	DefaultBackfill                 = 24 * time.Hour

	// peekDueCheck is how often the peek loop looks for queues that are due. It is shorter than
	// any peek interval so that a dead-letter queue that receives its first messages is sampled
	// within seconds of the attribute cycle that saw them.
	peekDueCheck = 10 * time.Second
)

// loopConcurrency is the AWS calls in flight at most of the loops that make few calls at once:
// CloudWatch packs 500 queries a call, peeks and move-task polls concern a few queues at a time.
// The attribute cycle and discovery take Options.Concurrency each.
var loopConcurrency = map[string]int{
	store.RunMetrics:   2,
	store.RunPeek:      4,
	store.RunMoveTasks: 4,
	store.RunTopology:  8,
}

// Region is one AWS region the collector watches, with its clients.
type Region struct {
	// Name is the region's name (us-east-1); it is stored with every queue. Required.
	Name string
	// SQS is the region's SQS client. Required.
	SQS SQSAPI
	// CloudWatch is the region's CloudWatch client. Nil: no CloudWatch metrics or alarms for
	// this region.
	CloudWatch CloudWatchAPI
	// Lambda lists the event source mappings that drain the region's queues. Nil (or
	// Options.DisableLambda): none are read.
	Lambda LambdaAPI
	// EventBridge lists the rules that deliver to the region's queues and their targets'
	// dead-letter queues. Nil (or Options.DisableEventBridge): none are read.
	EventBridge EventBridgeAPI

	// Account is the configured name of the AWS account the clients reach (--account NAME=…);
	// "" without configured accounts: the ambient credentials' one account, watched as before
	// accounts existed. Two Regions of one name and two accounts are two scopes
	// (store.Scope): neither shares the other's sight, failures or queues.
	Account string
	// AccountID is the account's id when it is known in advance (a role ARN's); "" otherwise.
	AccountID string
	// STS, when set, checks once per Run, before the first listing, which account the
	// clients' credentials reach (GetCallerIdentity): a role that cannot be assumed fails there
	// visibly, and an account other than AccountID leaves the scope blind rather than filing its
	// queues under the wrong account. Nil: not checked.
	STS STSAPI
}

// PeekOptions say which queues' messages the collector samples, and how.
type PeekOptions struct {
	// Disabled turns all message sampling off (`--peek none`).
	Disabled bool
	// Sources are the source queues the operator opted in to sampling: exact names, or prefixes
	// ending in "*" (tool-calls*). Dead-letter queues are sampled without opting in.
	Sources []string
	// MaxMessages caps the messages taken by one pass over one queue. Default 500.
	MaxMessages int
	// VisibilityTimeout of the receives: long enough for one pass, after which the messages are
	// released explicitly anyway. Default 20 s.
	VisibilityTimeout time.Duration
	// BodyCap is the most bytes of a body that are stored. Default 64 KiB.
	BodyCap int
}

// ToolFields are the dotted JSON paths of the tool-call fields in a message body.
type ToolFields struct {
	ToolName   string // default "toolName"
	ToolCallID string // default "toolCallId"
	SessionID  string // default "sessionId"
}

// Options configure a Collector.
type Options struct {
	// Regions to watch, each of one account (Region.Account; each pair of account and name
	// once). At least one is required; one collector covers them all so that one cost estimate
	// does.
	Regions []Region
	// Store receives everything collected. Required.
	Store *store.Store
	// Publisher receives change events. Default events.Discard.
	Publisher events.Publisher
	// Logger. Default discard.
	Logger *slog.Logger
	// Now is the collector's clock; tests pass the simulator's ManualClock.Now. Default time.Now.
	Now func() time.Time

	// QueuePrefixes select queues by name prefix (ListQueues QueueNamePrefix).
	QueuePrefixes []string
	// Queues select queues by name or URL. With neither QueuePrefixes nor Queues, every queue of
	// the account is watched.
	Queues []string

	// Cadences. Zero: the Default… constant of the same name.
	DiscoveryInterval time.Duration
	// AttributesInterval reads the attributes of a queue that holds messages or whose depth
	// changed within QuietAttributesInterval; the attribute loop checks at this interval.
	AttributesInterval time.Duration
	// QuietAttributesInterval reads an empty queue whose depth has not changed for as long.
	// Default 1 min (never less than AttributesInterval).
	QuietAttributesInterval time.Duration
	// QuietDeadLetterInterval reads a dead-letter queue whose depth has not changed for
	// QuietAttributesInterval, empty or not: its next message, a tool call that failed for good,
	// is seen within it. Default 30 s (never less than AttributesInterval). A sample of a
	// dead-letter queue takes its depth from these reads rather than a read of its own, so
	// that an empty one costs one read every QuietDeadLetterInterval and nothing more.
	QuietDeadLetterInterval time.Duration
	// MetricsInterval asks CloudWatch for the age of the oldest message of the source queues that
	// held messages since the last ask; the metrics loop checks at this interval.
	MetricsInterval time.Duration
	// CountersInterval asks CloudWatch for the source queues' other metrics (counts, message size,
	// FIFO groups in flight), as one-minute datapoints since the last ask: CloudWatch bills each
	// metric a call asks for, not its datapoints. Default 1 h (never less than MetricsInterval).
	CountersInterval       time.Duration
	PeekDeadLetterInterval time.Duration
	PeekSourceInterval     time.Duration
	// MoveTasksInterval polls the move tasks of every dead-letter queue while none of its tasks
	// runs; one whose depth falls without a task toolq knows of is polled at once. Default the
	// discovery interval.
	MoveTasksInterval time.Duration
	// MoveTasksRunningInterval polls a queue whose task is RUNNING or CANCELLING. Default 2 s.
	MoveTasksRunningInterval time.Duration
	PruneInterval            time.Duration

	// Concurrency bounds the AWS calls in flight of the attribute cycle, and of discovery's, each
	// its own. Default 32. The other loops have budgets of their own (loopConcurrency), so that
	// none waits for another's calls.
	Concurrency int
	// Peek configures message sampling.
	Peek PeekOptions
	// ToolFields locate the tool-call fields in JSON bodies.
	ToolFields ToolFields
	// Dimensions are the other named properties of a tool call that each sampled message
	// keeps (at most MaxDimensions, names unique).
	Dimensions []Dimension
	// BudgetUSDPerDay, when positive, makes the collector slow its cadences down, step by step,
	// until the estimated cost of the queues watched fits (EstimateCost, PlanCadences). Zero:
	// the cadences above.
	BudgetUSDPerDay float64
	// Backfill is how far back CloudWatch is read the first time a queue is seen. Default 24 h;
	// negative: no backfill.
	Backfill time.Duration
	// Retention is passed to store.Prune; zero fields take the store's documented defaults.
	Retention store.Retention
	// ArchiveRetention is how long the archive keeps discarded messages (--archive-retention);
	// 0 keeps them forever.
	ArchiveRetention time.Duration
	// Registerer, when set, receives the collector's Prometheus metrics.
	Registerer prometheus.Registerer

	// DisableLambda and DisableEventBridge turn the topology loop's Lambda and EventBridge
	// reads off (`--lambda=false`, `--eventbridge=false`), for accounts that use neither.
	DisableLambda      bool
	DisableEventBridge bool
}

// Collector samples the watched queues into the store. Create it with New, run it with Run, or
// drive single cycles (Discover, CycleAttributes, CycleMetrics, PeekDue, PollMoveTasks,
// CycleTopology, Prune) from tests and benchmarks.
type Collector struct {
	opts    Options
	store   *store.Store
	pub     events.Publisher
	log     *slog.Logger
	now     func() time.Time
	regions []*region
	tel     *telemetry
	budgets map[string]chan struct{} // bounds each loop's AWS calls in flight, by run kind
	// cadences are those the loops run at: the options', or slower ones that fit the budget.
	cadences atomic.Pointer[store.Cadences]
	sight    *sight // each operation's last outcome per region

	// mu guards the maps below, the collector's own. What the loops learn about one queue is the
	// queue's (watchedQueue.mu), so that no loop holds mu for another's queue.
	mu     sync.Mutex
	queues map[string]*watchedQueue // by ARN; the queues that exist as far as we know
	urls   map[urlKey]*watchedQueue // the same queues by region and URL
	// skipped are the operations not to call again in a whole region before a time; a queue
	// holds its own.
	skipped skipMemory[opKey]
	// recorded is when each kind of failure about no single queue was last stored (see
	// errorRepeat); a queue remembers its own.
	recorded failureMemory
	// eventBridgeDLQs are, by region, the ARNs of the queues EventBridge targets name as their
	// dead-letter queue, as the last complete reading of the region's rules found them.
	eventBridgeDLQs map[string]map[string]bool
	// topologyCalls is what the last topology cycle called, for the cost estimate.
	topologyCalls topologyCalls

	ran bool // Run was called before (only Run touches it)
}

// cadences are the configured cadences.
func (o Options) cadences() store.Cadences {
	return store.Cadences{
		Attributes: o.AttributesInterval, QuietAttributes: o.QuietAttributesInterval, QuietDeadLetter: o.QuietDeadLetterInterval,
		OldestAge: o.MetricsInterval, Counters: o.CountersInterval, MoveTasks: o.MoveTasksInterval,
		PeekDeadLetter: o.PeekDeadLetterInterval, PeekSource: o.PeekSourceInterval, Discovery: o.DiscoveryInterval,
	}
}

// cadence returns the cadences the loops run at now.
func (c *Collector) cadence() store.Cadences { return *c.cadences.Load() }

// region is one watched Region; queues point to it, and per-region state (sight, skipped
// operations, tallies) is keyed by its scope, key (store.Scope of its account and name).
type region struct {
	Region
	key string
	// identity is the outcome of the Run's GetCallerIdentity check (Region.STS), under
	// Collector.mu: checked once it succeeded, and the account id it found.
	identity struct {
		checked bool
		account string
	}
}

// New checks opts, fills in defaults and returns a Collector. It makes no AWS call.
func New(opts Options) (*Collector, error) {
	if len(opts.Regions) == 0 {
		return nil, errors.New("collector: no region")
	}
	if opts.Store == nil {
		return nil, errors.New("collector: no store")
	}
	if err := checkDimensions(opts.Dimensions); err != nil {
		return nil, err
	}
	c := &Collector{
		store:    opts.Store,
		pub:      cmp.Or(opts.Publisher, events.Discard),
		log:      cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		now:      opts.Now,
		queues:   make(map[string]*watchedQueue),
		urls:     make(map[urlKey]*watchedQueue),
		skipped:  make(skipMemory[opKey]),
		recorded: make(failureMemory),
		sight:    newSight(),

		eventBridgeDLQs: make(map[string]map[string]bool),
	}
	seen := make(map[string]bool)
	for _, r := range opts.Regions {
		key := store.Scope(r.Account, r.Name)
		if r.Name == "" || r.SQS == nil {
			return nil, fmt.Errorf("collector: region %q: name and SQS client are required", key)
		}
		if seen[key] {
			return nil, fmt.Errorf("collector: region %q given twice", key)
		}
		seen[key] = true
		c.regions = append(c.regions, &region{Region: r, key: key})
	}
	if c.now == nil {
		c.now = time.Now
	}
	opts.DiscoveryInterval = cmp.Or(opts.DiscoveryInterval, DefaultDiscoveryInterval)
	opts.AttributesInterval = cmp.Or(opts.AttributesInterval, DefaultAttributesInterval)
	opts.QuietAttributesInterval = max(cmp.Or(opts.QuietAttributesInterval, DefaultQuietAttributesInterval), opts.AttributesInterval)
	opts.QuietDeadLetterInterval = max(cmp.Or(opts.QuietDeadLetterInterval, DefaultQuietDeadLetterInterval), opts.AttributesInterval)
	opts.MetricsInterval = cmp.Or(opts.MetricsInterval, DefaultMetricsInterval)
	opts.CountersInterval = max(cmp.Or(opts.CountersInterval, DefaultCountersInterval), opts.MetricsInterval)
	opts.PeekDeadLetterInterval = cmp.Or(opts.PeekDeadLetterInterval, DefaultPeekDeadLetterInterval)
	opts.PeekSourceInterval = cmp.Or(opts.PeekSourceInterval, DefaultPeekSourceInterval)
	opts.MoveTasksInterval = cmp.Or(opts.MoveTasksInterval, opts.DiscoveryInterval)
	opts.MoveTasksRunningInterval = cmp.Or(opts.MoveTasksRunningInterval, DefaultMoveTasksRunningInterval)
	opts.PruneInterval = cmp.Or(opts.PruneInterval, DefaultPruneInterval)
	opts.Backfill = cmp.Or(opts.Backfill, DefaultBackfill)
	opts.Peek.VisibilityTimeout = cmp.Or(opts.Peek.VisibilityTimeout, DefaultPeekVisibilityTimeout)
	opts.Concurrency = cmp.Or(opts.Concurrency, DefaultConcurrency)
	opts.Peek.MaxMessages = cmp.Or(opts.Peek.MaxMessages, DefaultPeekMaxMessages)
	opts.Peek.BodyCap = cmp.Or(opts.Peek.BodyCap, DefaultPeekBodyCap)
	opts.ToolFields.ToolName = cmp.Or(opts.ToolFields.ToolName, "toolName")
	opts.ToolFields.ToolCallID = cmp.Or(opts.ToolFields.ToolCallID, "toolCallId")
	opts.ToolFields.SessionID = cmp.Or(opts.ToolFields.SessionID, "sessionId")
	if opts.Peek.VisibilityTimeout < time.Second {
		// ReceiveMessage takes whole seconds, and the SDK drops a zero.
		opts.Peek.VisibilityTimeout = time.Second
	}
	c.opts = opts
	configured := opts.cadences()
	c.cadences.Store(&configured)
	c.budgets = make(map[string]chan struct{}, len(loopConcurrency)+2)
	for kind, n := range loopConcurrency {
		c.budgets[kind] = make(chan struct{}, n)
	}
	c.budgets[store.RunAttributes] = make(chan struct{}, opts.Concurrency)
	c.budgets[store.RunDiscovery] = make(chan struct{}, opts.Concurrency)
	tel, err := newTelemetry(opts.Registerer)
	if err != nil {
		return nil, err
	}
	c.tel = tel
	return c, nil
}

// Run runs every loop until ctx ends, then waits for them to stop and returns nil. Discovery
// runs first, so that the other loops' first cycles, which also run at start-up rather than one
// interval later, already see the queues.
//
// Nothing but ctx ends Run, and it has no error of its own to return: a cycle that fails records
// its failures in the store and in the collector's sight, and the next cycle tries again. toolq
// is most needed while AWS misbehaves; a collector that stopped on a failure would leave the
// dashboard blind just then. A caller waits for Run on shutdown and never watches it for an
// error.
func (c *Collector) Run(ctx context.Context) error {
	if c.ran {
		c.forget()
	}
	c.ran = true
	c.resumeSight(ctx)
	c.resumeTopology(ctx)
	c.startLoops(ctx)
	defer c.tel.stopLoops()
	// The first discovery leaves ListDeadLetterSourceQueues to the discovery loop's first cycle,
	// which runs beside the first attribute cycle: at 10,000 queues those calls would otherwise
	// hold the first depths back by as long as the attribute cycle itself takes.
	if err := c.discover(ctx, false); err != nil && ctx.Err() == nil {
		c.log.Warn("collector: first discovery", "err", err)
	}
	var wg sync.WaitGroup
	for _, l := range c.Loops() {
		wg.Go(func() { c.loop(ctx, l.Name, l.Every, l.Cycle, true) })
	}
	wg.Wait()
	return nil
}

// Loop is one of the loops Run runs: a cycle, called every Every.
type Loop struct {
	Name  string
	Every time.Duration
	Cycle func(context.Context) error
}

// Loops returns the loops Run runs, for a caller that drives them on a clock of its own, as Run
// does on the wall clock: each cycle once at the start, then every Every (Run first adopts the
// queues the listings show). Tests that measure how soon something is seen drive them on the
// simulator's clock.
func (c *Collector) Loops() []Loop {
	return []Loop{
		{"discovery", c.opts.DiscoveryInterval, c.Discover},
		{"attributes", c.opts.AttributesInterval, c.AttributesDue},
		{"metrics", c.opts.MetricsInterval, c.CycleMetrics},
		{"peek", peekDueCheck, c.PeekDue},
		{"movetasks", c.opts.MoveTasksRunningInterval, c.PollMoveTasks},
		{"topology", c.opts.DiscoveryInterval, c.CycleTopology},
		{"prune", c.opts.PruneInterval, c.Prune},
	}
}

// startLoops creates every loop's last-success series in every watched region, from the store's
// last cycles.
func (c *Collector) startLoops(ctx context.Context) {
	stored, err := c.store.LoopStatuses(ctx)
	if err != nil {
		c.warn(ctx, "collector: load loop statuses", "err", err)
	}
	c.tel.startLoops(c.regionKeys(), stored)
}

// regionKeys returns the scope of every watched region.
func (c *Collector) regionKeys() []string {
	keys := make([]string, 0, len(c.regions))
	for _, r := range c.regions {
		keys = append(keys, r.key)
	}
	return keys
}

// loopIdle records what a due check of a loop found nothing due for: every region without a
// queue in due.
func (c *Collector) loopIdle(kind string, due []*watchedQueue) {
	busy := make(map[string]bool)
	for _, q := range due {
		busy[q.region.key] = true
	}
	c.tel.loopIdle(kind, c.regionKeys(), busy, c.now())
}

// forget drops what an earlier Run learned, so that this one starts from the store as a fresh
// process would. A replica that lost the collector's lead and leads again must not trust what
// it knew then: another replica collected meanwhile, and its receives of a queue's messages
// count against the receive guard as much as this one's.
func (c *Collector) forget() {
	c.mu.Lock()
	c.queues = make(map[string]*watchedQueue)
	c.urls = make(map[urlKey]*watchedQueue)
	c.skipped = make(skipMemory[opKey])
	c.recorded = make(failureMemory)
	for _, r := range c.regions {
		r.identity.checked, r.identity.account = false, ""
	}
	c.mu.Unlock()
	c.sight.mu.Lock()
	c.sight.ops = make(map[opKey]*store.OperationStatus)
	c.sight.dirty = make(map[opKey]bool)
	c.sight.mu.Unlock()
}

// loop calls cycle every interval until ctx ends; first says whether to call it at once.
func (c *Collector) loop(ctx context.Context, name string, every time.Duration, cycle func(context.Context) error, first bool) {
	run := func() {
		defer func() {
			if p := recover(); p != nil {
				c.log.Error("collector: cycle panicked", "loop", name, "panic", p)
			}
		}()
		if err := cycle(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("collector: cycle failed", "loop", name, "err", err)
		}
	}
	if first {
		run()
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			run()
		}
	}
}

// dueAt reports whether work last done at last, due every `every`, is due at now for a loop that
// checks every tick. The last time is taken a little after a tick (the cycle's own work comes
// first), so a strict comparison would miss the tick at which the interval ends by milliseconds
// and run one tick late every time: a 2-s move-task poll every 4 s, a 1-min peek every 70 s.
// Half a tick of slack absorbs that without running early by more than half a tick.
func dueAt(last, now time.Time, every, tick time.Duration) bool {
	return last.IsZero() || now.Sub(last) >= every-tick/2
}

// runCycle runs one recorded cycle of a loop over the queues that are due, fn for each of them
// (see each).
func (c *Collector) runCycle(ctx context.Context, kind string, due []*watchedQueue, fn func(context.Context, *cycle, *watchedQueue)) {
	cy := c.startCycle(ctx, kind)
	defer c.finish(ctx, cy)
	cy.queues.Store(int64(len(due)))
	for _, q := range due {
		cy.cover(q.region.key, 1)
	}
	c.each(ctx, cy, due, func(ctx context.Context, q *watchedQueue) { fn(ctx, cy, q) })
}

// each calls fn for every queue, recovering a panic of one queue's task into a recorded error
// so that the others go on. It runs up to twice the cycle's loop's budget of tasks at once: AWS
// calls are bounded to the budget by call, and the spare tasks write to the store meanwhile, so
// that SQLite's single writer does not stretch the cycle.
func (c *Collector) each(ctx context.Context, cy *cycle, queues []*watchedQueue, fn func(context.Context, *watchedQueue)) {
	forEach(ctx, 2*cap(c.budget(cy.kind)), queues, func(q *watchedQueue) {
		defer c.recoverQueue(ctx, cy, q)
		fn(ctx, q)
	})
}

// indexes returns 0 … n-1, for forEach over a slice's positions.
func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// forEach calls fn for every item, at most limit at once, and returns when all calls have; once
// ctx ends it starts no more.
func forEach[T any](ctx context.Context, limit int, items []T, fn func(T)) {
	slots := make(chan struct{}, max(limit, 1))
	var wg sync.WaitGroup
	for _, it := range items {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case slots <- struct{}{}:
		}
		wg.Go(func() {
			defer func() { <-slots }()
			fn(it)
		})
	}
	wg.Wait()
}
