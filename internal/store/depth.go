package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// latestAttributeSamplesQuery seeks each queue's newest sample: in SQLite through a correlated
// max(at), the CROSS JOIN keeping the queues outside; in PostgreSQL, whose planner would rather
// hash-join the whole table to the queues, through a LATERAL join, an index scan per queue.
func latestAttributeSamplesQuery(d dialect) string {
	if d == postgresDialect {
		return `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN LATERAL (
		SELECT * FROM attribute_samples WHERE queue_id = q.id ORDER BY at DESC, resolution LIMIT 1) a
	ORDER BY q.id`
	}
	return `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id AND a.at = (SELECT max(at) FROM attribute_samples WHERE queue_id = q.id)
	ORDER BY q.id, a.resolution`
}

// LatestAttributeSamples returns each queue's newest depth sample, by queue id.
func (s *Store) LatestAttributeSamples(ctx context.Context) (map[int64]AttributeSample, error) {
	// CROSS JOIN makes SQLite loop over queues outside, so that the correlated max(at) and the
	// row are seeks on the (queue_id, at, resolution) key, once per queue, instead of a scan of
	// every sample. A raw sample and a roll-up can share a time; the raw one sorts first and wins.
	rows, err := s.db.QueryContext(ctx, latestAttributeSamplesQuery(s.d))
	if err != nil {
		return nil, fmt.Errorf("store: latest attribute samples: %w", err)
	}
	defer rows.Close()
	m := map[int64]AttributeSample{}
	for rows.Next() {
		a, err := scanAttributeSample(rows)
		if err != nil {
			return nil, fmt.Errorf("store: latest attribute samples: %w", err)
		}
		if _, ok := m[a.QueueID]; !ok {
			m[a.QueueID] = a
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: latest attribute samples: %w", err)
	}
	return m, nil
}

// AttributeSeries returns a queue's depth samples in [since, until), oldest first, raw and
// rolled-up rows together.
func (s *Store) AttributeSeries(ctx context.Context, queueID int64, since, until time.Time) ([]AttributeSample, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT queue_id, at, resolution, visible, in_flight, delayed FROM attribute_samples
		WHERE queue_id = ? AND at >= ? AND at < ? ORDER BY at, resolution`,
		queueID, ms(since), ms(until))
	if err != nil {
		return nil, fmt.Errorf("store: attribute series of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	out := []AttributeSample{}
	for rows.Next() {
		a, err := scanAttributeSample(rows)
		if err != nil {
			return nil, fmt.Errorf("store: attribute series of queue %d: %w", queueID, err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: attribute series of queue %d: %w", queueID, err)
	}
	return out, nil
}

func scanAttributeSample(r rowScanner) (AttributeSample, error) {
	var a AttributeSample
	var at int64
	if err := r.Scan(&a.QueueID, &at, &a.Resolution, &a.Visible, &a.InFlight, &a.Delayed); err != nil {
		return AttributeSample{}, err
	}
	a.At = fromMS(at)
	return a, nil
}

// depthSamplesSinceQuery reads every queue's samples from ?1 on, a range seek per queue (as in
// latestAttributeSamplesQuery, a LATERAL join in PostgreSQL, whose OFFSET 0 keeps the planner
// from flattening it into a hash join over the whole table).
func depthSamplesSinceQuery(d dialect) string {
	from := `FROM queues q CROSS JOIN attribute_samples a WHERE a.queue_id = q.id AND a.at >= ?1`
	if d == postgresDialect {
		from = `FROM queues q CROSS JOIN LATERAL (
			SELECT * FROM attribute_samples WHERE queue_id = q.id AND at >= ?1 OFFSET 0) a`
	}
	return `SELECT a.queue_id, a.at, a.visible, a.in_flight, a.delayed ` + from + ` ORDER BY q.id, a.at, a.resolution`
}

// DepthSamplesSince returns every queue's depth samples from since on, oldest first, by queue id:
// a range seek per queue. Where a roll-up and a raw sample share a time, the roll-up (its
// bucket's maxima) stays.
func (s *Store) DepthSamplesSince(ctx context.Context, since time.Time) (map[int64][]AttributeSample, error) {
	rows, err := s.db.QueryContext(ctx, depthSamplesSinceQuery(s.d), msCeil(since))
	if err != nil {
		return nil, fmt.Errorf("store: depth samples since %s: %w", since.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := map[int64][]AttributeSample{}
	for rows.Next() {
		var at int64
		a := AttributeSample{}
		if err := rows.Scan(&a.QueueID, &at, &a.Visible, &a.InFlight, &a.Delayed); err != nil {
			return nil, fmt.Errorf("store: depth samples: %w", err)
		}
		a.At = fromMS(at)
		list := out[a.QueueID]
		if n := len(list); n > 0 && list[n-1].At.Equal(a.At) {
			list[n-1] = a
			continue
		}
		out[a.QueueID] = append(list, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: depth samples: %w", err)
	}
	return out, nil
}

// SaveAttributeSamples appends raw depth samples, of any queues, in one transaction: a history
// imported at once (benchmarks and fixtures build an hour of ten thousand queues with it), in
// statements of depthBatch rows, each a round trip to PostgreSQL. It leaves the queues'
// attributes alone; SaveQueueAttributes is the collector's way.
func (s *Store) SaveAttributeSamples(ctx context.Context, samples []AttributeSample) error {
	// One statement may not change a row twice (PostgreSQL refuses): the last sample of a queue
	// and time wins, as it would one statement at a time.
	type key struct{ queue, at int64 }
	last := make(map[key]int, len(samples))
	for i, a := range samples {
		last[key{a.QueueID, ms(a.At)}] = i
	}
	kept := make([]AttributeSample, 0, len(last))
	for i, a := range samples {
		if last[key{a.QueueID, ms(a.At)}] == i {
			kept = append(kept, a)
		}
	}
	err := s.inTx(ctx, func(tx *dbTx) error {
		for batch := range slices.Chunk(kept, depthBatch) {
			args := make([]any, 0, 5*len(batch))
			for _, a := range batch {
				args = append(args, a.QueueID, ms(a.At), a.Visible, a.InFlight, a.Delayed)
			}
			_, err := tx.ExecContext(ctx, `
				INSERT INTO attribute_samples (queue_id, at, resolution, visible, in_flight, delayed)
				VALUES `+strings.TrimSuffix(strings.Repeat("(?, ?, 0, ?, ?, ?), ", len(batch)), ", ")+`
				ON CONFLICT (queue_id, at, resolution) DO UPDATE SET
					visible = excluded.visible, in_flight = excluded.in_flight, delayed = excluded.delayed`, args...)
			if err != nil {
				return notFoundOnFK(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save %d attribute samples: %w", len(samples), err)
	}
	return nil
}

// depthBatch is how many samples one statement of SaveAttributeSamples inserts: five parameters
// each, well within both engines' limits on a statement's parameters.
const depthBatch = 500

// scanQueueTimes reads rows of a queue id and a time in unix ms, or NULL for a queue without
// one, into a map that leaves those out; what names the read in its errors. It closes rows.
func scanQueueTimes(rows *sql.Rows, what string) (map[int64]time.Time, error) {
	defer rows.Close()
	out := map[int64]time.Time{}
	for rows.Next() {
		var id int64
		var at sql.NullInt64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, fmt.Errorf("store: %s: %w", what, err)
		}
		if at.Valid {
			out[id] = fromMS(at.Int64)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: %s: %w", what, err)
	}
	return out, nil
}
