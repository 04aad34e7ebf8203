package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/views"
)

// serverMetrics are the server's own series on the /metrics registry.
type serverMetrics struct {
	requests *prometheus.CounterVec
}

// newServerMetrics registers the server's collectors: requests by route, the websocket clients,
// and the per-queue gauges read from the views at scrape time.
func newServerMetrics(s *Server) (*serverMetrics, error) {
	m := &serverMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and status code.",
		}, []string{"route", "method", "code"}),
	}
	clients := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "toolq_websocket_clients",
		Help: "Websocket clients connected to the live pages.",
	}, func() float64 { return float64(s.hub.Clients()) })
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "toolq_build_info",
		Help:        "Always 1: the version, commit and Go version of the running binary.",
		ConstLabels: prometheus.Labels{"version": s.opts.Version, "commit": s.opts.Commit, "goversion": runtime.Version()},
	})
	build.Set(1)
	for _, c := range []prometheus.Collector{m.requests, clients, build,
		&queueCollector{views: s.opts.Views, log: s.log.Warn, timeout: s.opts.ScrapeTimeout},
		&sightCollector{views: s.opts.Views, log: s.log.Warn, timeout: s.opts.ScrapeTimeout},
		&triageCollector{views: s.opts.Views, log: s.log.Warn, timeout: s.opts.ScrapeTimeout}} {
		if err := s.opts.Metrics.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return nil, fmt.Errorf("server: metrics already registered (one server per registry): %w", err)
			}
			return nil, fmt.Errorf("server: register metrics: %w", err)
		}
	}
	return m, nil
}

// observeRequest counts one answered request. route is the pattern (bounded), not the path;
// method is the client's text, so any method toolq does not serve counts as "other": every new
// label value is a series kept for the life of the process.
func (m *serverMetrics) observeRequest(route, method string, code int) {
	if route == "" {
		route = "unmatched"
	}
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions:
	default:
		method = "other"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
}

// queueCollector exports each watched queue's depth as the collector last stored it. It reads
// the views at scrape time, so the values are exactly what the pages show and nothing is cached.
type queueCollector struct {
	views   *views.Service
	log     func(msg string, args ...any)
	timeout time.Duration
}

// defaultScrapeTimeout bounds the views queries of one scrape (Options.ScrapeTimeout).
const defaultScrapeTimeout = 5 * time.Second

var (
	labels        = []string{"queue", "region"}
	descVisible   = prometheus.NewDesc("toolq_queue_visible_messages", "Visible messages (ApproximateNumberOfMessages) at the last sample.", labels, nil)
	descInFlight  = prometheus.NewDesc("toolq_queue_inflight_messages", "In-flight messages (ApproximateNumberOfMessagesNotVisible) at the last sample.", labels, nil)
	descDelayed   = prometheus.NewDesc("toolq_queue_delayed_messages", "Delayed messages at the last sample.", labels, nil)
	descOldestAge = prometheus.NewDesc("toolq_queue_oldest_message_age_seconds", "Age of the oldest message as the pages show it: CloudWatch's ApproximateAgeOfOldestMessage for a working queue, the newest sample's oldest message for a dead-letter queue (CloudWatch skips messages received three times or more); absent for an empty queue.", labels, nil)
	descDLQDepth  = prometheus.NewDesc("toolq_dlq_messages", "Visible messages of a dead-letter queue.", labels, nil)
	descHealth    = prometheus.NewDesc("toolq_queue_health", "Queue health: 0 ok, 1 unknown (a rule could not be checked), 2 warning, 3 critical.", labels, nil)
	descBlocked   = prometheus.NewDesc("toolq_queue_blocked_groups", "FIFO message groups (sessions) the newest sample of an opted-in source queue found blocked behind a failing head message.", labels, nil)
	descScrapeErr = prometheus.NewDesc("toolq_queue_metrics_error", "1 when the queue gauges could not be read at this scrape.", nil, nil)
	// The labels are bounded: rule ids are a fixed list (views.AdviceRules), queues the watched ones.
	descAdvice = prometheus.NewDesc("toolq_advice", "1 for each advisor rule that fires on a queue (GET /api/v1/advice says what and how to fix it); absent when it holds or is turned off.",
		[]string{"rule", "queue", "region"}, nil)
)

// Describe implements prometheus.Collector.
func (q *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVisible, descInFlight, descDelayed, descOldestAge, descDLQDepth, descHealth, descBlocked, descScrapeErr, descAdvice} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (q *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), q.timeout)
	defer cancel()
	queues, err := q.views.Queues(ctx, views.QueueQuery{})
	if err != nil {
		// A failed read must not fail the whole scrape: the collector's own metrics share it.
		q.log("metrics: read queues", "err", err)
		ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descScrapeErr, prometheus.GaugeValue, 0)
	for _, qs := range queues {
		if qs.Gone {
			continue
		}
		lv := []string{qs.Name, qs.Region}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
		}
		gauge(descVisible, float64(qs.Visible))
		gauge(descInFlight, float64(qs.InFlight))
		gauge(descDelayed, float64(qs.Delayed))
		if qs.OldestMessageAgeSeconds != nil {
			gauge(descOldestAge, *qs.OldestMessageAgeSeconds)
		}
		if qs.IsDeadLetterQueue {
			gauge(descDLQDepth, float64(qs.Visible))
		}
		gauge(descHealth, healthValue(qs.Health.Status))
		for _, a := range qs.Advice {
			ch <- prometheus.MustNewConstMetric(descAdvice, prometheus.GaugeValue, 1, a.Rule, qs.Name, qs.Region)
		}
		if qs.FIFO && !qs.IsDeadLetterQueue {
			gauge(descBlocked, float64(qs.BlockedGroups))
		}
	}
}

