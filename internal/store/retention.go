package store

import (
	"cmp"
	"context"
	"fmt"
	"time"
)

// DefaultRetention returns the retention Prune applies to the fields a Retention leaves zero.
func DefaultRetention() Retention {
	return Retention{
		RawFor:       48 * time.Hour,
		RollupPeriod: 5 * time.Minute,
		RollupFor:    30 * 24 * time.Hour,
		SamplesFor:   24 * time.Hour,
		RunsFor:      7 * 24 * time.Hour,
	}
}

// withDefaults fills the zero (or negative) fields of r from DefaultRetention.
func (r Retention) withDefaults() Retention {
	d := DefaultRetention()
	return Retention{
		RawFor:       cmp.Or(max(r.RawFor, 0), d.RawFor),
		RollupPeriod: cmp.Or(max(r.RollupPeriod, 0), d.RollupPeriod),
		RollupFor:    cmp.Or(max(r.RollupFor, 0), d.RollupFor),
		SamplesFor:   cmp.Or(max(r.SamplesFor, 0), d.SamplesFor),
		RunsFor:      cmp.Or(max(r.RunsFor, 0), d.RunsFor),
	}
}

// PruneResult says what a Prune did.
type PruneResult struct {
	RolledUp int64 // raw depth samples and datapoints folded into roll-ups
	Deleted  int64 // rows dropped for age: roll-ups, message samples, messages, runs, errors
}

// Prune rolls up raw samples and datapoints older than r.RawFor into r.RollupPeriod buckets and
// deletes what is older than each kind's retention. Zero fields of r take DefaultRetention.
//
// It is idempotent: the roll-up cutoff is aligned to a bucket boundary, so a bucket is always
// rolled up whole, and a second run finds nothing left to do. Each queue is pruned in its own
// transaction so that the collector's writes never wait long behind it.
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (PruneResult, error) {
	r = r.withDefaults()
	var res PruneResult
	period := r.RollupPeriod.Milliseconds()
	rawCutoff := ms(now.Add(-r.RawFor)) / period * period
	rollupCutoff := ms(now.Add(-r.RollupFor))

	ids, err := s.queueIDs(ctx)
	if err != nil {
		return res, fmt.Errorf("store: prune: %w", err)
	}
	// Also when a queue fails half-way: what was rolled up before is gone from the raw samples.
	defer func() {
	}()
	for _, id := range ids {
		err := s.inTx(ctx, func(tx *dbTx) error {
			rolled, deleted, err := pruneQueue(ctx, tx, id, period, rawCutoff, rollupCutoff)
			res.RolledUp += rolled
			res.Deleted += deleted
			return err
		})
		if err != nil {
			return res, fmt.Errorf("store: prune queue %d: %w", id, err)
		}
	}

	steps := []struct {
		what  string
		query string
		args  []any
	}{
		// A queue's newest sample stays whatever its age: it is what the pages show.
		{"samples", `DELETE FROM samples WHERE at < ? AND id NOT IN (
			SELECT newest FROM (SELECT (SELECT id FROM samples s WHERE s.queue_id = q.id ORDER BY at DESC, id DESC LIMIT 1) AS newest
				FROM queues q) AS kept WHERE newest IS NOT NULL)`, []any{ms(now.Add(-r.SamplesFor))}},
		// A message seen last before the cutoff can only be held by its queue's newest sample,
		// the one kept above, so one key lookup there tells whether it is still referred to.
		{"messages", `DELETE FROM messages WHERE last_seen < ?
			AND NOT EXISTS (SELECT 1 FROM sample_messages sm WHERE sm.message_ref = messages.id
				AND sm.sample_id = (SELECT id FROM samples s WHERE s.queue_id = messages.queue_id ORDER BY at DESC, id DESC LIMIT 1))`,
			[]any{ms(now.Add(-r.SamplesFor))}},
		// The newest useful run of each kind (LatestRun's) stays, so that freshness can still
		// say how old the data is after a long outage.
		{"runs", `DELETE FROM collector_runs WHERE started_at < ? AND id NOT IN (
			SELECT newest FROM (SELECT (SELECT id FROM collector_runs r WHERE r.kind = k.kind AND ` + usefulRun + `
				ORDER BY finished_at DESC, id DESC LIMIT 1) AS newest
				FROM (SELECT DISTINCT kind FROM collector_runs) k) AS kept WHERE newest IS NOT NULL)`, []any{ms(now.Add(-r.RunsFor))}},
		{"errors", `DELETE FROM collector_errors WHERE at < ?`, []any{ms(now.Add(-r.RunsFor))}},
		// Alerts and notifications are kept as long as runs. A pending message and the alerts
		// still waiting for one stay whatever their age: a restart must still send them.
		{"notification deliveries", `DELETE FROM notify_deliveries WHERE at < ?`, []any{ms(now.Add(-r.RunsFor))}},
		{"notification messages", `DELETE FROM notify_messages WHERE created_at < ? AND status <> 'pending'`, []any{ms(now.Add(-r.RunsFor))}},
		{"routed alerts", `DELETE FROM notify_outbox WHERE created_at < ? AND message_id <> 0
			AND message_id NOT IN (SELECT id FROM notify_messages)`, []any{ms(now.Add(-r.RunsFor))}},
		{"alerts", `DELETE FROM alerts WHERE at < ? AND id NOT IN (SELECT alert_id FROM notify_outbox)`, []any{ms(now.Add(-r.RunsFor))}},
	}
	for _, st := range steps {
		sr, err := s.wdb.ExecContext(ctx, st.query, st.args...)
		if err != nil {
			return res, fmt.Errorf("store: prune %s: %w", st.what, err)
		}
		n, err := sr.RowsAffected()
		if err != nil {
			return res, fmt.Errorf("store: prune %s: %w", st.what, err)
		}
		res.Deleted += n
	}
	return res, nil
}

