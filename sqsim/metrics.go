package sqsim

import (
	"math"
	"time"
)

// MetricHistory is how long the simulator keeps a queue's per-minute
// metrics, as CloudWatch keeps one-minute data points.
const MetricHistory = 15 * 24 * time.Hour

const historyMinutes = int64(MetricHistory / time.Minute)

// The AWS/SQS metrics, as CloudWatch names them.
const (
	metricAgeOfOldestMessage         = "ApproximateAgeOfOldestMessage"
	metricGroupsWithInflightMessages = "ApproximateNumberOfGroupsWithInflightMessages"
	metricMessagesDelayed            = "ApproximateNumberOfMessagesDelayed"
	metricMessagesNotVisible         = "ApproximateNumberOfMessagesNotVisible"
	metricMessagesVisible            = "ApproximateNumberOfMessagesVisible"
	metricDeduplicatedSentMessages   = "NumberOfDeduplicatedSentMessages"
	metricEmptyReceives              = "NumberOfEmptyReceives"
	metricMessagesDeleted            = "NumberOfMessagesDeleted"
	metricMessagesReceived           = "NumberOfMessagesReceived"
	metricMessagesSent               = "NumberOfMessagesSent"
	metricSentMessageSize            = "SentMessageSize"
)

// sqsMetrics lists every AWS/SQS metric with its unit.
var sqsMetrics = map[string]string{
	metricAgeOfOldestMessage:         "Seconds",
	metricGroupsWithInflightMessages: "Count",
	metricMessagesDelayed:            "Count",
	metricMessagesNotVisible:         "Count",
	metricMessagesVisible:            "Count",
	metricDeduplicatedSentMessages:   "Count",
	metricEmptyReceives:              "Count",
	metricMessagesDeleted:            "Count",
	metricMessagesReceived:           "Count",
	metricMessagesSent:               "Count",
	metricSentMessageSize:            "Bytes",
}

// fifoOnlyMetrics are published for FIFO queues only.
var fifoOnlyMetrics = map[string]bool{metricGroupsWithInflightMessages: true, metricDeduplicatedSentMessages: true}

// statistic aggregates samples: what CloudWatch keeps of a data point.
type statistic struct {
	sum, min, max float64
	count         float64
}

func (st *statistic) add(v float64) {
	st.merge(statistic{sum: v, min: v, max: v, count: 1})
}

func (st *statistic) merge(o statistic) {
	if o.count == 0 {
		return
	}
	if st.count == 0 {
		*st = o
		return
	}
	st.sum += o.sum
	st.count += o.count
	st.min = math.Min(st.min, o.min)
	st.max = math.Max(st.max, o.max)
}

// minuteStats is one minute of a queue's activity.
type minuteStats struct {
	sent, received, deleted, emptyReceives, deduplicated int
	sentBytes                                            statistic
	// The gauges, valid when sampled is set.
	sampled                                                 bool
	visible, notVisible, delayed, oldestAge, groupsInFlight float64
}

// queueMetrics holds a queue's minutes, the oldest first, from minute
// number first on, for at most MetricHistory.
type queueMetrics struct {
	first   int64
	minutes []minuteStats
}

// minuteOf numbers the minutes of the Unix epoch.
func minuteOf(t time.Time) int64 {
	return int64(math.Floor(float64(t.Unix()) / 60))
}

// start begins the history of a new, empty queue: its first minute's gauges
// are the zeros it starts with.
func (qm *queueMetrics) start(now time.Time) {
	qm.first = minuteOf(now)
	qm.minutes = []minuteStats{{sampled: true}}
}

// at returns the record of the minute holding now, creating the minutes up
// to it. A clock set back lands in the oldest minute kept.
func (qm *queueMetrics) at(now time.Time) *minuteStats {
	return qm.minute(minuteOf(now))
}

func (qm *queueMetrics) minute(m int64) *minuteStats {
	last := qm.first + int64(len(qm.minutes)) - 1
	if m > last {
		if m-last >= historyMinutes {
			qm.first, qm.minutes = m, []minuteStats{{}}
			return &qm.minutes[0]
		}
		qm.minutes = append(qm.minutes, make([]minuteStats, m-last)...)
		if drop := int64(len(qm.minutes)) - historyMinutes; drop > 0 {
			qm.minutes = append(qm.minutes[:0:0], qm.minutes[drop:]...)
			qm.first += drop
		}
	}
	if m < qm.first {
		m = qm.first
	}
	return &qm.minutes[m-qm.first]
}

