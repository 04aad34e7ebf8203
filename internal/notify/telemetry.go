package notify

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// telemetry is the notifier's Prometheus metrics. Target names come from the configuration, so
// their labels are bounded.
type telemetry struct {
	alerts   *prometheus.CounterVec
	attempts *prometheus.CounterVec
	sent     *prometheus.CounterVec
}

func newTelemetry(reg prometheus.Registerer, targets []Target, st *store.Store) (*telemetry, error) {
	t := &telemetry{
		alerts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_alerts_total",
			Help: "Alerts raised (what notifications and GET /api/v1/events tell), by kind.",
		}, []string{"kind"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_notification_attempts_total",
			Help: "Attempts to send a notification, by target and outcome (sent, retry, failed).",
		}, []string{"target", "outcome"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_notifications_total",
			Help: "Notifications that reached their target (result sent) or were given up on (result failed), by target.",
		}, []string{"target", "result"}),
	}
	for _, k := range views.AlertKinds {
		t.alerts.WithLabelValues(string(k))
	}
	for _, tg := range targets {
		for _, o := range []string{store.DeliverySent, store.DeliveryRetry, store.DeliveryFailed} {
			t.attempts.WithLabelValues(tg.Name, o)
		}
		t.sent.WithLabelValues(tg.Name, "sent")
		t.sent.WithLabelValues(tg.Name, "failed")
	}
	if reg == nil {
		return t, nil
	}
	for _, c := range []prometheus.Collector{t.alerts, t.attempts, t.sent, &pendingCollector{store: st}} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("notify: register metrics: %w", err)
		}
	}
	return t, nil
}

func (t *telemetry) raised(alerts []views.Alert) {
	for _, a := range alerts {
		t.alerts.WithLabelValues(string(a.Kind)).Inc()
	}
}

func (t *telemetry) attempt(target, outcome string) {
	t.attempts.WithLabelValues(target, outcome).Inc()
	switch outcome {
	case store.DeliverySent:
		t.sent.WithLabelValues(target, "sent").Inc()
	case store.DeliveryFailed:
		t.sent.WithLabelValues(target, "failed").Inc()
	}
}

var descPending = prometheus.NewDesc("toolq_notifications_pending",
	"Notifications waiting to be sent or retried, by target, read from the outbox at scrape time.", []string{"target"}, nil)

// pendingCollector reads the outbox's pending messages at scrape time.
type pendingCollector struct{ store *store.Store }

// Describe implements prometheus.Collector.
func (c *pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descPending }

// Collect implements prometheus.Collector.
func (c *pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stats, err := c.store.NotifyTargetStats(ctx)
	if err != nil {
		return
	}
	for name, st := range stats {
		ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(st.Pending), name)
	}
}
