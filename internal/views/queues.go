package views

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// sparklineWindow is how far back the overview's sparklines reach, and SparklinePoints how many
// points they have at most (one per minute).
const (
	sparklineWindow = time.Hour
	SparklinePoints = 60
)

// readings are what a snapshot reads from the store and its depth history, in a few bulk reads,
// before any per-queue work; its clock is the instant they were read for, and records when what
// they say changes with the clock alone.
type readings struct {
	now      time.Time
	clock    *horizon
	queues   []store.Queue           // every queue, gone ones included, by name
	byARN    map[string]*store.Queue // into queues
	latest   map[int64]store.AttributeSample
	peaks    map[int64][]float64              // each minute's visible peak within sparklineWindow
	earlier  map[int64]store.AttributeSample  // the growth rule's earlier sample
	ages     map[int64]store.MetricPoint      // newest ApproximateAgeOfOldestMessage
	samples  map[int64]store.Sample           // newest message sample
	counted  map[int64]*sampleFacts           // what each newest sample holds, by sample id
	errors   map[int64][]store.CollectorError // within ErrorWindow, newest first
	empty    map[int64]time.Time              // each queue's newest sample without messages, within sparklineWindow
	estimate *store.CostEstimate              // the collector's newest, with its cadences; nil before one
	cadence  store.Cadences                   // the estimate's cadences; zero before one
	redrives map[int64][]store.MoveTask       // each DLQ's newest move tasks, newest first
	running  []store.MoveTask                 // the running ones, oldest first
	outcomes map[int64]*RedriveOutcome        // what came back of the redrives, by task id
	run      *store.CollectorRun              // the newest attribute cycle; nil before one
	sight    sightFacts
	topology topology // what surrounds the queues: consumers, rules, alarms
	// emptyReceives are each short-polling queue's newest NumberOfEmptyReceives datapoints.
	emptyReceives map[int64][]store.MetricPoint
	names         map[string]int // how many queues have each name, for links (QueueSummary.Ref)
}

// read reads what a snapshot at now shows, bringing the depth history up to date first, and
// counting what the newest samples hold for those the memory has not counted before.
//
// The reads are independent of each other (but for the counts), so they run at once.
func (s *Service) read(ctx context.Context, mem *buildMemory, now time.Time) (*readings, error) {
	history := &mem.history
	rd := &readings{now: now, clock: newHorizon(now), byARN: map[string]*store.Queue{}, errors: map[int64][]store.CollectorError{}}
	var errs []store.CollectorError
	err := concurrently(ctx,
		func(ctx context.Context) (err error) {
			rd.queues, err = s.store.ListQueues(ctx, store.QueueFilter{IncludeGone: true})
			return err
		},
		func(ctx context.Context) error { return history.update(ctx, s.store, now) },
		func(ctx context.Context) (err error) {
			rd.ages, err = s.store.LatestMetricPoints(ctx, metricOldestAge)
			return err
		},
		func(ctx context.Context) error {
			switch e, err := s.store.GetCostEstimate(ctx); {
			case err == nil:
				rd.estimate, rd.cadence = &e, e.Cadences
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			return nil
		},
		func(ctx context.Context) (err error) { rd.samples, err = s.store.LatestSamples(ctx); return err },
		func(ctx context.Context) (err error) {
			errs, err = s.store.ErrorsSince(ctx, 0, now.Add(-s.th.ErrorWindow))
			return err
		},
		func(ctx context.Context) error {
			switch run, err := s.store.LatestRun(ctx, store.RunAttributes); {
			case err == nil:
				rd.run = &run
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			return nil
		},
		func(ctx context.Context) (err error) {
			rd.redrives, err = s.store.RecentMoveTasks(ctx, recentRedrives)
			return err
		},
		func(ctx context.Context) (err error) { rd.sight, err = s.readSight(ctx); return err },
		func(ctx context.Context) (err error) { rd.topology, err = s.readTopology(ctx); return err },
	)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err) // the store's errors name the read
	}
	rd.readHistory(history, s.th.GrowthWindow)
	rd.names = make(map[string]int, len(rd.queues))
	for i, q := range rd.queues {
		rd.byARN[q.ARN] = &rd.queues[i]
		rd.names[q.Name]++
	}
	for _, e := range errs {
		if e.QueueID != 0 {
			rd.errors[e.QueueID] = append(rd.errors[e.QueueID], e)
		}
		// An error counts while it is within the window: from then on, one fewer.
		rd.clock.change(e.At.Add(s.th.ErrorWindow + time.Nanosecond))
	}
	for _, tasks := range rd.redrives {
		for _, t := range tasks {
			if t.Running() {
				rd.running = append(rd.running, t)
			}
		}
	}
	slices.SortFunc(rd.running, func(a, b store.MoveTask) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID))
	})
	if rd.counted, err = s.countSamples(ctx, mem, rd); err != nil {
		return nil, err
	}
	if rd.emptyReceives, err = s.readEmptyReceives(ctx, rd); err != nil {
		return nil, err
	}
	if rd.outcomes, err = s.readOutcomes(ctx, &mem.outcomes, rd); err != nil {
		return nil, err
	}
	return rd, nil
}

