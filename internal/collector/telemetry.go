package collector

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/awscalls"
)

// telemetry is the collector's own Prometheus metrics.
type telemetry struct {
	cycles       *prometheus.CounterVec
	cycleSeconds *prometheus.HistogramVec
	awsCalls     *awscalls.Counter
	peekReceives *prometheus.CounterVec
	lastSuccess  *prometheus.GaugeVec
}

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
