package collector

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// CloudWatch request shapes.
const (
	// maxQueriesPerCall is GetMetricData's limit on queries per request.
	maxQueriesPerCall = 500
	metricPeriod      = 60  // seconds: SQS's metric resolution
	backfillPeriod    = 300 // seconds: coarser, for the one-time backfill of a day
	// maxCatchUp bounds the window of a regular cycle after a long stop: older gaps are left to
	// what the backfill and the roll-ups already hold.
	maxCatchUp = 24 * time.Hour
	// lateData is how far back a cycle asks again even when the previous one asked already:
	// CloudWatch may publish a minute's datapoint a few minutes late.
	lateData = 5 * time.Minute
)

// Metrics read from CloudWatch: only those GetQueueAttributes cannot give, and only for source
// queues (a dead-letter queue's depth comes from its attributes and its oldest message from its
// samples). The age of the oldest message is asked every MetricsInterval for the sources that
// held messages since the last ask, since a health rule needs it fresh; the others every
// CountersInterval, as one-minute datapoints. The statistic of each comes from store.MetricStat,
// the one mapping the roll-ups also use.
const ageMetric = "ApproximateAgeOfOldestMessage"

var (
	cycleMetrics = []string{
		ageMetric,
		"NumberOfMessagesSent",
		"NumberOfMessagesReceived",
		"NumberOfMessagesDeleted",
		"NumberOfEmptyReceives",
		"SentMessageSize",
	}
	fifoMetrics = []string{
		"NumberOfDeduplicatedSentMessages",
		"ApproximateNumberOfGroupsWithInflightMessages",
	}
	// depthMetrics are added to the backfill: attribute samples cover the depth from now on,
	// but not the day before the queue was first seen.
	depthMetrics = []string{
		"ApproximateNumberOfMessagesVisible",
		"ApproximateNumberOfMessagesNotVisible",
		"ApproximateNumberOfMessagesDelayed",
	}
)

// metricsOf returns the metrics CloudWatch has of a queue that the collector reads.
func metricsOf(fifo bool) []string {
	if fifo {
		return slices.Concat(cycleMetrics, fifoMetrics)
	}
	return cycleMetrics
}

// counterMetrics returns metricsOf but the age of the oldest message: those asked every
// CountersInterval.
func counterMetrics(fifo bool) []string {
	return slices.DeleteFunc(slices.Clone(metricsOf(fifo)), func(m string) bool { return m == ageMetric })
}

// metricQuery is one GetMetricData query: one metric of one queue over a window.
type metricQuery struct {
	queue  *watchedQueue
	metric string
	period int
	start  time.Time
}

// windowStart is where a queue's next window of a kind of metrics starts: at its newest stored
// datapoint of them, or fresh back for a queue without any; never before lateData ahead of the
// window last asked (a quiet queue has no recent point, and asking again for the hours since its
// last one would only return nothing again) nor more than maxCatchUp back; on the minute.
func windowStart(newest, asked, now time.Time, fresh time.Duration) time.Time {
	start := newest
	if start.IsZero() {
		start = now.Add(-fresh)
	}
	if since := asked.Add(-lateData); start.Before(since) {
		start = since
	}
	if floor := now.Add(-maxCatchUp); start.Before(floor) {
		start = floor
	}
	// CloudWatch's one-minute points begin on the minute. Without rounding, a window of
	// now-2×interval with an interval under a minute (--metrics-interval 30s) never spans a
	// whole minute up to end and a new queue would never be asked at all.
	return start.Truncate(time.Minute)
}

// CycleMetrics reads the CloudWatch metrics of the source queues that are due: one
// GetMetricData call per 500 queries, each window starting at the newest stored datapoint of its
// kind. The age of the oldest message of a source that held messages since the last ask is due
// every MetricsInterval, its other metrics every CountersInterval; dead-letter queues are not
// asked. Queues seen for the first time get a one-time backfill (Options.Backfill, 5-minute
// points, depth metrics included), dead-letter queues too.
func (c *Collector) CycleMetrics(ctx context.Context) error {
	cy := c.startCycle(ctx, store.RunMetrics)
	defer c.finish(ctx, cy)
	newestAge, err := c.store.NewestMetricTimes(ctx, ageMetric)
	if err != nil {
		return fmt.Errorf("collector: newest metric times: %w", err)
	}
	newestCounters, err := c.store.NewestMetricTimes(ctx, counterMetrics(true)...)
	if err != nil {
		return fmt.Errorf("collector: newest metric times: %w", err)
	}
	now := c.now()
	end := now.Truncate(time.Minute) // complete minutes only
	cad := c.cadence()
	dlqs := c.deadLetterARNs()
	queues := c.watched()
	cy.queues.Store(int64(len(queues)))
	stored := 0
	for _, r := range c.regions {
		if r.CloudWatch == nil {
			continue
		}
		cy.cover(r.key, 0)
		var regular, backfill []metricQuery
		add := func(q *watchedQueue, metrics []string, start time.Time) {
			// Asking for no complete minute would still be billed.
			if end.Sub(start) < metricPeriod*time.Second {
				return
			}
			for _, m := range metrics {
				regular = append(regular, metricQuery{queue: q, metric: m, period: metricPeriod, start: start})
			}
		}
		for _, q := range queues {
			if q.region != r {
				continue
			}
			st := q.state()
			if !dlqs[q.arn] {
				if st.heldMessages && dueAt(st.metricsAskedUntil, now, cad.OldestAge, c.opts.MetricsInterval) {
					add(q, []string{ageMetric}, windowStart(newestAge[q.id], st.metricsAskedUntil, now, 2*c.opts.MetricsInterval))
				}
				if dueAt(st.countersAskedUntil, now, cad.Counters, c.opts.MetricsInterval) {
					add(q, counterMetrics(st.fifo), windowStart(newestCounters[q.id], st.countersAskedUntil, now, cad.Counters))
				}
			}
			if !st.backfilled && c.opts.Backfill > 0 {
				from := now.Add(-c.opts.Backfill).Truncate(backfillPeriod * time.Second)
				for _, m := range slices.Concat(metricsOf(st.fifo), depthMetrics) {
					backfill = append(backfill, metricQuery{queue: q, metric: m, period: backfillPeriod, start: from})
				}
			}
		}
		// Similar windows go in the same call; a call's window is its earliest start.
		slices.SortStableFunc(regular, func(a, b metricQuery) int { return a.start.Compare(b.start) })
		asked := make(map[*watchedQueue]bool)
		for _, mq := range regular {
			asked[mq.queue] = true
		}
		cy.cover(r.key, len(asked))
		failed := make(map[*watchedQueue]bool)
		for batch := range slices.Chunk(regular, maxQueriesPerCall) {
			n, err := c.getMetricData(ctx, cy, r, batch, end)
			stored += n
			if err != nil {
				for _, mq := range batch {
					if !failed[mq.queue] {
						failed[mq.queue] = true
						cy.queueFailed(r.key)
					}
				}
			}
			if err == nil {
				for _, mq := range batch {
					mq.queue.setMetricsAskedUntil(end, mq.metric == ageMetric)
				}
			}
		}
		for _, batch := range packByQueue(backfill) {
			n, err := c.getMetricData(ctx, cy, r, batch, end)
			stored += n
			if err == nil {
				c.markBackfilled(ctx, batch, now)
			}
		}
	}
	c.updateCost(ctx)
	if stored > 0 {
		c.pub.Publish(events.Event{Kind: events.MetricsChanged, At: c.now()})
	}
	return ctx.Err()
}