// countSamples returns what each queue's newest sample holds: counted by the memory when it was
// the newest at the last build, else counted now, in two queries for all of them. The memory
// keeps the newest samples' counts for the next build.
func (s *Service) countSamples(ctx context.Context, mem *buildMemory, rd *readings) (map[int64]*sampleFacts, error) {
	counted := make(map[int64]*sampleFacts, len(rd.samples))
	var fresh, fifoFresh []int64
	for _, q := range rd.queues {
		sample, ok := rd.samples[q.ID]
		if !ok {
			continue
		}
		if c, ok := mem.samples[sample.ID]; ok {
			counted[sample.ID] = c
			continue
		}
		counted[sample.ID] = &sampleFacts{}
		fresh = append(fresh, sample.ID)
		if q.FIFO {
			fifoFresh = append(fifoFresh, sample.ID)
		}
	}
	var nearMax map[int64]int
	var groups map[int64][]store.GroupBacklog
	err := concurrently(ctx,
		func(ctx context.Context) (err error) { nearMax, err = s.store.NearMaxCounts(ctx, fresh); return err },
		func(ctx context.Context) (err error) {
			groups, err = s.store.GroupsOfSamples(ctx, fifoFresh)
			return err
		},
	)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err) // the store's errors name the read
	}
	for _, id := range fresh {
		counted[id].nearMax, counted[id].groups = nearMax[id], groups[id]
	}
	mem.samples = counted
	return counted, nil
}

// readHistory takes what the readings need of the depth history: each queue's newest sample,
// its sparkline, its growth rule's earlier sample and its newest empty sample.
func (rd *readings) readHistory(h *depthHistory, growthWindow time.Duration) {
	// The sparklines' buckets are whole minutes, the last one the minute under way: a bucket's
	// peak then changes only when a sample of its minute comes, not every time now moves, so an
	// overview push carries the rows whose depth changed and, once a minute, those whose
	// sparkline moved on.
	bucket := sparklineWindow / SparklinePoints
	minute := rd.now.Truncate(bucket)
	rd.clock.change(minute.Add(bucket))
	rd.latest = h.latestSamples()
	rd.peaks = h.sparklines(rd.clock, minute.Add(-sparklineWindow+bucket))
	// The growth rule compares the newest depth with the newest at least GrowthWindow old, but
	// no older than the sparkline's hour or twice GrowthWindow, whichever reaches further back:
	// a DLQ is not "growing" against a sample from days ago.
	rd.earlier = h.earlier(rd.clock, growthBack(growthWindow), growthWindow)
	rd.empty = h.lastEmpty(rd.clock, sparklineWindow)
}

