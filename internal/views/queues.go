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
	"github.com/toolq/toolq/internal/parallel"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// sparklineWindow is how far back the overview's sparklines reach, and SparklinePoints how many
// points they have at most (one per minute).
const (
	sparklineWindow = time.Hour
	SparklinePoints = 60
)

// snapshot is what the queue views gather from the store in a few bulk reads, before any
// per-queue work.
type snapshot struct {
	now      time.Time
	queues   []store.Queue           // every queue, gone ones included, by name
	byARN    map[string]*store.Queue // into queues
	latest   map[int64]store.AttributeSample
	peaks    map[int64][]float64              // each minute's visible peak within sparklineWindow
	earlier  map[int64]store.AttributeSample  // the growth rule's earlier sample
	ages     map[int64]store.MetricPoint      // newest ApproximateAgeOfOldestMessage
	samples  map[int64]store.Sample           // newest message sample
	nearMax  map[int64]int                    // of each newest sample, by sample id
	groups   map[int64][]store.GroupBacklog   // groups of each newest FIFO sample, by sample id
	errors   map[int64][]store.CollectorError // within ErrorWindow, newest first
	empty    map[int64]time.Time              // each queue's newest sample without messages, within sparklineWindow
	estimate *store.CostEstimate              // the collector's newest, with its cadences; nil before one
	cadence  store.Cadences                   // the estimate's cadences; zero before one
	running  map[int64]bool                   // queues with a running move task
	tasks    []store.MoveTask                 // the running move tasks
	sight    sightFacts
	topology topology       // what surrounds the queues: consumers, rules, alarms
	names    map[string]int // how many queues have each name, for links (QueueSummary.Ref)
}

