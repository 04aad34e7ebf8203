package collector

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/store"
)

// telemetry is the collector's own Prometheus metrics.
type telemetry struct {
	cycles       *prometheus.CounterVec
	cycleSeconds *prometheus.HistogramVec
	awsCalls     *awscalls.Counter
	peekReceives *prometheus.CounterVec
	lastSuccess  *prometheus.GaugeVec

	// failing holds, per loop and region, whether the loop's newest cycle there failed: a loop
	// with nothing to do in a region is fine there only while its last real cycle was.
	mu      sync.Mutex
	failing map[[2]string]bool
}

// loopKinds are the loops whose cycles say, region by region, whether they read what they were
// for: each has a last-success series in every watched region while the collector runs.
var loopKinds = []string{store.RunDiscovery, store.RunAttributes, store.RunMetrics, store.RunPeek, store.RunMoveTasks, store.RunTopology}

// startLoops creates the last-success series of every loop in every region, at its stored last
// success (an earlier run's or another replica's) or 0 when it never succeeded: so that an alert
// on the series' age fires for a loop that never succeeds too, rather than finding no series.
func (t *telemetry) startLoops(regions []string, stored []store.LoopStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failing = make(map[[2]string]bool)
	last := make(map[[2]string]store.LoopStatus, len(stored))
	for _, l := range stored {
		last[[2]string{l.Loop, l.Region}] = l
	}
	for _, kind := range loopKinds {
		for _, region := range regions {
			l, ok := last[[2]string{kind, region}]
			value := 0.0
			if ok && !l.LastSuccessAt.IsZero() {
				value = unixSeconds(l.LastSuccessAt)
			}
			t.failing[[2]string{kind, region}] = ok && l.LastSuccessAt.Before(l.FinishedAt)
			t.lastSuccess.WithLabelValues(kind, region).Set(value)
		}
	}
}

// loopDone records a cycle's outcome in one region.
func (t *telemetry) loopDone(kind, region string, ok bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failing == nil {
		t.failing = make(map[[2]string]bool)
	}
	t.failing[[2]string{kind, region}] = !ok
	if ok {
		t.lastSuccess.WithLabelValues(kind, region).Set(unixSeconds(at))
	}
}

// loopIdle records that a loop checked what was due and had nothing to do in the regions not in
// busy: it read all it was for there, unless its last cycle there failed (then its failure
// stands until a cycle succeeds).
func (t *telemetry) loopIdle(kind string, regions []string, busy map[string]bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, region := range regions {
		if !busy[region] && !t.failing[[2]string{kind, region}] {
			t.lastSuccess.WithLabelValues(kind, region).Set(unixSeconds(at))
		}
	}
}

// stopLoops ends the last-success series when the collector stops: a replica that no longer
// collects has no loops to report, and only the one that does has the series.
func (t *telemetry) stopLoops() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lastSuccess.Reset()
}

// unixSeconds is a time as Prometheus timestamps are written, in seconds.
func unixSeconds(at time.Time) float64 { return float64(at.UnixMilli()) / 1000 }

// newTelemetry builds the metrics and registers them with reg when it is not nil. A metric
// already registered by an earlier collector on the same registry (a restart in tests, say) is
// reused rather than refused.
func newTelemetry(reg prometheus.Registerer) (*telemetry, error) {
	t := &telemetry{
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_collector_cycles_total",
			Help: "Collector cycles run, by kind (discovery, attributes, metrics, peek, movetasks, topology, prune).",
		}, []string{"kind"}),
		cycleSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "toolq_collector_cycle_seconds",
			Help:    "Wall time of collector cycles, by kind.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"kind"}),
		peekReceives: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_peek_receives_total",
			Help: "ReceiveMessage calls the collector's peeks made, by queue and region (account/region with several accounts): each raises the receive count of what it returns. A gone queue's series ends.",
		}, []string{"queue", "region"}),
	}
	t.lastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "toolq_collector_last_success_timestamp_seconds",
		Help: "When a loop's cycle last read what it was for in a region (Unix seconds): its listing succeeded, not every queue and not every call failed.",
	}, []string{"loop", "region"})
	var err error
	if t.awsCalls, err = awscalls.NewCounter(reg); err != nil {
		return nil, err
	}
	if reg == nil {
		return t, nil
	}
	t.cycles, err = register(reg, t.cycles)
	if err != nil {
		return nil, err
	}
	t.cycleSeconds, err = register(reg, t.cycleSeconds)
	if err != nil {
		return nil, err
	}
	t.peekReceives, err = register(reg, t.peekReceives)
	if err != nil {
		return nil, err
	}
	t.lastSuccess, err = register(reg, t.lastSuccess)
	if err != nil {
		return nil, err
	}
	return t, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("collector: register metrics: %w", err)
}
