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
		&snapshotCollector{views: s.opts.Views, log: s.log.Warn, timeout: s.opts.ScrapeTimeout}} {
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

// snapshotCollector exports what the views' current snapshot shows, read at scrape time: each
// watched queue's depth, age, health, advice and blocked sessions, what toolq can see of each
// region, what each dead-letter queue's newest sample holds by tool and dimension, and the
// running redrives. One snapshot for all: the series say what the pages say.
type snapshotCollector struct {
	views   *views.Service
	log     func(msg string, args ...any)
	timeout time.Duration
}

// defaultScrapeTimeout bounds the views queries of one scrape (Options.ScrapeTimeout).
const defaultScrapeTimeout = 5 * time.Second

// The label values of the tool and dimension series that stand for no single value.
const (
	otherLabel = "(other)" // the messages of every value beyond the top views.BreakdownTop
	noneLabel  = "(none)"  // the messages without a tool name
)

var (
	// A queue's name and region do not name it alone: toolq watches several accounts (--account),
	// and tool-calls in us-east-1 of staging and of prod are two queues. Their series must differ
	// by account, or the registry refuses the whole scrape for the duplicate.
	labels        = []string{"queue", "region", "account"}
	descVisible   = prometheus.NewDesc("toolq_queue_visible_messages", "Visible messages (ApproximateNumberOfMessages) at the last sample.", labels, nil)
	descInFlight  = prometheus.NewDesc("toolq_queue_inflight_messages", "In-flight messages (ApproximateNumberOfMessagesNotVisible) at the last sample.", labels, nil)
	descDelayed   = prometheus.NewDesc("toolq_queue_delayed_messages", "Delayed messages at the last sample.", labels, nil)
	descOldestAge = prometheus.NewDesc("toolq_queue_oldest_message_age_seconds", "Age of the oldest message as the pages show it: CloudWatch's ApproximateAgeOfOldestMessage for a working queue, the newest sample's oldest message for a dead-letter queue (CloudWatch skips messages received three times or more); absent for an empty queue.", labels, nil)
	descDLQDepth  = prometheus.NewDesc("toolq_dlq_messages", "Visible messages of a dead-letter queue.", labels, nil)
	descHealth    = prometheus.NewDesc("toolq_queue_health", "Queue health: 0 ok, 1 unknown (a rule could not be checked), 2 warning, 3 critical.", labels, nil)
	descBlocked   = prometheus.NewDesc("toolq_queue_blocked_groups", "FIFO message groups (sessions) the newest sample of an opted-in source queue found blocked behind a failing head message.", labels, nil)
	descNearMax   = prometheus.NewDesc("toolq_queue_near_max_receive_messages", "Messages the newest sample of a queue with a redrive policy found with at most one delivery left before maxReceiveCount sends them to its dead-letter queue; 0 without a sample.", labels, nil)
	descScrapeErr = prometheus.NewDesc("toolq_queue_metrics_error", "1 when the queue gauges could not be read at this scrape.", nil, nil)
	// The labels are bounded: rule ids are a fixed list (views.AdviceRules), queues the watched ones.
	descAdvice = prometheus.NewDesc("toolq_advice", "1 for each advisor rule that fires on a queue (GET /api/v1/advice says what and how to fix it); absent when it holds or is turned off.",
		[]string{"rule", "queue", "region", "account"}, nil)

	descRegionVisible = prometheus.NewDesc("toolq_region_visible",
		"1 when toolq can see the region, 0 when it cannot (its queues cannot be listed, or none could be read in the last cycle).", []string{"region"}, nil)
	descOperationFailing = prometheus.NewDesc("toolq_aws_operation_failing",
		"1 when the newest call of an AWS operation in a region failed (see /api/v1/status for why).", []string{"region", "operation"}, nil)
	descSightErr = prometheus.NewDesc("toolq_sight_metrics_error", "1 when the region gauges could not be read at this scrape.", nil, nil)

	descByTool = prometheus.NewDesc("toolq_dlq_sampled_messages",
		"Messages of a dead-letter queue's newest sample by tool name: the 10 most frequent, the rest as tool=\"(other)\", those without a tool name as \"(none)\".",
		[]string{"queue", "region", "account", "tool"}, nil)
	descByDimension = prometheus.NewDesc("toolq_dlq_sampled_messages_by_dimension",
		"Messages of a dead-letter queue's newest sample by the value of a dimension (--dimension, such as mcpServer): the 10 most frequent values, the rest as value=\"(other)\".",
		[]string{"queue", "region", "account", "dimension", "value"}, nil)
	descMoved = prometheus.NewDesc("toolq_redrive_moved_messages",
		"Messages the running move task of a dead-letter queue has moved (ApproximateNumberOfMessagesMoved); absent while none runs.", labels, nil)
	descToMove = prometheus.NewDesc("toolq_redrive_to_move_messages",
		"Messages the running move task of a dead-letter queue set out to move (ApproximateNumberOfMessagesToMove); absent while none runs.", labels, nil)
	// What came back of each dead-letter queue's newest redrive while its window is open
	// (views.Summary.RedriveOutcomes): the same numbers as its page and the summary.
	descOutcomeRemembered = prometheus.NewDesc("toolq_redrive_outcome_remembered_messages",
		"Messages of a dead-letter queue's newest redrive that toolq knew by body hash or tool call id (its sample before the start); absent once the redrive's window (24 h) ends.", labels, nil)
	descOutcomeBack = prometheus.NewDesc("toolq_redrive_outcome_bounced_back_messages",
		"Of those, the messages that failed again and came back to the dead-letter queue within the window.", labels, nil)
	descOutcomeBackByTool = prometheus.NewDesc("toolq_redrive_outcome_bounced_back_by_tool",
		"The bounce-backs of a dead-letter queue's newest redrive by tool name (at most 10 tools; \"(none)\" for those without one).", []string{"queue", "region", "account", "tool"}, nil)
	descOutcomeSettled = prometheus.NewDesc("toolq_redrive_outcome_settled",
		"1 once the newest redrive's bounce-backs have settled (a sample 10 min after the last news found nothing new), else 0.", labels, nil)
	descOutcomeChecked = prometheus.NewDesc("toolq_redrive_outcome_checked_timestamp_seconds",
		"When the sample the outcome counts was taken (its age); absent before a sample since the redrive started.", labels, nil)
	descTriageErr = prometheus.NewDesc("toolq_triage_metrics_error", "1 when the sample and redrive gauges could not be read at this scrape.", nil, nil)
	descArchive   = prometheus.NewDesc("toolq_archive_messages", "Messages discards took out of dead-letter queues that toolq's archive keeps, restored ones included; absent when the archive cannot be read.", nil, nil)
	// The collector's own estimate, as /status shows it: GetMetricData is billed per metric
	// requested, which no call count says.
	descCost = prometheus.NewDesc("toolq_aws_cost_usd_per_day",
		"The collector's AWS cost a day at list prices and its current cadences, by loop (their sum is the total /status shows); absent before the first estimate.", []string{"loop"}, nil)
)

// Describe implements prometheus.Collector.
func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descVisible, descInFlight, descDelayed, descOldestAge, descDLQDepth, descHealth, descBlocked,
		descScrapeErr, descAdvice, descRegionVisible, descOperationFailing, descSightErr, descCost, descNearMax, descByTool, descByDimension, descMoved,
		descToMove, descTriageErr, descOutcomeRemembered, descOutcomeBack, descOutcomeBackByTool, descOutcomeSettled, descOutcomeChecked, descArchive} {
		ch <- d
	}
}

