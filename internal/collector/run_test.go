package collector

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// TestRunStartsEveryLoopAtOnce checks that Run does each loop's first cycle at start-up (the
// dead-letter sample arrives long before any interval) and returns once its context ends.
func TestRunStartsEveryLoopAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 2)
	bus := events.NewBus()
	got, unsubscribe := bus.Subscribe(64)
	defer unsubscribe()
	reg := prometheus.NewRegistry()
	c := e.collector(func(o *Options) {
		o.Publisher = bus
		o.Registerer = reg
	})
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	want := map[events.Kind]bool{events.QueuesChanged: true, events.SampleTaken: true}
	deadline := time.After(30 * time.Second)
	for len(want) > 0 {
		select {
		case ev := <-got:
			delete(want, ev.Kind)
		case <-deadline:
			t.Fatalf("no %v event within 30 s of start", want)
		}
	}
	// Discovery's QueuesChanged can come before the attribute cycle has finished: wait for each
	// loop's first finished run, then stop.
	for _, kind := range []string{store.RunDiscovery, store.RunAttributes, store.RunPeek} {
		for {
			if _, err := e.store.LatestRun(e.ctx, kind); err == nil {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("no finished %s run within 30 s of start", kind)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run = %v, want nil after cancel", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if n := counter(t, reg, "toolq_peek_receives_total", "queue", "web-search-dlq"); n < 1 {
		t.Errorf("toolq_peek_receives_total{queue=web-search-dlq} = %v", n)
	}
	if n := counter(t, reg, "toolq_aws_calls_total", "operation", "GetQueueAttributes"); n < 1 {
		t.Errorf("toolq_aws_calls_total{operation=GetQueueAttributes} = %v", n)
	}
	if n := counter(t, reg, "toolq_collector_cycles_total", "kind", "attributes"); n < 1 {
		t.Errorf("toolq_collector_cycles_total{kind=attributes} = %v", n)
	}
	// A second collector on the same registry (a restart in-process) shares the metrics.
	if _, err := New(Options{Regions: c.opts.Regions, Store: e.store, Registerer: reg}); err != nil {
		t.Errorf("New with a registry already holding the metrics: %v", err)
	}
}

func TestNewValidatesOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name string
		opts Options
	}{
		{"no region", Options{Store: e.store}},
		{"no store", Options{Regions: []Region{{Name: "us-east-1", SQS: e.sqs}}}},
		{"no SQS client", Options{Store: e.store, Regions: []Region{{Name: "us-east-1"}}}},
		{"region twice", Options{Store: e.store, Regions: []Region{{Name: "a", SQS: e.sqs}, {Name: "a", SQS: e.sqs}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.opts); err == nil {
				t.Error("New succeeded")
			}
		})
	}
	c := e.collector(nil)
	if c.opts.AttributesInterval != DefaultAttributesInterval || c.opts.MoveTasksInterval != DefaultAttributesInterval ||
		c.opts.Peek.MaxMessages != DefaultPeekMaxMessages || c.opts.ToolFields.SessionID != "sessionId" || c.opts.Concurrency != DefaultConcurrency {
		t.Errorf("defaults not applied: %+v", c.opts)
	}
}