// growthBack is how far back the growth rule looks for its earlier sample.
func growthBack(growthWindow time.Duration) time.Duration {
	return max(sparklineWindow, 2*growthWindow)
}

// concurrently runs reads at once and returns the first error; after an error, ctx is
// cancelled for the reads still running.
func concurrently(ctx context.Context, reads ...func(ctx context.Context) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, read := range reads {
		g.Go(func() error { return read(ctx) })
	}
	return g.Wait()
}

// sampleAgeWindow is how old a message sample may be for its oldest message to count in a
// queue's oldest-message age.
const sampleAgeWindow = 15 * time.Minute

// oldestAge is a queue's oldest-message age with its source and time. Each kind of queue has one
// source: CloudWatch's ApproximateAgeOfOldestMessage for a working queue (its newest datapoint,
// while recent), the newest message sample for a dead-letter queue, since CloudWatch skips
// messages received three times or more, which in a DLQ is every message. An empty queue has no
// age.
func oldestAge(rd *readings, q store.Queue, window time.Duration) (age float64, source string, at time.Time, ok bool) {
	a, sampled := rd.latest[q.ID]
	if !sampled || a.Visible+a.InFlight == 0 {
		return 0, "", time.Time{}, false
	}
	if deadLetter(q) {
		sample, ok := rd.samples[q.ID]
		if !ok || sample.OldestSentAt.IsZero() || rd.clock.past(sample.At.Add(sampleAgeWindow)) {
			return 0, "", time.Time{}, false
		}
		return seconds(sample.At.Sub(sample.OldestSentAt)), "sample", sample.At, true
	}
	p, ok := rd.ages[q.ID]
	if !ok || rd.clock.past(p.At.Add(window)) {
		return 0, "", time.Time{}, false
	}
	return p.Value, "cloudwatch", p.At, true
}