// gather reads the snapshot. With queueID 0 it reads every queue's sparkline and growth sample;
// otherwise only that queue's, as a queue page summarizes no other queue.
//
// The reads are independent of each other (but for the two that count what the newest samples
// hold), so they run at once: most answer from the store's memory, and at a thousand queues
// each costs a millisecond or two of CPU that a second core halves (docs/performance.md).
func (s *Service) gather(ctx context.Context, now time.Time, queueID int64) (*snapshot, error) {
	snap := &snapshot{now: now, byARN: map[string]*store.Queue{}, errors: map[int64][]store.CollectorError{}, running: map[int64]bool{}}
	// The sparklines' buckets are whole minutes, the last one the minute under way: a bucket's
	// peak then changes only when a sample of its minute comes, not every time now moves, so an
	// overview push carries the rows whose depth changed and, once a minute, those whose
	// sparkline moved on.
	bucket := sparklineWindow / SparklinePoints
	// The growth rule compares the newest depth with the newest at least GrowthWindow old, but
	// no older than the sparkline's hour or twice GrowthWindow, whichever reaches further back:
	// a DLQ is not "growing" against a sample from days ago.
	growthSince := now.Add(-max(sparklineWindow, 2*s.th.GrowthWindow))
	var errs []store.CollectorError
	err := concurrently(ctx,
		func(ctx context.Context) (err error) {
			snap.queues, err = s.store.ListQueues(ctx, store.QueueFilter{IncludeGone: true})
			return err
		},
		func(ctx context.Context) (err error) {
			snap.latest, err = s.store.LatestAttributeSamples(ctx)
			return err
		},
		func(ctx context.Context) (err error) {
			snap.peaks, err = s.store.VisiblePeakValues(ctx, queueID, now.Truncate(bucket).Add(-sparklineWindow+bucket), now, bucket)
			return err
		},
		func(ctx context.Context) (err error) {
			snap.earlier, err = s.store.LatestAttributeSamplesBetween(ctx, queueID, growthSince, now.Add(-s.th.GrowthWindow))
			return err
		},
		func(ctx context.Context) (err error) {
			snap.ages, err = s.store.LatestMetricPoints(ctx, metricOldestAge)
			return err
		},
		func(ctx context.Context) (err error) {
			snap.empty, err = s.store.LastEmptyTimes(ctx, now.Add(-sparklineWindow), now)
			return err
		},
		func(ctx context.Context) error {
			switch e, err := s.store.GetCostEstimate(ctx); {
			case err == nil:
				snap.estimate, snap.cadence = &e, e.Cadences
			case !errors.Is(err, store.ErrNotFound):
				return err
			}
			return nil
		},
		func(ctx context.Context) (err error) { snap.samples, err = s.store.LatestSamples(ctx); return err },
		func(ctx context.Context) (err error) {
			errs, err = s.store.ErrorsSince(ctx, 0, now.Add(-s.th.ErrorWindow))
			return err
		},
		func(ctx context.Context) (err error) { snap.tasks, err = s.store.RunningMoveTasks(ctx); return err },
		func(ctx context.Context) (err error) { snap.sight, err = s.readSight(ctx); return err },
		func(ctx context.Context) (err error) { snap.topology, err = s.readTopology(ctx); return err },
	)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err) // the store's errors name the read
	}
	snap.names = make(map[string]int, len(snap.queues))
	for i, q := range snap.queues {
		snap.byARN[q.ARN] = &snap.queues[i]
		snap.names[q.Name]++
	}
	for _, e := range errs {
		if e.QueueID != 0 {
			snap.errors[e.QueueID] = append(snap.errors[e.QueueID], e)
		}
	}
	for _, t := range snap.tasks {
		snap.running[t.QueueID] = true
	}
	// What the health rules count in each queue's newest sample, in two queries for all of them.
	var sampled, fifoSampled []int64
	for _, q := range snap.queues {
		if sample, ok := snap.samples[q.ID]; ok && (queueID == 0 || q.ID == queueID) {
			sampled = append(sampled, sample.ID)
			if q.FIFO {
				fifoSampled = append(fifoSampled, sample.ID)
			}
		}
	}
	err = concurrently(ctx,
		func(ctx context.Context) (err error) {
			snap.nearMax, err = s.store.NearMaxCounts(ctx, sampled)
			return err
		},
		func(ctx context.Context) (err error) {
			snap.groups, err = s.store.GroupsOfSamples(ctx, fifoSampled)
			return err
		},
	)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err) // the store's errors name the read
	}
	return snap, nil
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
func oldestAge(snap *snapshot, q store.Queue, window time.Duration) (age float64, source string, at time.Time, ok bool) {
	a, sampled := snap.latest[q.ID]
	if !sampled || a.Visible+a.InFlight == 0 {
		return 0, "", time.Time{}, false
	}
	if deadLetter(q) {
		sample, ok := snap.samples[q.ID]
		if !ok || sample.OldestSentAt.IsZero() || snap.now.Sub(sample.At) > sampleAgeWindow {
			return 0, "", time.Time{}, false
		}
		return seconds(sample.At.Sub(sample.OldestSentAt)), "sample", sample.At, true
	}
	p, ok := snap.ages[q.ID]
	if !ok || snap.now.Sub(p.At) > window {
		return 0, "", time.Time{}, false
	}
	return p.Value, "cloudwatch", p.At, true
}