// Collect implements prometheus.Collector. A failed read must not fail the whole scrape: the
// collector's own metrics share it, and each *_metrics_error gauge says which part is missing.
func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	gauge := func(d *prometheus.Desc, v float64, lv ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, lv...)
	}
	failed := func(err error, descs ...*prometheus.Desc) bool {
		for _, d := range descs {
			gauge(d, btof(err != nil))
		}
		if err != nil {
			c.log("metrics: read the views", "err", err)
		}
		return err != nil
	}
	snap, err := c.views.Snapshot(ctx)
	if failed(err, descScrapeErr, descSightErr) {
		gauge(descTriageErr, 1)
		return
	}
	for _, qs := range snap.Overview.Queues {
		if !qs.Gone {
			queueGauges(gauge, qs)
		}
	}
	for _, l := range snap.Overview.Cost.Loops {
		gauge(descCost, l.USDPerDay, l.Loop)
	}
	for _, r := range snap.Regions(snap.At) {
		gauge(descRegionVisible, btof(!r.Blind), r.Region)
		for _, op := range r.Operations {
			if op.Called {
				gauge(descOperationFailing, btof(op.Failing), r.Region, op.Operation)
			}
		}
	}
	breakdowns, err := c.views.SampleBreakdowns(ctx)
	if failed(err, descTriageErr) {
		return
	}
	for _, b := range breakdowns {
		breakdownGauges(gauge, b)
	}
	for _, r := range snap.RunningRedrives() {
		gauge(descMoved, float64(r.Moved), r.Queue, r.Region, r.Account)
		gauge(descToMove, float64(r.ToMove), r.Queue, r.Region, r.Account)
	}
	for _, o := range snap.Summary(snap.At).RedriveOutcomes {
		outcomeGauges(gauge, o)
	}
	if st, err := c.views.ArchiveStats(ctx); err == nil {
		gauge(descArchive, float64(st.Messages))
	}
}