// summarize builds one queue's overview row, health included.
func (s *Service) summarize(ctx context.Context, rd *readings, q store.Queue) (QueueSummary, error) {
	sum := QueueSummary{
		ID:                q.ID,
		Ref:               q.Name,
		Name:              q.Name,
		ARN:               q.ARN,
		URL:               q.URL,
		Region:            q.Region,
		Account:           AccountName(q.Account),
		AccountID:         q.AccountID,
		Scope:             q.Scope(),
		FIFO:              q.FIFO,
		IsDeadLetterQueue: deadLetter(q),
		SourceQueues:      []string{},
		Gone:              q.Gone(),
		RunningRedrive:    slices.ContainsFunc(rd.redrives[q.ID], store.MoveTask.Running),
		Sparkline:         []float64{},
	}
	switch {
	case q.IsEventBridgeDeadLetterQueue():
		sum.DeadLetterKind = DeadLetterEventBridge
	case q.IsDeadLetterQueue():
		sum.DeadLetterKind = DeadLetterSQS
	}
	if rd.names[q.Name] > 1 {
		sum.Ref = q.ARN
	}
	f := healthFacts{Now: rd.now, Queue: q, Errors: rd.errors[q.ID], EmptyAt: rd.empty[q.ID], clock: rd.clock}
	f.StaleAfter, f.AgeWindow = s.windows(rd.cadence, rd.latest[q.ID], deadLetter(q))

	if a, ok := rd.latest[q.ID]; ok {
		sum.Visible, sum.InFlight, sum.Delayed = a.Visible, a.InFlight, a.Delayed
		sum.SampledAt = timePtr(a.At)
		f.Latest = &a
	}
	sum.Sparkline = sparkline(rd.peaks[q.ID])
	if e, ok := rd.earlier[q.ID]; ok {
		f.Earlier = &e
	}
	if p, ok := rd.ages[q.ID]; ok {
		f.OldestAge = &p
	}
	if age, source, at, ok := oldestAge(rd, q, f.AgeWindow); ok {
		sum.OldestMessageAgeSeconds, sum.OldestMessageAgeSource, sum.OldestMessageAgeAt = &age, source, timePtr(at)
	}
	sum.Tier = q.IsDeadLetterQueue() && q.Attributes["RedrivePolicy"] != ""
	f.CloudWatchExpected, f.CloudWatchFailure = rd.sight.cloudWatch(q.Scope())
	if q.MaxReceiveCount > 0 {
		n := q.MaxReceiveCount
		sum.MaxReceiveCount = &n
	}
	var dlq *store.Queue // the watched queue its RedrivePolicy names
	if q.DeadLetterTargetARN != "" {
		name := arn.QueueName(q.DeadLetterTargetARN)
		if dlq = rd.byARN[q.DeadLetterTargetARN]; dlq != nil {
			name = dlq.Name
			if a, ok := rd.latest[dlq.ID]; ok {
				held := a.Held()
				sum.DeadLetterQueueDepth = &held
				f.DLQHeld = &held
			}
		}
		sum.DeadLetterQueue = &name
		f.DLQName = name
	}
	for _, arn := range q.SourceARNs {
		if src, ok := rd.byARN[arn]; ok {
			sum.SourceQueues = append(sum.SourceQueues, src.Name)
			f.Sources = append(f.Sources, *src)
		} else {
			sum.SourceQueues = append(sum.SourceQueues, arn)
		}
	}
	var groups []store.GroupBacklog
	var newest *store.Sample
	if sample, ok := rd.samples[q.ID]; ok {
		newest = &sample
		if q.FIFO {
			groups = rd.counted[sample.ID].groups
			for _, g := range groups {
				if g.Blocked {
					f.BlockedGroups = append(f.BlockedGroups, g)
				}
			}
			sum.BlockedGroups = len(f.BlockedGroups)
		}
		f.NearMax = rd.counted[sample.ID].nearMax
	}
	sum.Health = evaluateHealth(f, s.th)
	// The advice reads what the health rules read of the queue's neighbours and samples: looked
	// up once, above, for both.
	facts, err := s.adviceFacts(ctx, rd, q, adviceInputs{dlq: dlq, sources: f.Sources, latest: f.Latest, sample: newest, groups: groups})
	if err != nil {
		return QueueSummary{}, err
	}
	sum.Advice = advise(&facts, &s.th, s.adviceOff)
	return sum, nil
}

// windows returns how old a queue's newest depth sample may be before it is stale, and how old
// its newest age-of-oldest-message datapoint may be to count, at the collector's cadences: three
// of its reads (an empty, unchanged queue and an unchanged dead-letter queue are read less
// often, and a budget may slow every cadence down), and never less than the thresholds'
// StaleAfter and GrowthWindow.
func (s *Service) windows(cad store.Cadences, latest store.AttributeSample, deadLetter bool) (staleAfter, ageWindow time.Duration) {
	staleAfter = max(s.th.StaleAfter, 3*cad.Attributes)
	switch {
	case deadLetter:
		staleAfter = max(staleAfter, 3*cad.QuietDeadLetter)
	case latest.Held() == 0:
		staleAfter = max(staleAfter, 3*cad.QuietAttributes)
	}
	return staleAfter, max(s.th.GrowthWindow, 3*cad.OldestAge)
}

// sparkline draws the visible depth of each of the last 60 minutes (the minute's maximum, so
// that a spike shows), oldest first, from the depth history's per-minute peaks; minutes without
// samples are skipped.
func sparkline(peaks []float64) []float64 {
	if peaks == nil {
		return []float64{}
	}
	return peaks
}

// summaries builds every queue's row, in the overview's order.
func (s *Service) summaries(ctx context.Context, rd *readings) ([]QueueSummary, error) {
	out := make([]QueueSummary, len(rd.queues))
	for i, q := range rd.queues {
		sum, err := s.summarize(ctx, rd, q)
		if err != nil {
			return nil, err
		}
		out[i] = sum
	}
	slices.SortStableFunc(out, compareSummaries)
	return out, nil
}