// healthValue maps a health status to a number an alert rule can compare: above 0 is not fine.
func healthValue(status views.HealthStatus) float64 {
	switch status {
	case views.HealthCritical:
		return 3
	case views.HealthWarning:
		return 2
	case views.HealthUnknown:
		return 1
	}
	return 0
}

// sightCollector exports what toolq can see of each region, read from the views at scrape time.
type sightCollector struct {
	views   *views.Service
	log     func(msg string, args ...any)
	timeout time.Duration
}

var (
	descRegionVisible = prometheus.NewDesc("toolq_region_visible",
		"1 when toolq can see the region, 0 when it cannot (its queues cannot be listed, or none could be read in the last cycle).", []string{"region"}, nil)
	descOperationFailing = prometheus.NewDesc("toolq_aws_operation_failing",
		"1 when the newest call of an AWS operation in a region failed (see /api/v1/status for why).", []string{"region", "operation"}, nil)
	descSightErr = prometheus.NewDesc("toolq_sight_metrics_error", "1 when the region gauges could not be read at this scrape.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *sightCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descRegionVisible, descOperationFailing, descSightErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *sightCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.views.Status(ctx)
	if err != nil {
		c.log("metrics: read status", "err", err)
		ch <- prometheus.MustNewConstMetric(descSightErr, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descSightErr, prometheus.GaugeValue, 0)
	for _, r := range st.Regions {
		visible := 1.0
		if r.Blind {
			visible = 0
		}
		ch <- prometheus.MustNewConstMetric(descRegionVisible, prometheus.GaugeValue, visible, r.Region)
		for _, op := range r.Operations {
			if !op.Called {
				continue
			}
			failing := 0.0
			if op.Failing {
				failing = 1
			}
			ch <- prometheus.MustNewConstMetric(descOperationFailing, prometheus.GaugeValue, failing, r.Region, op.Operation)
		}
	}
}

// triageTopN bounds the tools and the values of each dimension exported per dead-letter queue:
// tool names and dimension values come from messages, and every label value is a series kept for
// the life of the process. The rest are summed under otherLabel.
const triageTopN = 10

// The label values of the tool and dimension series that stand for no single value.
const (
	otherLabel = "(other)" // the messages of every value beyond the top N
	noneLabel  = "(none)"  // the messages without a tool name
)

// triageCollector exports what the dead-letter queues' newest samples hold by tool and by
// dimension, and the running move tasks' progress, read from the views at scrape time.
type triageCollector struct {
	views   *views.Service
	log     func(msg string, args ...any)
	timeout time.Duration
}

var (
	descByTool = prometheus.NewDesc("toolq_dlq_sampled_messages",
		"Messages of a dead-letter queue's newest sample by tool name: the 10 most frequent, the rest as tool=\"(other)\", those without a tool name as \"(none)\".",
		[]string{"queue", "region", "tool"}, nil)
	descByDimension = prometheus.NewDesc("toolq_dlq_sampled_messages_by_dimension",
		"Messages of a dead-letter queue's newest sample by the value of a dimension (--dimension, such as mcpServer): the 10 most frequent values, the rest as value=\"(other)\".",
		[]string{"queue", "region", "dimension", "value"}, nil)
	descMoved = prometheus.NewDesc("toolq_redrive_moved_messages",
		"Messages the running move task of a dead-letter queue has moved (ApproximateNumberOfMessagesMoved); absent while none runs.", labels, nil)
	descToMove = prometheus.NewDesc("toolq_redrive_to_move_messages",
		"Messages the running move task of a dead-letter queue set out to move (ApproximateNumberOfMessagesToMove); absent while none runs.", labels, nil)
	descTriageErr = prometheus.NewDesc("toolq_triage_metrics_error", "1 when the sample and redrive gauges could not be read at this scrape.", nil, nil)
)

// Describe implements prometheus.Collector.
func (c *triageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descByTool, descByDimension, descMoved, descToMove, descTriageErr} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *triageCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	breakdowns, err := c.views.SampleBreakdowns(ctx, triageTopN)
	var redrives []views.QueueRedrive
	if err == nil {
		var snap *views.Snapshot
		if snap, err = c.views.Snapshot(ctx); err == nil {
			redrives = snap.RunningRedrives()
		}
	}
	if err != nil {
		c.log("metrics: read samples and redrives", "err", err)
		ch <- prometheus.MustNewConstMetric(descTriageErr, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(descTriageErr, prometheus.GaugeValue, 0)
	for _, b := range breakdowns {
		// A tool may well be called "(other)": its count joins the others' rather than making a
		// second series of the same labels, which would fail the whole scrape.
		tools := map[string]int{}
		for _, t := range b.Tools {
			tools[cmp.Or(t.Value, noneLabel)] += t.Count
		}
		tools[otherLabel] += b.OtherTools
		for tool, n := range tools {
			if n > 0 {
				ch <- prometheus.MustNewConstMetric(descByTool, prometheus.GaugeValue, float64(n), b.Queue, b.Region, tool)
			}
		}
		for _, d := range b.Dimensions {
			values := map[string]int{otherLabel: d.Others}
			for _, v := range d.Values {
				values[v.Value] += v.Count
			}
			for value, n := range values {
				if n > 0 {
					ch <- prometheus.MustNewConstMetric(descByDimension, prometheus.GaugeValue, float64(n), b.Queue, b.Region, d.Name, value)
				}
			}
		}
	}
	for _, r := range redrives {
		ch <- prometheus.MustNewConstMetric(descMoved, prometheus.GaugeValue, float64(r.Moved), r.Queue, r.Region)
		ch <- prometheus.MustNewConstMetric(descToMove, prometheus.GaugeValue, float64(r.ToMove), r.Queue, r.Region)
	}
}