// markBackfilled records the backfill of every queue of batch.
func (c *Collector) markBackfilled(ctx context.Context, batch []metricQuery, at time.Time) {
	var done *watchedQueue
	for _, mq := range batch {
		if mq.queue == done {
			continue
		}
		done = mq.queue
		if err := c.store.SetBackfilled(ctx, mq.queue.id, at); err != nil {
			c.warn(ctx, "collector: set backfilled", "queue", mq.queue.name, "err", err)
			continue
		}
		mq.queue.setBackfilled()
	}
}

// packByQueue cuts queries, grouped by queue, into batches of at most maxQueriesPerCall that
// never split a queue, so that a batch's success means its queues are complete.
func packByQueue(queries []metricQuery) [][]metricQuery {
	var batches [][]metricQuery
	var cur []metricQuery
	for i := 0; i < len(queries); {
		j := i
		for j < len(queries) && queries[j].queue == queries[i].queue {
			j++
		}
		if len(cur)+(j-i) > maxQueriesPerCall && len(cur) > 0 {
			batches = append(batches, cur)
			cur = nil
		}
		cur = append(cur, queries[i:j]...)
		i = j
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches
}

// getMetricData asks CloudWatch for one batch of at most 500 queries, following NextToken, and
// stores the datapoints. It returns how many it stored.
func (c *Collector) getMetricData(ctx context.Context, cy *cycle, r *region, batch []metricQuery, end time.Time) (int, error) {
	start := batch[0].start
	byID := make(map[string]metricQuery, len(batch))
	queries := make([]cwtypes.MetricDataQuery, 0, len(batch))
	for i, mq := range batch {
		if mq.start.Before(start) {
			start = mq.start
		}
		id := "m" + strconv.Itoa(i) // ids must start with a lower-case letter
		byID[id] = mq
		queries = append(queries, cwtypes.MetricDataQuery{
			Id: aws.String(id),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace:  aws.String("AWS/SQS"),
					MetricName: aws.String(mq.metric),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(mq.queue.name)}},
				},
				Period: aws.Int32(int32(mq.period)),
				Stat:   aws.String(store.MetricStat(mq.metric)),
			},
			ReturnData: aws.Bool(true),
		})
	}
	in := &cloudwatch.GetMetricDataInput{
		StartTime:         aws.Time(start),
		EndTime:           aws.Time(end),
		MetricDataQueries: queries,
		ScanBy:            cwtypes.ScanByTimestampAscending,
	}
	var points []store.MetricPoint
	for range maxPages {
		var out *cloudwatch.GetMetricDataOutput
		err := c.call(ctx, cy, r, opGetMetricData, nil, func(ctx context.Context) error {
			var err error
			out, err = r.CloudWatch.GetMetricData(ctx, in)
			return err
		})
		if err != nil {
			return c.storePoints(ctx, cy, points), err
		}
		for _, res := range out.MetricDataResults {
			mq, ok := byID[aws.ToString(res.Id)]
			if !ok {
				continue
			}
			n := min(len(res.Timestamps), len(res.Values))
			for i := range n {
				points = append(points, store.MetricPoint{
					QueueID: mq.queue.id, Metric: mq.metric, At: res.Timestamps[i], Period: mq.period, Value: res.Values[i],
				})
			}
		}
		if out.NextToken == nil || *out.NextToken == "" || (in.NextToken != nil && *in.NextToken == *out.NextToken) {
			break
		}
		in.NextToken = out.NextToken
	}
	return c.storePoints(ctx, cy, points), nil
}

func (c *Collector) storePoints(ctx context.Context, cy *cycle, points []store.MetricPoint) int {
	if len(points) == 0 {
		return 0
	}
	if err := c.store.UpsertMetricPoints(ctx, points); err != nil {
		c.storeFailed(ctx, cy, "UpsertMetricPoints", nil, err)
		return 0
	}
	return len(points)
}
