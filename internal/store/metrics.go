package store

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// CloudWatch statistics toolq asks for.
const (
	StatSum     = "Sum"
	StatMaximum = "Maximum"
	StatAverage = "Average"
)

// metricStats is the one place that says which statistic each AWS/SQS metric is fetched with, and
// therefore how its roll-ups combine: counts are summed, gauges maxed, sizes averaged.
var metricStats = map[string]string{
	"ApproximateAgeOfOldestMessage":                 StatMaximum,
	"ApproximateNumberOfGroupsWithInflightMessages": StatMaximum,
	"ApproximateNumberOfMessagesDelayed":            StatMaximum,
	"ApproximateNumberOfMessagesNotVisible":         StatMaximum,
	"ApproximateNumberOfMessagesVisible":            StatMaximum,
	"NumberOfDeduplicatedSentMessages":              StatSum,
	"NumberOfEmptyReceives":                         StatSum,
	"NumberOfMessagesDeleted":                       StatSum,
	"NumberOfMessagesReceived":                      StatSum,
	"NumberOfMessagesSent":                          StatSum,
	"SentMessageSize":                               StatAverage,
}

// MetricStat returns the statistic toolq fetches and rolls up a CloudWatch AWS/SQS metric with:
// StatSum for counts, StatAverage for SentMessageSize, StatMaximum for gauges and for any name it
// does not know (a maximum never understates a backlog).
func MetricStat(metric string) string {
	if st, ok := metricStats[metric]; ok {
		return st
	}
	return StatMaximum
}

