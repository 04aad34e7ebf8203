package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// chartSpec is one chart of the queue page: gauges as lines, counts as bars (per minute).
type chartSpec struct {
	metric string
	title  string
	kind   templates.ChartKind
	unit   string
	format func(float64) string
}

// queueCharts are the queue page's charts, in display order. A dead-letter queue's page swaps
// "Received" for its arrivals and for the receives split into toolq's samples and everyone
// else's (deadLetterCharts): on a DLQ the receives are mostly the dashboard's own sampling.
var queueCharts = []chartSpec{
	{"ApproximateNumberOfMessagesVisible", "Visible messages", templates.ChartLine, templates.UnitMessages, templates.Number},
	{"ApproximateNumberOfMessagesNotVisible", "In flight", templates.ChartLine, templates.UnitMessages, templates.Number},
	{"ApproximateAgeOfOldestMessage", "Oldest message age", templates.ChartLine, templates.UnitSeconds, templates.Duration},
	{"NumberOfMessagesSent", "Sent", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"NumberOfMessagesReceived", "Received", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"NumberOfMessagesDeleted", "Deleted", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"NumberOfEmptyReceives", "Empty receives", templates.ChartBars, templates.UnitPerMinute, templates.Number},
}

// deadLetterCharts are a dead-letter queue's charts.
var deadLetterCharts = []chartSpec{
	{"ApproximateNumberOfMessagesVisible", "Visible messages", templates.ChartLine, templates.UnitMessages, templates.Number},
	{views.SeriesArrivals, "Arriving (from depth changes and move tasks)", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"ApproximateAgeOfOldestMessage", "Oldest message age", templates.ChartLine, templates.UnitSeconds, templates.Duration},
	{views.SeriesOwnReceives, "Received by toolq's samples", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{views.SeriesOthersReceives, "Received by everyone else", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"NumberOfMessagesSent", "Sent (SendMessage only)", templates.ChartBars, templates.UnitPerMinute, templates.Number},
	{"NumberOfMessagesDeleted", "Deleted", templates.ChartBars, templates.UnitPerMinute, templates.Number},
}

// queuePage answers GET /queues/{queue}?range=: the queue's page (a dead-letter queue's adds its
// messages and the redrive panel); an HTMX request (the range links) gets the charts alone.
func (s *Server) queuePage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	rng := templates.RangeByKey(c.QueryParam("range"))
	page := s.page(c, key.Name, "", "")
	page.Notice = outcomeNotices[c.QueryParam("done")] // after a plain form's redrive action
	p, err := s.queueProps(ctx, key.ID, page, identity(c), !page.Nav.Embed)
	if err != nil {
		return err
	}
	p.Title = p.Queue.Name
	p.Topic = live.Queue(p.Queue.ID).String()
	if !page.Nav.Embed {
		p.Range = rng
		p.Charts = s.charts(ctx, key.ID, p.Queue.IsDeadLetterQueue, rng)
		p.TopicInside = true // the chart section opens the websocket with its range
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.ChartsSection(p))
	}
	return render(c, http.StatusOK, templates.QueuePage(p))
}

// queueProps reads what a queue's page shows besides its charts. full adds the sections an
// embedded card leaves out (sample, groups, redrive panel); the hub's pushes use it too, with a
// zero identity, since what they carry is the same for every viewer.
func (s *Server) queueProps(ctx context.Context, queueID int64, page templates.Page, who auth.Identity, full bool) (templates.QueueProps, error) {
	d, err := s.opts.Views.Queue(ctx, queueID)
	if err != nil {
		return templates.QueueProps{}, err
	}
	p := templates.QueueProps{Page: page, Ref: d.Ref, Queue: d}
	p.Freshness = d.Freshness
	if !full {
		return p, nil
	}
	if d.FIFO {
		g, err := s.opts.Views.Groups(ctx, queueID)
		if err != nil {
			return p, fmt.Errorf("queue page: groups: %w", err)
		}
		p.Groups = &g
	}
	switch {
	case d.IsDeadLetterQueue:
		m, err := s.opts.Views.Messages(ctx, queueID, views.MessageQuery{Limit: 20})
		if err != nil {
			return p, fmt.Errorf("queue page: sample: %w", err)
		}
		p.Sample = &m
		if p.Triage, err = s.opts.Views.Triage(ctx, queueID); err != nil {
			return p, fmt.Errorf("queue page: triage: %w", err)
		}
		if d.RedriveUnavailable != "" {
			// The page says why instead (an EventBridge target's DLQ holds events, not messages
			// a move task can return).
			break
		}
		r, err := s.redriveProps(ctx, d, page, who)
		if err != nil {
			return p, err
		}
		p.Redrive = &r
	case d.Peek.Enabled && d.MaxReceiveCount != nil:
		m, err := s.opts.Views.Messages(ctx, queueID, views.MessageQuery{NearMaxOnly: true, Limit: 20})
		if err != nil {
			return p, fmt.Errorf("queue page: messages near max receives: %w", err)
		}
		p.NearMax = m.Messages
	}
	return p, nil
}