// lookup returns the record of minute m, if the queue has it.
func (qm *queueMetrics) lookup(m int64) (*minuteStats, bool) {
	if m < qm.first || m >= qm.first+int64(len(qm.minutes)) {
		return nil, false
	}
	return &qm.minutes[m-qm.first], true
}

// value returns metric's data point for one minute, if there is one.
// Counters are one sample per minute, their count the sum; SentMessageSize
// has one sample per message sent; gauges one sample per minute.
func (ms *minuteStats) value(metric string) (statistic, bool) {
	var v float64
	switch metric {
	case metricMessagesSent:
		v = float64(ms.sent)
	case metricMessagesReceived:
		v = float64(ms.received)
	case metricMessagesDeleted:
		v = float64(ms.deleted)
	case metricEmptyReceives:
		v = float64(ms.emptyReceives)
	case metricDeduplicatedSentMessages:
		v = float64(ms.deduplicated)
	case metricSentMessageSize:
		return ms.sentBytes, ms.sentBytes.count > 0
	default:
		if !ms.sampled {
			return statistic{}, false
		}
		switch metric {
		case metricMessagesVisible:
			v = ms.visible
		case metricMessagesNotVisible:
			v = ms.notVisible
		case metricMessagesDelayed:
			v = ms.delayed
		case metricAgeOfOldestMessage:
			v = ms.oldestAge
		case metricGroupsWithInflightMessages:
			v = ms.groupsInFlight
		default:
			return statistic{}, false
		}
	}
	return statistic{sum: v, min: v, max: v, count: 1}, true
}

// gauges computes the sampled metrics of q at time t.
func (q *queue) gauges(t time.Time) (visible, notVisible, delayed, oldestAge, groups float64) {
	var oldest time.Time
	inFlightGroups := make(map[string]bool)
	for _, m := range q.messages {
		if m.gone || m.arrivedAt.After(t) {
			continue
		}
		switch {
		case !t.Before(m.visibleAt):
			visible++
		case m.inFlight:
			notVisible++
			inFlightGroups[m.groupID] = true
		default:
			delayed++
		}
		// Standard queues move a message received three times or more to
		// the back, and the age metric skips it. Only receives in this
		// queue count: a DLQ's messages all arrive with maxReceiveCount
		// receives behind them, and AWS documents the DLQ's age as
		// counted from each message's move.
		if !q.attrs.fifo && m.receivesHere >= 3 {
			continue
		}
		if oldest.IsZero() || m.arrivedAt.Before(oldest) {
			oldest = m.arrivedAt
		}
	}
	if !oldest.IsZero() {
		oldestAge = math.Floor(t.Sub(oldest).Seconds())
	}
	if q.attrs.fifo {
		groups = float64(len(inFlightGroups))
	}
	return
}

// maxGaugeBackfill bounds how many skipped minutes get their own gauge
// computation when the clock jumps; older skipped minutes repeat the
// earliest computed sample.
const maxGaugeBackfill = 120

// sampleGauges records the gauges of every queue for each minute that
// began since the last sample, as they stood when the minute began. It runs
// before the tick's other work, so that a jump of the clock samples the
// state before the jump's consequences.
func (s *Simulator) sampleGauges(now time.Time) {
	cur := minuteOf(now)
	if cur <= s.lastGaugeMinute {
		return
	}
	from := max(s.lastGaugeMinute+1, cur-historyMinutes+1)
	s.lastGaugeMinute = cur
	for _, q := range s.queues {
		// prev is a copy: q.metrics.minute may move the records.
		var prev minuteStats
		for m := max(from, q.metrics.first); m <= cur; m++ {
			ms := q.metrics.minute(m)
			if cur-m >= maxGaugeBackfill && prev.sampled {
				ms.sampled, ms.visible, ms.notVisible, ms.delayed, ms.oldestAge, ms.groupsInFlight =
					true, prev.visible, prev.notVisible, prev.delayed, prev.oldestAge, prev.groupsInFlight
				continue
			}
			at := time.Unix(m*60, 0)
			if at.Before(q.createdAt) {
				at = q.createdAt
			}
			ms.visible, ms.notVisible, ms.delayed, ms.oldestAge, ms.groupsInFlight = q.gauges(at)
			ms.sampled = true
			prev = *ms
		}
	}
}
