package collector

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// recordingCW is the real CloudWatch client, keeping a copy of every request it sends.
type recordingCW struct {
	*cloudwatch.Client
	mu    sync.Mutex
	calls []*cloudwatch.GetMetricDataInput
}

func (r *recordingCW) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	r.mu.Lock()
	cp := *in
	r.calls = append(r.calls, &cp)
	r.mu.Unlock()
	return r.Client.GetMetricData(ctx, in, optFns...)
}

// TestMetricsCallsAndQueriesPerCall: the first cycle asks for every source queue's counters (5
// metrics, 7 for FIFO) and the age of the oldest message of those holding messages, none of a
// dead-letter queue, packed 500 queries to a call.
func TestMetricsCallsAndQueriesPerCall(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		standard int
		fifo     int
		held     bool // every queue holds a message
		pairs    int  // source queues with a dead-letter queue
		want     []int
	}{
		{"one standard queue", 1, 0, false, 0, []int{5}},
		{"one standard queue holding messages", 1, 0, true, 0, []int{6}},
		{"one FIFO queue", 0, 1, false, 0, []int{7}},
		{"one FIFO queue holding messages", 0, 1, true, 0, []int{8}},
		{"a source and its dead-letter queue", 0, 0, false, 1, []int{5}},
		{"120 standard queues", 120, 0, false, 0, []int{500, 100}},
		{"120 standard queues holding messages", 120, 0, true, 0, []int{500, 220}},
		{"100 standard and 50 FIFO", 100, 50, true, 0, []int{500, 500}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for i := range tt.standard {
				url, _ := e.createQueue(fmt.Sprintf("std-%03d", i), nil)
				if tt.held {
					e.send(url, "m")
				}
			}
			for i := range tt.fifo {
				url, _ := e.createQueue(fmt.Sprintf("fifo-%03d.fifo", i), map[string]string{"FifoQueue": "true"})
				if tt.held {
					e.send(url, "m", inGroup("g", "d"))
				}
			}
			for i := range tt.pairs {
				e.createPair(fmt.Sprintf("src-%03d", i), fmt.Sprintf("src-%03d-dlq", i), 3)
			}
			c := e.collector(nil)
			must(t, c.Discover(e.ctx))
			e.sim.ResetCallCounts()
			must(t, c.CycleMetrics(e.ctx))
			if got := e.sim.MetricQueriesPerCall(); !slices.Equal(got, tt.want) {
				t.Errorf("queries per GetMetricData call = %v, want %v", got, tt.want)
			}
			if got := e.sim.CallCount("GetMetricData"); got != len(tt.want) {
				t.Errorf("GetMetricData calls = %d, want %d", got, len(tt.want))
			}
		})
	}
}

func TestMetricsWindowStartsAtNewestPoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	url, _ := e.createQueue("web-search", nil)
	cw := &recordingCW{Client: e.cw}
	c := e.collector(func(o *Options) {
		o.Regions[0].CloudWatch = cw
		o.CountersInterval = DefaultMetricsInterval // the counters at every cycle, as the age would be
	})
	must(t, c.Discover(e.ctx))
	for i := range 12 {
		e.send(url, toolCallBody("search", i, "s"))
		e.advance(time.Minute)
	}
	must(t, c.CycleMetrics(e.ctx))
	q := e.queueNamed("web-search")
	sent, err := e.store.MetricSeries(e.ctx, q.ID, "NumberOfMessagesSent", t0.Add(-time.Hour), t0.Add(time.Hour))
	must(t, err)
	if len(sent) == 0 {
		t.Fatal("no NumberOfMessagesSent datapoints stored")
	}
	for _, p := range sent {
		if p.Period != 60 || p.Value != 1 {
			t.Errorf("datapoint %+v, want one message a minute", p)
		}
	}
	if n := e.bus.count(events.MetricsChanged, 0); n != 1 {
		t.Errorf("MetricsChanged events = %d, want 1", n)
	}
	newest, err := e.store.NewestMetricTimes(e.ctx)
	must(t, err)

	e.advance(5 * time.Minute)
	must(t, c.CycleMetrics(e.ctx))
	if len(cw.calls) != 2 {
		t.Fatalf("GetMetricData calls = %d, want 2", len(cw.calls))
	}
	second := cw.calls[1]
	if got := aws.ToTime(second.StartTime); !got.Equal(newest[q.ID]) {
		t.Errorf("second cycle starts at %v, want the newest stored point %v", got, newest[q.ID])
	}
	if got, want := aws.ToTime(second.EndTime), e.clock.Now().Truncate(time.Minute); !got.Equal(want) {
		t.Errorf("second cycle ends at %v, want %v (complete minutes only)", got, want)
	}
	for _, mq := range second.MetricDataQueries {
		name := aws.ToString(mq.MetricStat.Metric.MetricName)
		if got := aws.ToString(mq.MetricStat.Stat); got != store.MetricStat(name) {
			t.Errorf("%s asked with %s, want %s", name, got, store.MetricStat(name))
		}
	}
}