// summarize builds one queue's overview row, health included.
func (s *Service) summarize(ctx context.Context, snap *snapshot, q store.Queue) (QueueSummary, error) {
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
		RunningRedrive:    snap.running[q.ID],
		Sparkline:         []float64{},
	}
	switch {
	case q.IsEventBridgeDeadLetterQueue():
		sum.DeadLetterKind = DeadLetterEventBridge
	case q.IsDeadLetterQueue():
		sum.DeadLetterKind = DeadLetterSQS
	}
	if snap.names[q.Name] > 1 {
		sum.Ref = q.ARN
	}
	f := healthFacts{Now: snap.now, Queue: q, Errors: snap.errors[q.ID], EmptyAt: snap.empty[q.ID]}
	f.StaleAfter, f.AgeWindow = s.windows(snap.cadence, snap.latest[q.ID])

	if a, ok := snap.latest[q.ID]; ok {
		sum.Visible, sum.InFlight, sum.Delayed = a.Visible, a.InFlight, a.Delayed
		sum.SampledAt = timePtr(a.At)
		f.Latest = &a
	}
	sum.Sparkline = sparkline(snap.peaks[q.ID])
	if e, ok := snap.earlier[q.ID]; ok {
		f.Earlier = &e
	}
	if p, ok := snap.ages[q.ID]; ok {
		f.OldestAge = &p
	}
	if age, source, at, ok := oldestAge(snap, q, f.AgeWindow); ok {
		sum.OldestMessageAgeSeconds, sum.OldestMessageAgeSource, sum.OldestMessageAgeAt = &age, source, timePtr(at)
	}
	sum.Tier = q.IsDeadLetterQueue() && q.Attributes["RedrivePolicy"] != ""
	f.CloudWatchExpected, f.CloudWatchFailure = snap.sight.cloudWatch(q.Scope())
	if q.MaxReceiveCount > 0 {
		n := q.MaxReceiveCount
		sum.MaxReceiveCount = &n
	}
	var dlq *store.Queue // the watched queue its RedrivePolicy names
	if q.DeadLetterTargetARN != "" {
		name := arn.QueueName(q.DeadLetterTargetARN)
		if dlq = snap.byARN[q.DeadLetterTargetARN]; dlq != nil {
			name = dlq.Name
			if a, ok := snap.latest[dlq.ID]; ok {
				v := a.Visible
				sum.DeadLetterQueueDepth = &v
				f.DLQVisible = &v
			}
		}
		sum.DeadLetterQueue = &name
		f.DLQName = name
	}
	for _, arn := range q.SourceARNs {
		if src, ok := snap.byARN[arn]; ok {
			sum.SourceQueues = append(sum.SourceQueues, src.Name)
			f.Sources = append(f.Sources, *src)
		} else {
			sum.SourceQueues = append(sum.SourceQueues, arn)
		}
	}
	var groups []store.GroupBacklog
	var newest *store.Sample
	if sample, ok := snap.samples[q.ID]; ok {
		newest = &sample
		if q.FIFO {
			groups = snap.groups[sample.ID]
			for _, g := range groups {
				if g.Blocked {
					f.BlockedGroups = append(f.BlockedGroups, g)
				}
			}
			sum.BlockedGroups = len(f.BlockedGroups)
		}
		f.NearMax = snap.nearMax[sample.ID]
	}
	sum.Health = evaluateHealth(f, s.th)
	// The advice reads what the health rules read of the queue's neighbours and samples: looked
	// up once, above, for both.
	facts, err := s.adviceFacts(ctx, snap, q, adviceInputs{dlq: dlq, sources: f.Sources, latest: f.Latest, sample: newest, groups: groups})
	if err != nil {
		return QueueSummary{}, err
	}
	sum.Advice = advise(&facts, &s.th, s.adviceOff)
	return sum, nil
}

// windows returns how old a queue's newest depth sample may be before it is stale, and how old
// its newest age-of-oldest-message datapoint may be to count, at the collector's cadences: three
// of its reads (an empty, unchanged queue is read less often, and a budget may slow every
// cadence down), and never less than the thresholds' StaleAfter and GrowthWindow.
func (s *Service) windows(cad store.Cadences, latest store.AttributeSample) (staleAfter, ageWindow time.Duration) {
	staleAfter = max(s.th.StaleAfter, 3*cad.Attributes)
	if latest.Visible+latest.InFlight+latest.Delayed == 0 {
		staleAfter = max(staleAfter, 3*cad.QuietAttributes)
	}
	return staleAfter, max(s.th.GrowthWindow, 3*cad.OldestAge)
}