// charts reads the queue's series over a range, fitted to the history when it is shorter, with
// the redrives of a dead-letter queue marked on every chart. A series that cannot be read draws
// as an empty chart rather than failing the page: the collector errors section says why data is
// missing.
func (s *Server) charts(ctx context.Context, queueID int64, deadLetter bool, rng templates.ChartRange) []templates.Chart {
	until := s.opts.Now().UTC()
	since := until.Add(-rng.Span)
	specs := queueCharts
	if deadLetter {
		specs = deadLetterCharts
	}
	series := make([]views.Series, len(specs))
	var own, others views.Series
	if deadLetter {
		var err error
		if own, others, err = s.opts.Views.ReceivesSplit(ctx, queueID, since, until); err != nil {
			s.log.Warn("queue page: receives", "queue_id", queueID, "err", err)
		}
	}
	for i, spec := range specs {
		var err error
		switch spec.metric {
		case views.SeriesArrivals:
			series[i], err = s.opts.Views.Arrivals(ctx, queueID, since, until)
		case views.SeriesOwnReceives:
			series[i] = own
		case views.SeriesOthersReceives:
			series[i] = others
		default:
			series[i], err = s.opts.Views.Series(ctx, queueID, spec.metric, since, until)
		}
		if err != nil {
			s.log.Warn("queue page: series", "queue_id", queueID, "metric", spec.metric, "err", err)
		}
		series[i].Name = spec.metric
	}
	from, _ := templates.FitRange(since, until, series...)
	var marks []views.RedriveMark
	if deadLetter {
		var err error
		if marks, err = s.opts.Views.RedriveMarks(ctx, queueID, from, until); err != nil {
			s.log.Warn("queue page: redrive marks", "queue_id", queueID, "err", err)
		}
	}
	charts := make([]templates.Chart, 0, len(specs))
	for i, spec := range specs {
		c := templates.NewChart(spec.title, spec.kind, spec.unit, series[i], from, until, spec.format)
		c.Fitted, c.RangeSince = from.After(since), since
		charts = append(charts, c.WithMarks(marks, until))
	}
	return charts
}

// queuePush renders what the hub sends a queue page's subscribers of one chart range. After a
// move task changed it adds the nudge that makes each browser fetch its own redrive panel; after
// a metrics cycle (or to a page that just connected) the charts of the range.
func (s *Server) queuePush(ctx context.Context, queueID int64, view pageView, changes live.Changes) ([]byte, error) {
	page := templates.Page{Nav: view.Nav, Now: s.opts.Now().UTC(), StaleAfter: s.staleAfter()}
	p, err := s.queueProps(ctx, queueID, page, auth.Identity{}, !view.Nav.Embed)
	if err != nil {
		return nil, err
	}
	// The depth charts read the attribute samples, so a new snapshot (after an attributes cycle)
	// redraws them as well as a CloudWatch cycle does: a chart that lags the stats card above it reads as a bug, and
	// drawing seven series costs about a millisecond per view (BenchmarkQueuePushWithCharts).
	if !view.Nav.Embed && (changes[events.SnapshotBuilt] || changes[events.MetricsChanged] || changes[live.Connect]) {
		p.Range = templates.RangeByKey(view.query().Get("range"))
		p.Charts = s.charts(ctx, queueID, p.Queue.IsDeadLetterQueue, p.Range)
	}
	return renderBytes(ctx, templates.QueuePush(p, changes[events.MoveTasksChanged]))
}