// MetricNames returns the AWS/SQS metric names toolq knows, sorted.
func MetricNames() []string {
	names := make([]string, 0, len(metricStats))
	for n := range metricStats {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// metricID returns the id of a metric name, storing the name (with its statistic) the first time.
// It runs outside the caller's transaction so that the cache never holds an id a rollback undid.
func (s *Store) metricID(ctx context.Context, name string) (int64, error) {
	s.metricMu.Lock()
	defer s.metricMu.Unlock()
	if id, ok := s.metricIDs[name]; ok {
		return id, nil
	}
	var id int64
	err := s.wdb.QueryRowContext(ctx, `
		INSERT INTO metric_names (name, stat) VALUES (?, ?)
		ON CONFLICT (name) DO UPDATE SET stat = excluded.stat
		RETURNING id`, name, MetricStat(name)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("metric name %q: %w", name, err)
	}
	s.metricIDs[name] = id
	return id, nil
}

// UpsertMetricPoints stores datapoints, replacing any with the same queue, metric, period and time.
func (s *Store) UpsertMetricPoints(ctx context.Context, points []MetricPoint) error {
	if len(points) == 0 {
		return nil
	}
	ids := map[string]int64{}
	for _, p := range points {
		if _, ok := ids[p.Metric]; ok {
			continue
		}
		id, err := s.metricID(ctx, p.Metric)
		if err != nil {
			return fmt.Errorf("store: upsert metric points: %w", err)
		}
		ids[p.Metric] = id
	}
	// Multi-row statements (PostgreSQL pays a round trip a statement); one statement may not touch
	// a row twice, so a point given twice counts once, the later one, as row by row it would.
	type key struct {
		queue, metric, at int64
		period            int
	}
	last := make(map[key]int, len(points))
	for i, p := range points {
		last[key{p.QueueID, ids[p.Metric], ms(p.At), p.Period}] = i
	}
	var rows []MetricPoint
	for i, p := range points {
		if last[key{p.QueueID, ids[p.Metric], ms(p.At), p.Period}] == i {
			rows = append(rows, p)
		}
	}
	err := s.inTx(ctx, func(tx *dbTx) error {
		for chunk := range slices.Chunk(rows, metricBatch) {
			args := make([]any, 0, 5*len(chunk))
			for _, p := range chunk {
				args = append(args, p.QueueID, ids[p.Metric], ms(p.At), p.Period, p.Value)
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO metric_points (queue_id, metric_id, at, period, value) VALUES `+valueRows(len(chunk), 5)+`
				ON CONFLICT (queue_id, metric_id, at, period) DO UPDATE SET value = excluded.value`, args...); err != nil {
				return fmt.Errorf("%d points from queue %d %s at %s: %w", len(chunk), chunk[0].QueueID, chunk[0].Metric,
					chunk[0].At.Format(time.RFC3339), err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: upsert metric points: %w", err)
	}
	return nil
}

// metricBatch is how many datapoints one statement stores.
const metricBatch = 500

// NewestMetricTimes returns, by queue id, the time of the newest 60-s datapoint of any of the
// metrics named, or of any metric when none is.
func (s *Store) NewestMetricTimes(ctx context.Context, metrics ...string) (map[int64]time.Time, error) {
	filter, args := "", []any{}
	if len(metrics) > 0 {
		filter = " WHERE m.name IN (?" + strings.Repeat(", ?", len(metrics)-1) + ")"
		for _, m := range metrics {
			args = append(args, m)
		}
	}
	// One backward seek per (queue, metric) on the primary key rather than a scan of every point.
	rows, err := s.db.QueryContext(ctx, `
		SELECT q.id, max((SELECT max(at) FROM metric_points p
			WHERE p.queue_id = q.id AND p.metric_id = m.id AND p.period <= 60))
		FROM queues q CROSS JOIN metric_names m`+filter+`
		GROUP BY q.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: newest metric times: %w", err)
	}
	return scanQueueTimes(rows, "newest metric times")
}

// MetricSeries returns one metric of one queue in [since, until), oldest first, any period.
func (s *Store) MetricSeries(ctx context.Context, queueID int64, metric string, since, until time.Time) ([]MetricPoint, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT p.at, p.period, p.value FROM metric_names m CROSS JOIN metric_points p
		WHERE p.queue_id = ? AND m.name = ? AND p.metric_id = m.id AND p.at >= ? AND p.at < ?
		ORDER BY p.at, p.period`, queueID, metric, ms(since), ms(until))
	if err != nil {
		return nil, fmt.Errorf("store: metric series %s of queue %d: %w", metric, queueID, err)
	}
	defer rows.Close()
	out := []MetricPoint{}
	for rows.Next() {
		p := MetricPoint{QueueID: queueID, Metric: metric}
		var at int64
		if err := rows.Scan(&at, &p.Period, &p.Value); err != nil {
			return nil, fmt.Errorf("store: metric series %s of queue %d: %w", metric, queueID, err)
		}
		p.At = fromMS(at)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: metric series %s of queue %d: %w", metric, queueID, err)
	}
	return out, nil
}

// metricSeriesOfQueuesQuery reads one metric of the queues listed in ?1 (sampleIDList's
// encoding) in [?3, ?4): a range seek on the primary key per queue, the list outside (in
// PostgreSQL a LATERAL join, whose OFFSET 0 keeps the planner from flattening it into a hash
// join over the whole table, as in depthSamplesSinceQuery).
func metricSeriesOfQueuesQuery(d dialect) string {
	points := `metric_points p WHERE p.queue_id = j.value AND p.metric_id = m.id AND p.at >= ?3 AND p.at < ?4 AND m.name = ?2`
	if d == postgresDialect {
		points = `LATERAL (SELECT at, period, value FROM metric_points
			WHERE queue_id = j.value AND metric_id = m.id AND at >= ?3 AND at < ?4 OFFSET 0) p WHERE m.name = ?2`
	}
	return `
	SELECT j.value, p.at, p.period, p.value
	FROM metric_names m CROSS JOIN ` + d.idTable("?1") + ` j CROSS JOIN ` + points + `
	ORDER BY j.value, p.at, p.period`
}

// MetricSeriesOfQueues is MetricSeries for many queues at once, in one statement: each queue's
// points of metric in [since, until), oldest first, by queue id; a queue without any is absent.
func (s *Store) MetricSeriesOfQueues(ctx context.Context, queueIDs []int64, metric string, since, until time.Time) (map[int64][]MetricPoint, error) {
	out := map[int64][]MetricPoint{}
	if len(queueIDs) == 0 {
		return out, nil
	}
	list, err := sampleIDList(queueIDs)
	if err != nil {
		return nil, fmt.Errorf("store: metric series %s of %d queues: %w", metric, len(queueIDs), err)
	}
	rows, err := s.db.QueryContext(ctx, metricSeriesOfQueuesQuery(s.d), list, metric, ms(since), ms(until))
	if err != nil {
		return nil, fmt.Errorf("store: metric series %s of %d queues: %w", metric, len(queueIDs), err)
	}
	defer rows.Close()
	for rows.Next() {
		p := MetricPoint{Metric: metric}
		var at int64
		if err := rows.Scan(&p.QueueID, &at, &p.Period, &p.Value); err != nil {
			return nil, fmt.Errorf("store: metric series %s of %d queues: %w", metric, len(queueIDs), err)
		}
		p.At = fromMS(at)
		out[p.QueueID] = append(out[p.QueueID], p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: metric series %s of %d queues: %w", metric, len(queueIDs), err)
	}
	return out, nil
}

// LatestMetricValues returns each metric's newest datapoint of a queue, by metric name.
func (s *Store) LatestMetricValues(ctx context.Context, queueID int64) (map[string]MetricPoint, error) {
	// When a roll-up and a raw point share a time, the finer one (smaller period) wins.
	rows, err := s.db.QueryContext(ctx, `
		SELECT m.name, p.at, p.period, p.value
		FROM metric_names m CROSS JOIN metric_points p
		WHERE p.queue_id = ?1 AND p.metric_id = m.id
			AND p.at = (SELECT max(at) FROM metric_points WHERE queue_id = ?1 AND metric_id = m.id)
		ORDER BY m.name, p.period`, queueID)
	if err != nil {
		return nil, fmt.Errorf("store: latest metric values of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	out := map[string]MetricPoint{}
	for rows.Next() {
		p := MetricPoint{QueueID: queueID}
		var at int64
		if err := rows.Scan(&p.Metric, &at, &p.Period, &p.Value); err != nil {
			return nil, fmt.Errorf("store: latest metric values of queue %d: %w", queueID, err)
		}
		p.At = fromMS(at)
		if _, ok := out[p.Metric]; !ok {
			out[p.Metric] = p
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: latest metric values of queue %d: %w", queueID, err)
	}
	return out, nil
}

// latestMetricPointsQuery seeks each queue's newest point of one metric; CROSS JOIN keeps the
// queues in the outer loop in SQLite, a LATERAL join in PostgreSQL (see
// latestAttributeSamplesQuery).
func latestMetricPointsQuery(d dialect) string {
	if d == postgresDialect {
		return `
	SELECT q.id, p.at, p.period, p.value
	FROM metric_names m CROSS JOIN queues q CROSS JOIN LATERAL (
		SELECT at, period, value FROM metric_points
		WHERE queue_id = q.id AND metric_id = m.id ORDER BY at DESC, period LIMIT 1) p
	WHERE m.name = ?
	ORDER BY q.id`
	}
	return `
	SELECT p.queue_id, p.at, p.period, p.value
	FROM metric_names m CROSS JOIN queues q CROSS JOIN metric_points p
	WHERE m.name = ? AND p.queue_id = q.id AND p.metric_id = m.id
		AND p.at = (SELECT max(at) FROM metric_points WHERE queue_id = q.id AND metric_id = m.id)
	ORDER BY q.id, p.period`
}

// LatestMetricPoints returns the newest datapoint of one metric for every queue that has one, by
// queue id.
func (s *Store) LatestMetricPoints(ctx context.Context, metric string) (map[int64]MetricPoint, error) {
	rows, err := s.db.QueryContext(ctx, latestMetricPointsQuery(s.d), metric)
	if err != nil {
		return nil, fmt.Errorf("store: latest %s points: %w", metric, err)
	}
	defer rows.Close()
	out := map[int64]MetricPoint{}
	for rows.Next() {
		p := MetricPoint{Metric: metric}
		var at int64
		if err := rows.Scan(&p.QueueID, &at, &p.Period, &p.Value); err != nil {
			return nil, fmt.Errorf("store: latest %s points: %w", metric, err)
		}
		p.At = fromMS(at)
		if _, ok := out[p.QueueID]; !ok {
			out[p.QueueID] = p
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: latest %s points: %w", metric, err)
	}
	return out, nil
}