// pruneQueue rolls up one queue's raw rows older than rawCutoff into buckets of period ms and
// drops its rows older than rollupCutoff.
func pruneQueue(ctx context.Context, tx *dbTx, queueID, period, rawCutoff, rollupCutoff int64) (rolled, deleted int64, err error) {
	secs := period / 1000
	// Depths are gauges: a bucket keeps each maximum. Merging with an existing bucket by max is
	// exact whatever order the rows arrive in.
	_, err = tx.ExecContext(ctx, `
		INSERT INTO attribute_samples (queue_id, at, resolution, visible, in_flight, delayed)
		SELECT queue_id, at / ?2 * ?2, CAST(?3 AS BIGINT), max(visible), max(in_flight), max(delayed)
		FROM attribute_samples WHERE queue_id = ?1 AND resolution = 0 AND at < ?4
		GROUP BY queue_id, at / ?2
		ON CONFLICT (queue_id, at, resolution) DO UPDATE SET
			visible = greatest(attribute_samples.visible, excluded.visible), in_flight = greatest(attribute_samples.in_flight, excluded.in_flight),
			delayed = greatest(attribute_samples.delayed, excluded.delayed)`,
		queueID, period, secs, rawCutoff)
	if err != nil {
		return 0, 0, fmt.Errorf("roll up depth samples: %w", err)
	}
	n, err := execCount(ctx, tx, `DELETE FROM attribute_samples WHERE queue_id = ? AND resolution = 0 AND at < ?`, queueID, rawCutoff)
	if err != nil {
		return 0, 0, fmt.Errorf("drop rolled-up depth samples: %w", err)
	}
	rolled += n

	// Datapoints combine by the statistic stored with their metric name (MetricStat). A bucket
	// already rolled up is replaced: that only happens when the same old points are written
	// again (a second backfill), and replacing keeps a Sum from counting them twice.
	_, err = tx.ExecContext(ctx, `
		INSERT INTO metric_points (queue_id, metric_id, at, period, value)
		SELECT p.queue_id, p.metric_id, p.at / ?2 * ?2, CAST(?3 AS BIGINT),
			CASE m.stat WHEN 'Sum' THEN sum(p.value) WHEN 'Average' THEN avg(p.value) ELSE max(p.value) END
		FROM metric_points p JOIN metric_names m ON m.id = p.metric_id
		WHERE p.queue_id = ?1 AND p.period < ?3 AND p.at < ?4
		GROUP BY p.queue_id, p.metric_id, m.stat, p.at / ?2
		ON CONFLICT (queue_id, metric_id, at, period) DO UPDATE SET value = excluded.value`,
		queueID, period, secs, rawCutoff)
	if err != nil {
		return 0, 0, fmt.Errorf("roll up datapoints: %w", err)
	}
	n, err = execCount(ctx, tx, `DELETE FROM metric_points WHERE queue_id = ? AND period < ? AND at < ?`, queueID, secs, rawCutoff)
	if err != nil {
		return 0, 0, fmt.Errorf("drop rolled-up datapoints: %w", err)
	}
	rolled += n

	for _, q := range []string{
		`DELETE FROM attribute_samples WHERE queue_id = ? AND at < ?`,
		`DELETE FROM metric_points WHERE queue_id = ? AND at < ?`,
	} {
		n, err := execCount(ctx, tx, q, queueID, rollupCutoff)
		if err != nil {
			return 0, 0, fmt.Errorf("drop old roll-ups: %w", err)
		}
		deleted += n
	}
	return rolled, deleted, nil
}

// execCount runs a statement in tx and returns how many rows it changed.
func execCount(ctx context.Context, tx *dbTx, query string, args ...any) (int64, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// queueIDs returns every queue's id, gone ones included.
func (s *Store) queueIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT id FROM queues ORDER BY id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