// TestNewFillsDocumentedDefaults pins each zero option to the default its doc comment names, and
// checks that a set option, a negative Backfill, a MoveTasksInterval that follows a changed
// discovery interval and cadences never faster than the loops' own are kept.
func TestNewFillsDocumentedDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := bareCollector(t, e, nil)
	tests := []struct {
		name      string
		got, want any
	}{
		{"DiscoveryInterval", c.opts.DiscoveryInterval, DefaultDiscoveryInterval},
		{"AttributesInterval", c.opts.AttributesInterval, DefaultAttributesInterval},
		{"QuietAttributesInterval", c.opts.QuietAttributesInterval, DefaultQuietAttributesInterval},
		{"MetricsInterval", c.opts.MetricsInterval, DefaultMetricsInterval},
		{"CountersInterval", c.opts.CountersInterval, DefaultCountersInterval},
		{"PeekDeadLetterInterval", c.opts.PeekDeadLetterInterval, DefaultPeekDeadLetterInterval},
		{"PeekSourceInterval", c.opts.PeekSourceInterval, DefaultPeekSourceInterval},
		{"MoveTasksInterval", c.opts.MoveTasksInterval, DefaultDiscoveryInterval},
		{"MoveTasksRunningInterval", c.opts.MoveTasksRunningInterval, DefaultMoveTasksRunningInterval},
		{"PruneInterval", c.opts.PruneInterval, DefaultPruneInterval},
		{"Backfill", c.opts.Backfill, DefaultBackfill},
		{"Concurrency", c.opts.Concurrency, DefaultConcurrency},
		{"Peek.MaxMessages", c.opts.Peek.MaxMessages, DefaultPeekMaxMessages},
		{"Peek.VisibilityTimeout", c.opts.Peek.VisibilityTimeout, DefaultPeekVisibilityTimeout},
		{"Peek.BodyCap", c.opts.Peek.BodyCap, DefaultPeekBodyCap},
		{"ToolFields.ToolName", c.opts.ToolFields.ToolName, "toolName"},
		{"ToolFields.ToolCallID", c.opts.ToolFields.ToolCallID, "toolCallId"},
		{"ToolFields.SessionID", c.opts.ToolFields.SessionID, "sessionId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("default %s = %v, want %v", tt.name, tt.got, tt.want)
			}
		})
	}
	set := bareCollector(t, e, func(o *Options) {
		o.DiscoveryInterval = 30 * time.Second
		o.AttributesInterval = 2 * time.Minute
		o.MetricsInterval = 2 * time.Hour
		o.Backfill = -1
		o.Peek.VisibilityTimeout = time.Millisecond
	})
	if set.opts.MoveTasksInterval != 30*time.Second || set.opts.Backfill != -1 || set.opts.Peek.VisibilityTimeout != time.Second {
		t.Errorf("set options: move tasks every %v, backfill %v, peek visibility %v; want 30s, -1ns, 1s",
			set.opts.MoveTasksInterval, set.opts.Backfill, set.opts.Peek.VisibilityTimeout)
	}
	if set.opts.QuietAttributesInterval != 2*time.Minute || set.opts.CountersInterval != 2*time.Hour {
		t.Errorf("quiet queues every %v, counters every %v; want no faster than attributes (2m) and metrics (2h)",
			set.opts.QuietAttributesInterval, set.opts.CountersInterval)
	}
}

// bareCollector builds a collector over e's simulator from bare options (no test defaults), changed by mod.
func bareCollector(t *testing.T, e *env, mod func(*Options)) *Collector {
	t.Helper()
	opts := Options{Regions: []Region{{Name: "us-east-1", SQS: e.sqs}}, Store: e.store}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	must(t, err)
	return c
}

func TestPruneRollsUpOldSamples(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("web-search", nil)
	c := e.collector(func(o *Options) {
		o.Retention = store.Retention{RawFor: time.Hour, RollupPeriod: 5 * time.Minute, RollupFor: 30 * 24 * time.Hour, SamplesFor: time.Hour, RunsFor: 24 * time.Hour}
	})
	must(t, c.Discover(e.ctx))
	for range 40 { // ten minutes of 15-s samples
		must(t, c.CycleAttributes(e.ctx))
		e.advance(15 * time.Second)
	}
	q := e.queueNamed("web-search")
	before, err := e.store.AttributeSeries(e.ctx, q.ID, t0, t0.Add(time.Hour))
	must(t, err)
	e.advance(3 * time.Hour)
	must(t, c.Prune(e.ctx))
	after, err := e.store.AttributeSeries(e.ctx, q.ID, t0, t0.Add(time.Hour))
	must(t, err)
	if len(after) >= len(before) || len(after) == 0 {
		t.Fatalf("samples %d before prune, %d after; want fewer, rolled up", len(before), len(after))
	}
	for _, s := range after {
		if s.Resolution != 300 {
			t.Errorf("sample after prune %+v, want a 5-minute roll-up", s)
		}
	}
}