// compareSummaries is the overview's order: unhealthy first, then account, region, name, ARN.
func compareSummaries(a, b QueueSummary) int {
	if c := cmp.Compare(severity(b.Health.Status), severity(a.Health.Status)); c != 0 {
		return c
	}
	if c := strings.Compare(a.Account, b.Account); c != 0 {
		return c
	}
	if c := strings.Compare(a.Region, b.Region); c != 0 {
		return c
	}
	if c := strings.Compare(a.Name, b.Name); c != 0 {
		return c
	}
	return strings.Compare(a.ARN, b.ARN)
}

// Overview returns every watched queue, unhealthy first, with totals, freshness and cost: the
// current snapshot's, its freshness's age counted to now.
func (s *Service) Overview(ctx context.Context) (Overview, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return Overview{}, err
	}
	ov := snap.Overview
	ov.Freshness = snap.FreshnessAt(s.clock())
	return ov, nil
}

// AccountName is how the pages and the API name a queue's account: its configured name, or
// "default" without configured accounts.
func AccountName(configured string) string { return cmp.Or(configured, DefaultAccount) }

// DefaultAccount names the one account of a dashboard configured without accounts.
const DefaultAccount = "default"

// InScope reports whether a queue is of account (its name or id; "" any) and region ("" any).
func (q QueueSummary) InScope(account, region string) bool {
	return (account == "" || account == q.Account || account == q.AccountID) && (region == "" || region == q.Region)
}

// scopes groups the live queues by account and region, in that order.
func scopes(qs []QueueSummary, blind []string) []ScopeSummary {
	out := []ScopeSummary{}
	at := map[string]int{}
	for _, q := range qs {
		if q.Gone {
			continue
		}
		i, ok := at[q.Scope]
		if !ok {
			i = len(out)
			at[q.Scope] = i
			out = append(out, ScopeSummary{Account: q.Account, AccountID: q.AccountID, Region: q.Region, Blind: slices.Contains(blind, q.Scope)})
		}
		out[i].Queues++
		switch q.Health.Status {
		case HealthCritical:
			out[i].Critical++
		case HealthWarning:
			out[i].Warning++
		}
	}
	slices.SortFunc(out, func(a, b ScopeSummary) int {
		return cmp.Or(cmp.Compare(a.Account, b.Account), cmp.Compare(a.Region, b.Region))
	})
	return out
}

// totals sums the rows; the depths of gone queues are history and are left out.
func totals(qs []QueueSummary) Totals {
	t := Totals{Queues: len(qs)}
	for _, q := range qs {
		switch q.Health.Status {
		case HealthCritical:
			t.Critical++
		case HealthWarning:
			t.Warning++
		case HealthUnknown:
			t.Unknown++
		}
		if q.Misconfigured() {
			t.Misconfigured++
		}
		if q.Gone {
			continue
		}
		t.Visible += q.Visible
		t.InFlight += q.InFlight
		t.Delayed += q.Delayed
		if q.IsDeadLetterQueue {
			t.DLQMessages += q.Visible
		}
	}
	return t
}