func TestBackfillOnceAcrossRestarts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	url, _ := e.createQueue("web-search", nil)
	// Two hours of history before toolq first looks.
	for i := range 24 {
		e.send(url, toolCallBody("search", i, "s"))
		e.advance(5 * time.Minute)
	}
	withBackfill := func(o *Options) {
		o.Backfill = 24 * time.Hour
		o.CountersInterval = DefaultMetricsInterval // every metric at every cycle
	}
	c := e.collector(withBackfill)
	must(t, c.Discover(e.ctx))
	e.sim.ResetCallCounts()
	must(t, c.CycleMetrics(e.ctx))
	if got, want := e.sim.MetricQueriesPerCall(), []int{6, 9}; !slices.Equal(got, want) {
		t.Errorf("first cycle queries per call = %v, want %v (regular, then backfill with depth)", got, want)
	}
	q := e.queueNamed("web-search")
	if q.BackfilledAt.IsZero() {
		t.Fatal("BackfilledAt not set")
	}
	depth, err := e.store.MetricSeries(e.ctx, q.ID, "ApproximateNumberOfMessagesVisible", t0.Add(-time.Hour), e.clock.Now())
	must(t, err)
	if len(depth) == 0 || depth[0].Period != 300 {
		t.Errorf("backfilled depth = %+v, want 5-minute points", depth)
	}

	// Same collector, next cycle: no backfill.
	e.advance(5 * time.Minute)
	e.sim.ResetCallCounts()
	must(t, c.CycleMetrics(e.ctx))
	if got := e.sim.MetricQueriesPerCall(); !slices.Equal(got, []int{6}) {
		t.Errorf("second cycle queries per call = %v, want [6]", got)
	}

	// A restart on the same database resumes: no second backfill, no early peek.
	e.store = e.openStore()
	c2 := e.collector(withBackfill)
	must(t, c2.Discover(e.ctx))
	e.advance(5 * time.Minute)
	e.sim.ResetCallCounts()
	must(t, c2.CycleMetrics(e.ctx))
	if got := e.sim.MetricQueriesPerCall(); !slices.Equal(got, []int{6}) {
		t.Errorf("after restart queries per call = %v, want [6]", got)
	}
	if got := c2.opts.Backfill; got != 24*time.Hour {
		t.Errorf("Backfill = %v", got)
	}
}

func TestRestartDoesNotPeekEarly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 3)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	e.advance(20 * time.Second)

	e.store = e.openStore()
	c2 := e.collector(nil)
	must(t, c2.Discover(e.ctx))
	e.sim.ResetCallCounts()
	must(t, c2.PeekDue(e.ctx))
	if n := e.sim.CallCount("ReceiveMessage"); n != 0 {
		t.Errorf("restarted collector received %d times 20 s after the last pass, want 0", n)
	}
	e.advance(time.Minute)
	must(t, c2.PeekDue(e.ctx))
	if n := e.sim.CallCount("ReceiveMessage"); n == 0 {
		t.Errorf("restarted collector did not peek once the interval passed")
	}
}

func TestPackByQueue(t *testing.T) {
	t.Parallel()
	var queries []metricQuery
	queues := make([]*watchedQueue, 60)
	for i := range queues {
		queues[i] = &watchedQueue{id: int64(i)}
		for range 11 { // a FIFO queue's backfill
			queries = append(queries, metricQuery{queue: queues[i]})
		}
	}
	batches := packByQueue(queries)
	total := 0
	for _, b := range batches {
		if len(b) > maxQueriesPerCall {
			t.Errorf("batch of %d queries", len(b))
		}
		if len(b)%11 != 0 {
			t.Errorf("batch of %d queries splits a queue", len(b))
		}
		total += len(b)
	}
	if total != len(queries) || len(batches) != 2 {
		t.Errorf("%d batches of %d queries in all, want 2 of %d", len(batches), total, len(queries))
	}
}

func TestQuietQueueIsNotAskedForItsWholePastAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("quiet", nil)
	cw := &recordingCW{Client: e.cw}
	c := e.collector(func(o *Options) { o.Regions[0].CloudWatch = cw })
	must(t, c.Discover(e.ctx))
	for range 3 {
		e.advance(DefaultMetricsInterval)
		must(t, c.CycleMetrics(e.ctx))
	}
	for i, call := range cw.calls[1:] {
		window := aws.ToTime(call.EndTime).Sub(aws.ToTime(call.StartTime))
		if window > DefaultMetricsInterval+lateData {
			t.Errorf("cycle %d asked for %v, want at most the interval plus %v", i+2, window, lateData)
		}
	}
}