// counter sums the series of a counter that carry label=value, as /metrics would show them.
func counter(t *testing.T, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	must(t, err)
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// TestRestartWhileEndpointDown restarts the collector on its database while every AWS call
// fails: it must resume watching the queues it stored (with the dead-letter queue of a selected
// source, selected or not), record an error against each instead of watching nothing, and
// sample them all again as soon as the endpoint answers, without waiting for a discovery.
func TestRestartWhileEndpointDown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		choose func(*Options)
		want   []string
	}{
		{"every queue", nil, []string{"notifications", "web-search", "web-search-dlq"}},
		{"a source by name", func(o *Options) { o.Queues = []string{"web-search"} }, []string{"web-search", "web-search-dlq"}},
		{"a prefix", func(o *Options) { o.QueuePrefixes = []string{"notif"} }, []string{"notifications"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.createPair("web-search", "web-search-dlq", 3)
			e.createQueue("notifications", nil)
			must(t, e.collector(tt.choose).Discover(e.ctx))

			e.advance(time.Minute)
			e.store = e.openStore()
			e.sim.SetFault("*", sqsim.Fault{ErrorRate: 1})
			c := e.collector(tt.choose)
			must(t, c.Discover(e.ctx))
			var names []string
			for _, q := range c.watched() {
				names = append(names, q.name)
			}
			if !slices.Equal(names, tt.want) {
				t.Fatalf("watched after a failed discovery = %v, want %v from the store", names, tt.want)
			}
			must(t, c.CycleAttributes(e.ctx))
			for _, name := range tt.want {
				q := e.queueNamed(name)
				if errs := e.errors(q.ID); !slices.ContainsFunc(errs, func(ce store.CollectorError) bool { return ce.Operation == "GetQueueAttributes" }) {
					t.Errorf("%s: errors %+v, want a failed GetQueueAttributes", name, errs)
				}
			}

			e.sim.SetFault("*", sqsim.Fault{})
			e.advance(15 * time.Second)
			must(t, c.CycleAttributes(e.ctx))
			latest, err := e.store.LatestAttributeSamples(e.ctx)
			must(t, err)
			for _, name := range tt.want {
				if s := latest[e.queueNamed(name).ID]; !s.At.Equal(e.clock.Now()) {
					t.Errorf("%s: newest sample at %v, want %v once the endpoint answers", name, s.At, e.clock.Now())
				}
			}
		})
	}
}

// TestPeekReceivesSeriesEndsWithItsQueue: the receives a peek spends count under the queue's name
// and region, and a queue that is gone leaves /metrics, so that a fleet whose queues come and go
// does not grow the scrape without end.
func TestPeekReceivesSeriesEndsWithItsQueue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, dlqURL := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 3)
	reg := prometheus.NewRegistry()
	c := e.collector(func(o *Options) { o.Registerer = reg })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	series := func() map[string]float64 {
		families, err := reg.Gather()
		must(t, err)
		out := map[string]float64{}
		for _, f := range families {
			if f.GetName() != "toolq_peek_receives_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				out[labels["queue"]+"@"+labels["region"]] = m.GetCounter().GetValue()
			}
		}
		return out
	}
	if n := series()["web-search-dlq@us-east-1"]; n < 1 {
		t.Fatalf("toolq_peek_receives_total = %v, want web-search-dlq in us-east-1 counted", series())
	}
	_, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(dlqURL)})
	must(t, err)
	must(t, c.CycleAttributes(e.ctx))
	if !e.queueNamed("web-search-dlq").Gone() {
		t.Fatal("web-search-dlq not gone after the attribute cycle found it missing")
	}
	if got := series(); len(got) != 0 {
		t.Errorf("toolq_peek_receives_total after the queue went = %v, want no series", got)
	}
}