// costOf is the readings' cost estimate (the one whose cadences its rules used); zero with a
// null At before the collector made one.
func costOf(rd *readings) Cost {
	c := rd.estimate
	if c == nil {
		return Cost{Loops: []LoopCost{}, Accounts: []AccountCost{}}
	}
	out := Cost{
		TotalUSDPerDay:      c.TotalUSDPerDay,
		SQSUSDPerDay:        c.SQSUSDPerDay,
		CloudWatchUSDPerDay: c.CloudWatchUSDPerDay,
		SQSRequestsPerDay:   c.SQSRequestsPerDay,
		MetricsPerDay:       c.MetricsPerDay,
		AlarmRequestsPerDay: c.AlarmRequestsPerDay,
		FreeRequestsPerDay:  c.FreeRequestsPerDay,
		At:                  timePtr(c.At),
		Loops:               []LoopCost{},
		Accounts:            []AccountCost{},
		BudgetUSDPerDay:     c.BudgetUSDPerDay,
		OverBudget:          c.OverBudget,
	}
	if c.Cadences != (store.Cadences{}) {
		out.Freshness = c.Cadences.String()
	}
	for _, l := range c.Loops {
		out.Loops = append(out.Loops, LoopCost{Loop: l.Loop, USDPerDay: l.USD, SQSRequestsPerDay: l.SQSRequests, MetricsPerDay: l.Metrics})
	}
	for _, a := range c.Accounts {
		out.Accounts = append(out.Accounts, AccountCost{Account: a.Account, TotalUSDPerDay: a.TotalUSDPerDay, SQSUSDPerDay: a.SQSUSDPerDay,
			CloudWatchUSDPerDay: a.CloudWatchUSDPerDay, SQSRequestsPerDay: a.SQSRequestsPerDay, MetricsPerDay: a.MetricsPerDay})
	}
	return out
}

// Queues returns the queues that match q, in the overview's order, from the current snapshot.
func (s *Service) Queues(ctx context.Context, q QueueQuery) ([]QueueSummary, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	return snap.Queues(q), nil
}