// TestNewQueueGetsPointsAtAnyInterval follows a queue from its first sight through a few
// metrics cycles, with the backfill on and a clock that is not on the minute: whatever the
// interval, the 60-s datapoints stored must add up to every message sent in the complete
// minutes asked so far. An interval under a minute once never asked for a new queue at all.
func TestNewQueueGetsPointsAtAnyInterval(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		interval time.Duration
		offset   time.Duration // of the first cycle past the minute
		cycles   int
	}{
		{"30 s interval", 30 * time.Second, 17 * time.Second, 8},
		{"1 min interval", time.Minute, 45 * time.Second, 5},
		{"5 min interval", 5 * time.Minute, 0, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			url, _ := e.createQueue("web-search", nil)
			e.advance(tt.offset)
			c := e.collector(func(o *Options) {
				o.MetricsInterval = tt.interval
				o.CountersInterval = tt.interval
				o.Backfill = 24 * time.Hour
			})
			must(t, c.Discover(e.ctx))
			var sentAt []time.Time
			for i := range tt.cycles {
				must(t, c.CycleMetrics(e.ctx))
				e.send(url, toolCallBody("search", i, "s"))
				sentAt = append(sentAt, e.clock.Now())
				e.advance(tt.interval)
			}
			must(t, c.CycleMetrics(e.ctx))
			q := e.queueNamed("web-search")
			if q.BackfilledAt.IsZero() {
				t.Error("BackfilledAt not set after the first cycle")
			}
			asked := e.clock.Now().Truncate(time.Minute)
			want := 0
			for _, at := range sentAt {
				if at.Before(asked) {
					want++
				}
			}
			points, err := e.store.MetricSeries(e.ctx, q.ID, "NumberOfMessagesSent", t0.Add(-time.Hour), e.clock.Now())
			must(t, err)
			got := 0.0
			for _, p := range points {
				if p.Period == metricPeriod {
					got += p.Value
				}
			}
			if want == 0 || got != float64(want) {
				t.Errorf("60-s NumberOfMessagesSent points add up to %v, want %d (points %+v)", got, want, points)
			}
		})
	}
}

// TestMetricsCadences follows a source queue holding messages, an empty one and a dead-letter
// queue through two hours of metrics cycles: the age of the oldest message is asked every cycle
// of the one holding messages only, the counters of both sources once an hour, as one-minute
// datapoints that add up to every message sent, and the dead-letter queue never.
func TestMetricsCadences(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	busy, _ := e.createPair("busy", "busy-dlq", 3)
	e.createQueue("idle", nil)
	cw := &recordingCW{Client: e.cw}
	c := e.collector(func(o *Options) { o.Regions[0].CloudWatch = cw })
	must(t, c.Discover(e.ctx))
	asked := map[string]int{} // queue/metric
	sent := 0
	for range 24 { // two hours of 5-minute cycles
		for range 5 {
			e.send(busy, toolCallBody("search", sent, "s"))
			sent++
			e.advance(time.Minute)
		}
		must(t, c.CycleAttributes(e.ctx))
		cw.mu.Lock()
		n := len(cw.calls)
		cw.mu.Unlock()
		must(t, c.CycleMetrics(e.ctx))
		cw.mu.Lock()
		for _, call := range cw.calls[n:] {
			for _, q := range call.MetricDataQueries {
				asked[aws.ToString(q.MetricStat.Metric.Dimensions[0].Value)+"/"+aws.ToString(q.MetricStat.Metric.MetricName)]++
			}
		}
		cw.mu.Unlock()
	}
	for key, want := range map[string]int{
		"busy/ApproximateAgeOfOldestMessage": 24, "busy/NumberOfMessagesSent": 2, "busy/SentMessageSize": 2,
		"idle/ApproximateAgeOfOldestMessage": 0, "idle/NumberOfMessagesSent": 2,
		"busy-dlq/NumberOfMessagesSent": 0, "busy-dlq/ApproximateAgeOfOldestMessage": 0,
	} {
		if asked[key] != want {
			t.Errorf("%s asked %d times in two hours, want %d (all: %v)", key, asked[key], want, asked)
		}
	}
	q := e.queueNamed("busy")
	points, err := e.store.MetricSeries(e.ctx, q.ID, "NumberOfMessagesSent", t0.Add(-time.Hour), e.clock.Now())
	must(t, err)
	got := 0.0
	for _, p := range points {
		if p.Period == metricPeriod {
			got += p.Value
		}
	}
	// The messages of the last hour's complete minutes up to the last counters ask are stored.
	if got < float64(sent)/2 || got > float64(sent) {
		t.Errorf("one-minute NumberOfMessagesSent points add up to %v of %d sent", got, sent)
	}
}