// TestRunForgetsUnwatchedScopes: a database that watched another region (or the same region
// before --account) keeps that scope's last statuses; the collector that no longer watches it
// forgets them at start, so that /status and the sight do not show it, least of all as a region
// toolq cannot see, while its own scope's statuses stay.
func TestRunForgetsUnwatchedScopes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("web-search", nil)
	old := e.clock.Now().Add(-24 * time.Hour)
	must(t, e.store.SaveOperationStatuses(e.ctx, []store.OperationStatus{
		{Region: "eu-west-9", Operation: "ListQueues", LastFailureAt: old, FailureCode: "AccessDenied", FailuresInRow: 3},
		{Region: "us-east-1", Operation: "ListQueues", LastSuccessAt: old},
	}))
	must(t, e.store.SaveLoopStatus(e.ctx, store.LoopStatus{Loop: store.RunDiscovery, Region: "eu-west-9", FinishedAt: old, Calls: 1, Failures: 1}))
	c := e.collector(nil)
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	for {
		if _, err := e.store.LatestRun(e.ctx, store.RunDiscovery); err == nil {
			break
		}
		select {
		case <-deadline:
			t.Fatal("no discovery within 30 s of start")
		case <-time.After(10 * time.Millisecond):
		}
	}
	cancel()
	<-done
	ops, err := e.store.OperationStatuses(e.ctx)
	must(t, err)
	loops, err := e.store.LoopStatuses(e.ctx)
	must(t, err)
	for _, o := range ops {
		if o.Region != "us-east-1" {
			t.Errorf("operation status of %s kept: %+v", o.Region, o)
		}
	}
	for _, l := range loops {
		if l.Region != "us-east-1" {
			t.Errorf("loop status of %s kept: %+v", l.Region, l)
		}
	}
	if len(ops) == 0 {
		t.Error("the watched region's statuses went too")
	}
}

// lastSuccess returns the toolq_collector_last_success_timestamp_seconds series by loop (of
// region us-east-1).
func lastSuccess(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	must(t, err)
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "toolq_collector_last_success_timestamp_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["region"] == "us-east-1" {
				out[labels["loop"]] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}

// TestEveryLoopHasALastSuccessSeries: while Run runs, every loop has its last-success series in
// every region from the start, 0 for a loop that never succeeded (GetMetricData refused here),
// so that the alert docs/api.md suggests fires for it; a loop with nothing due (no move task to
// poll) is fine, unless its last cycle failed; the series end with Run. A restart starts each
// series at its stored last success.
func TestEveryLoopHasALastSuccessSeries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 2)
	e.send(srcURL, toolCallBody("search", 1, "s1")) // the age of its messages is asked of CloudWatch
	e.sim.SetFault("GetMetricData", sqsim.Fault{ErrorRate: 1})
	reg := prometheus.NewRegistry()
	c := e.collector(func(o *Options) { o.Registerer = reg })
	ctx, cancel := context.WithCancel(e.ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.After(30 * time.Second)
	for _, kind := range loopKinds {
		for {
			if _, err := e.store.LatestFinishedRun(e.ctx, kind); err == nil {
				break
			}
			select {
			case <-deadline:
				t.Fatalf("no finished %s run within 30 s of start", kind)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	got := lastSuccess(t, reg)
	start := unixSeconds(t0)
	for _, kind := range loopKinds {
		v, ok := got[kind]
		switch {
		case !ok:
			t.Errorf("no last-success series for the %s loop", kind)
		case kind == store.RunMetrics && v != 0:
			t.Errorf("metrics never succeeded, but its series says %v", v)
		case kind != store.RunMetrics && v < start:
			t.Errorf("%s succeeded, but its series says %v", kind, v)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := lastSuccess(t, reg); len(got) != 0 {
		t.Errorf("series after Run returned: %v", got)
	}

	// A new process on the same database: each series starts where the store left it, the
	// failing loop at 0 and never taken for fine while it has nothing to do.
	reg = prometheus.NewRegistry()
	c = e.collector(func(o *Options) { o.Registerer = reg })
	c.startLoops(e.ctx)
	stored, err := e.store.LoopStatuses(e.ctx)
	must(t, err)
	got = lastSuccess(t, reg)
	for _, l := range stored {
		if want := unixSeconds(l.LastSuccessAt); !l.LastSuccessAt.IsZero() && got[l.Loop] != want {
			t.Errorf("%s after a restart: %v, want the stored %v", l.Loop, got[l.Loop], want)
		}
	}
	if got[store.RunMetrics] != 0 {
		t.Errorf("metrics after a restart: %v, want 0", got[store.RunMetrics])
	}
	c.tel.loopIdle(store.RunMetrics, c.regionKeys(), nil, e.clock.Now())
	if got := lastSuccess(t, reg)[store.RunMetrics]; got != 0 {
		t.Errorf("a failing loop with nothing due was taken for fine: %v", got)
	}
}