// outcomeGauges are what came back of one dead-letter queue's newest redrive.
func outcomeGauges(gauge func(d *prometheus.Desc, v float64, lv ...string), qo views.QueueRedriveOutcome) {
	o := qo.Redrive.Outcome
	lv := []string{qo.Queue, qo.Region, qo.Account}
	gauge(descOutcomeRemembered, float64(o.Remembered), lv...)
	gauge(descOutcomeBack, float64(o.BouncedBack), lv...)
	gauge(descOutcomeSettled, btof(o.Settled), lv...)
	if o.CheckedAt != nil {
		gauge(descOutcomeChecked, float64(o.CheckedAt.UnixMilli())/1000, lv...)
	}
	tools := map[string]int{}
	for _, t := range o.Tools {
		tools[cmp.Or(t.Value, noneLabel)] += t.Back
	}
	for tool, n := range tools {
		if n > 0 {
			gauge(descOutcomeBackByTool, float64(n), append(lv, tool)...)
		}
	}
}

// queueGauges are one queue's series.
func queueGauges(gauge func(d *prometheus.Desc, v float64, lv ...string), qs views.QueueSummary) {
	lv := []string{qs.Name, qs.Region, qs.Account}
	gauge(descVisible, float64(qs.Visible), lv...)
	gauge(descInFlight, float64(qs.InFlight), lv...)
	gauge(descDelayed, float64(qs.Delayed), lv...)
	if qs.OldestMessageAgeSeconds != nil {
		gauge(descOldestAge, *qs.OldestMessageAgeSeconds, lv...)
	}
	if qs.IsDeadLetterQueue {
		gauge(descDLQDepth, float64(qs.Visible), lv...)
	}
	gauge(descHealth, healthValue(qs.Health.Status), lv...)
	for _, a := range qs.Advice {
		gauge(descAdvice, 1, a.Rule, qs.Name, qs.Region, qs.Account)
	}
	if qs.FIFO && !qs.IsDeadLetterQueue {
		gauge(descBlocked, float64(qs.BlockedGroups), lv...)
	}
	if qs.MaxReceiveCount != nil {
		gauge(descNearMax, nearMaxReceive(qs.Health), lv...)
	}
}

// nearMaxReceive is how many messages the health's near-maxReceiveCount rule counted, 0 when
// it found none.
func nearMaxReceive(h views.Health) float64 {
	for _, f := range h.Findings {
		if f.Kind == views.ProblemNearMax {
			return f.Size
		}
	}
	return 0
}

// breakdownGauges are one dead-letter queue's sample series by tool and by dimension. A tool may
// well be called "(other)": its count joins the others' rather than making a second series of
// the same labels, which would fail the whole scrape.
func breakdownGauges(gauge func(d *prometheus.Desc, v float64, lv ...string), b views.SampleBreakdown) {
	tools := map[string]int{}
	for _, t := range b.Tools {
		tools[cmp.Or(t.Value, noneLabel)] += t.Count
	}
	tools[otherLabel] += b.OtherTools
	for tool, n := range tools {
		if n > 0 {
			gauge(descByTool, float64(n), b.Queue, b.Region, b.Account, tool)
		}
	}
	for _, d := range b.Dimensions {
		values := map[string]int{otherLabel: d.Others}
		for _, v := range d.Values {
			values[v.Value] += v.Count
		}
		for value, n := range values {
			if n > 0 {
				gauge(descByDimension, float64(n), b.Queue, b.Region, b.Account, d.Name, value)
			}
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

// btof is 1 for true, 0 for false.
func btof(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