// Queue returns one queue with all its attributes and newest metric values: its summary as the
// current snapshot has it, and what only its page shows, read now.
func (s *Service) Queue(ctx context.Context, queueID int64) (QueueDetail, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return QueueDetail{}, err
	}
	sum, ok := snap.Queue(queueID)
	if !ok {
		if _, err := s.queue(ctx, queueID); err != nil {
			return QueueDetail{}, err
		}
		// Found since the snapshot was built: the next one has it.
		if snap, err = s.rebuild(ctx, s.snaps.builds.Load(), 0); err != nil {
			return QueueDetail{}, err
		}
		if sum, ok = snap.Queue(queueID); !ok {
			return QueueDetail{}, fmt.Errorf("%w: queue %d", ErrNotFound, queueID)
		}
	}
	rd := snap.readings
	q := *rd.byARN[sum.ARN]
	now := s.clock()
	d := QueueDetail{
		QueueSummary: sum,
		Attributes:   map[string]string{},
		AttributesAt: timePtr(q.AttributesAt),
		Metrics:      map[string]MetricValue{},
		Errors:       []CollectorErrorView{},
		Freshness:    snap.FreshnessAt(now),
	}
	for k, v := range q.Attributes {
		d.Attributes[k] = v
	}
	points, err := s.store.LatestMetricValues(ctx, q.ID)
	if err != nil {
		return QueueDetail{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
	}
	for name, p := range points {
		d.Metrics[name] = MetricValue{Value: p.Value, At: p.At.UTC(), Period: p.Period}
	}
	if d.Peek, err = s.peekStatus(ctx, q, rd, now); err != nil {
		return QueueDetail{}, err
	}
	errs, err := s.store.ErrorsSince(ctx, q.ID, now.Add(-max(s.th.ErrorWindow, detailErrorWindow)))
	if err != nil {
		return QueueDetail{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
	}
	for i, e := range errs {
		if i == detailErrors {
			break
		}
		d.Errors = append(d.Errors, CollectorErrorView{Operation: e.Operation, Code: e.Code, Message: e.Message, At: e.At.UTC()})
	}
	if tasks := rd.redrives[q.ID]; q.IsDeadLetterQueue() && len(tasks) > 0 {
		r := redriveOf(tasks[0], now)
		d.Redrive = &r
	}
	d.DeadLetterChain = deadLetterChain(rd, q)
	d.Consumers = consumersOf(rd.topology.mappings[q.ARN])
	d.ConsumersProblem = rd.sight.consumersProblem(q.Scope())
	d.FedBy = feedsOf(rd, rd.topology.feeds[q.ARN])
	d.DeadLetterOfTargets = feedsOf(rd, rd.topology.failures[q.ARN])
	d.Alarms = alarmsOf(rd.topology.queueAlarms(q))
	d.AdviceGaps = []AdviceGap{}
	for _, g := range rd.sight.adviceGaps() {
		if g.Region == q.Scope() {
			d.AdviceGaps = append(d.AdviceGaps, g)
		}
	}
	if q.IsEventBridgeDeadLetterQueue() {
		d.RedriveUnavailable = eventBridgeNoRedrive
	}
	if expected, failure := rd.sight.cloudWatch(q.Scope()); expected && failure != nil {
		d.MetricsProblem = fmt.Sprintf("CloudWatch metrics of %s are missing (%s): GetMetricData fails in %s with %s since %s",
			q.Name, strings.Join(cloudWatchMetrics(q.FIFO), ", "), q.Scope(), safetext.Line(failure.FailureCode, 64), sinceText(failure.LastSuccessAt))
	}
	return d, nil
}

// deadLetterChain follows RedrivePolicies from q: its DLQ, the DLQ's own DLQ, and on, stopping
// at a queue toolq does not watch or at a loop.
func deadLetterChain(rd *readings, q store.Queue) []string {
	chain := []string{}
	seen := map[string]bool{q.ARN: true}
	for next := q.DeadLetterTargetARN; next != "" && !seen[next]; {
		seen[next] = true
		dlq, ok := rd.byARN[next]
		if !ok {
			chain = append(chain, next)
			break
		}
		chain = append(chain, dlq.Name)
		next = dlq.DeadLetterTargetARN
	}
	return chain
}

// cloudWatchMetrics names what the pages read from CloudWatch for a queue rather than from its
// attributes.
func cloudWatchMetrics(fifo bool) []string {
	m := []string{"ApproximateAgeOfOldestMessage", "NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted", "NumberOfEmptyReceives"}
	if fifo {
		m = append(m, "NumberOfDeduplicatedSentMessages")
	}
	return m
}

// sinceText says since when something failed: its last success, or "toolq started" when none.
func sinceText(lastSuccess time.Time) string {
	if lastSuccess.IsZero() {
		return "it was first called"
	}
	return "its last success at " + lastSuccess.UTC().Format("15:04:05 UTC")
}

// The queue page lists the last detailErrors collector errors of the last detailErrorWindow.
const (
	detailErrorWindow = time.Hour
	detailErrors      = 20
)

// peekStatus says whether and how the dashboard samples a queue and what its receives cost.
func (s *Service) peekStatus(ctx context.Context, q store.Queue, rd *readings, now time.Time) (PeekStatus, error) {
	p := PeekStatus{Enabled: q.PeekEnabled, Paused: q.PeekPaused, OwnReceiveLimit: ownReceiveLimit(q.MaxReceiveCount)}
	if sample, ok := rd.samples[q.ID]; ok {
		if p.OwnReceiveLimit != nil {
			most, err := s.store.MostOwnReceives(ctx, sample.ID)
			if err != nil {
				return PeekStatus{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
			}
			p.MostOwnReceives = most
		}
		p.Kind = string(sample.Kind)
		p.LastSampleAt = timePtr(sample.At)
		p.Seen = sample.Seen
		p.ApproxVisible = sample.ApproxVisible
		p.Coverage = sample.Coverage()
	}
	hour, err := s.store.ReceiveBudgetSince(ctx, q.ID, now.Add(-time.Hour))
	if err != nil {
		return PeekStatus{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
	}
	day, err := s.store.ReceiveBudgetSince(ctx, q.ID, now.Add(-24*time.Hour))
	if err != nil {
		return PeekStatus{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
	}
	var latest *store.Sample
	if sample, ok := rd.samples[q.ID]; ok {
		latest = &sample
	}
	p.Next = sampleDueOf(q, latest, rd.cadence, now)
	p.ReceivesLastHour = hour.Receives
	p.ReceivesLastDay = day.Receives
	p.MessagesTakenLastDay = day.MessagesTaken
	return p, nil
}