// sparkline draws the visible depth of each of the last 60 minutes (the minute's maximum, so
// that a spike shows), oldest first, from the store's per-minute peaks; minutes without samples
// are skipped. The peaks are the snapshot's own, read for it alone.
func sparkline(peaks []float64) []float64 {
	if peaks == nil {
		return []float64{}
	}
	return peaks
}

// summaries builds every queue's row, in the overview's order. A summary only reads the
// snapshot, and at a thousand queues the summaries are most of the overview's CPU, so they are
// built on every processor at once.
func (s *Service) summaries(ctx context.Context, snap *snapshot) ([]QueueSummary, error) {
	out := make([]QueueSummary, len(snap.queues))
	err := parallel.Stretches(ctx, len(out), func(ctx context.Context, from, to int) error {
		for i := from; i < to; i++ {
			sum, err := s.summarize(ctx, snap, snap.queues[i])
			if err != nil {
				return err
			}
			out[i] = sum
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return sortSummaries(out), nil
}

// sortSummaries puts unhealthy queues first (critical, then warning), then groups them by
// account and region and orders them by name, in place. It sorts the rows' places and then
// moves each row once, along the cycles of the order: a summary is large, and a stable sort of
// a thousand of them spent a millisecond moving them about (a copy into a new slice, half a
// megabyte a page).
func sortSummaries(qs []QueueSummary) []QueueSummary {
	order := make([]int, len(qs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return compareSummaries(&qs[i], &qs[j]) })
	// Place i takes the row at order[i]: each cycle of places is walked once, its first row
	// held aside, and each place done is marked -1.
	for i := range qs {
		if order[i] < 0 || order[i] == i {
			continue
		}
		first, at := qs[i], i
		for order[at] != i {
			from := order[at]
			qs[at], order[at] = qs[from], -1
			at = from
		}
		qs[at], order[at] = first, -1
	}
	return qs
}

// compareSummaries is the overview's order: unhealthy first, then account, region, name, ARN.
func compareSummaries(a, b *QueueSummary) int {
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

// Overview returns every watched queue, unhealthy first, with totals, freshness and cost.
func (s *Service) Overview(ctx context.Context) (Overview, error) {
	now := s.clock()
	snap, err := s.gather(ctx, now, 0)
	if err != nil {
		return Overview{}, err
	}
	ov := Overview{Cost: costOf(snap)}
	err = concurrently(ctx,
		func(ctx context.Context) (err error) { ov.Queues, err = s.summaries(ctx, snap); return err },
		func(ctx context.Context) (err error) {
			ov.Freshness, err = s.freshness(ctx, now, snap.sight)
			return err
		},
	)
	if err != nil {
		return Overview{}, err
	}
	ov.Totals, ov.Sight = totals(ov.Queues), snap.sight.problems()
	ov.Problems = problems(ov.Queues, ov.Sight)
	ov.Scopes = scopes(ov.Queues, ov.Freshness.Blind)
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

// costOf is the snapshot's cost estimate (the one whose cadences its rules used); zero with a
// null At before the collector made one.
func costOf(snap *snapshot) Cost {
	c := snap.estimate
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

// Queues returns the queues that match q, in the overview's order.
func (s *Service) Queues(ctx context.Context, q QueueQuery) ([]QueueSummary, error) {
	snap, err := s.gather(ctx, s.clock(), 0)
	if err != nil {
		return nil, err
	}
	all, err := s.summaries(ctx, snap)
	if err != nil {
		return nil, err
	}
	out := []QueueSummary{}
	for _, sum := range all {
		if q.DLQOnly && !sum.IsDeadLetterQueue {
			continue
		}
		if q.Misconfigured && !sum.Misconfigured() {
			continue
		}
		if len(q.Health) > 0 && !slices.Contains(q.Health, sum.Health.Status) {
			continue
		}
		if !sum.InScope(q.Account, q.Region) {
			continue
		}
		out = append(out, sum)
	}
	return out, nil
}

// Queue returns one queue with all its attributes and newest metric values.
func (s *Service) Queue(ctx context.Context, queueID int64) (QueueDetail, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return QueueDetail{}, err
	}
	now := s.clock()
	snap, err := s.gather(ctx, now, q.ID)
	if err != nil {
		return QueueDetail{}, err
	}
	if gathered, ok := snap.byARN[q.ARN]; ok {
		q = *gathered // the gathered copy, so that sources match the snapshot
	}
	sum, err := s.summarize(ctx, snap, q)
	if err != nil {
		return QueueDetail{}, err
	}
	d := QueueDetail{
		QueueSummary: sum,
		Attributes:   map[string]string{},
		AttributesAt: timePtr(q.AttributesAt),
		Metrics:      map[string]MetricValue{},
		Errors:       []CollectorErrorView{},
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
	if d.Peek, err = s.peekStatus(ctx, q, snap, now); err != nil {
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
	if q.IsDeadLetterQueue() {
		tasks, err := s.store.ListMoveTasks(ctx, q.ID, 1)
		if err != nil {
			return QueueDetail{}, fmt.Errorf("views: queue %s: %w", q.Name, err)
		}
		if len(tasks) > 0 {
			r := redriveOf(tasks[0], now)
			d.Redrive = &r
		}
	}
	if d.Freshness, err = s.freshness(ctx, now, snap.sight); err != nil {
		return QueueDetail{}, err
	}
	d.DeadLetterChain = deadLetterChain(snap, q)
	d.Consumers = consumersOf(snap.topology.mappings[q.ARN])
	d.ConsumersProblem = snap.sight.consumersProblem(q.Scope())
	d.FedBy = feedsOf(snap, snap.topology.feeds[q.ARN])
	d.DeadLetterOfTargets = feedsOf(snap, snap.topology.failures[q.ARN])
	d.Alarms = alarmsOf(snap.topology.queueAlarms(q))
	d.AdviceGaps = []AdviceGap{}
	for _, g := range snap.sight.adviceGaps() {
		if g.Region == q.Scope() {
			d.AdviceGaps = append(d.AdviceGaps, g)
		}
	}
	if q.IsEventBridgeDeadLetterQueue() {
		d.RedriveUnavailable = eventBridgeNoRedrive
	}
	if expected, failure := snap.sight.cloudWatch(q.Scope()); expected && failure != nil {
		d.MetricsProblem = fmt.Sprintf("CloudWatch metrics of %s are missing (%s): GetMetricData fails in %s with %s since %s",
			q.Name, strings.Join(cloudWatchMetrics(q.FIFO), ", "), q.Scope(), safetext.Line(failure.FailureCode, 64), sinceText(failure.LastSuccessAt))
	}
	return d, nil
}

// deadLetterChain follows RedrivePolicies from q: its DLQ, the DLQ's own DLQ, and on, stopping
// at a queue toolq does not watch or at a loop.
func deadLetterChain(snap *snapshot, q store.Queue) []string {
	chain := []string{}
	seen := map[string]bool{q.ARN: true}
	for next := q.DeadLetterTargetARN; next != "" && !seen[next]; {
		seen[next] = true
		dlq, ok := snap.byARN[next]
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
func (s *Service) peekStatus(ctx context.Context, q store.Queue, snap *snapshot, now time.Time) (PeekStatus, error) {
	p := PeekStatus{Enabled: q.PeekEnabled, Paused: q.PeekPaused, OwnReceiveLimit: ownReceiveLimit(q)}
	if sample, ok := snap.samples[q.ID]; ok {
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
	if sample, ok := snap.samples[q.ID]; ok {
		latest = &sample
	}
	p.Next = sampleDueOf(q, latest, snap.cadence, now)
	p.ReceivesLastHour = hour.Receives
	p.ReceivesLastDay = day.Receives
	p.MessagesTakenLastDay = day.MessagesTaken
	return p, nil
}
