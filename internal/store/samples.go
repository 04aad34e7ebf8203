package store

import (
	"context"
	"fmt"
	"time"
)

const latestAttributeSamplesQuery = `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id AND a.at = (SELECT max(at) FROM attribute_samples WHERE queue_id = q.id)
	ORDER BY q.id, a.resolution`

// LatestAttributeSamples returns each queue's newest depth sample, by queue id.
func (s *Store) LatestAttributeSamples(ctx context.Context) (map[int64]AttributeSample, error) {
	// CROSS JOIN makes SQLite loop over queues outside, so that the correlated max(at) and the
	// row are seeks on the (queue_id, at, resolution) key, once per queue, instead of a scan of
	// every sample. A raw sample and a roll-up can share a time; the raw one sorts first and wins.
	rows, err := s.db.QueryContext(ctx, latestAttributeSamplesQuery)
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

const attributeSeriesSinceQuery = `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id AND a.at >= ?
	ORDER BY q.id, a.at, a.resolution`

// AttributeSeriesSince returns every queue's depth samples since a time, oldest first, by queue
// id: the overview's sparklines in one query (a range per queue on the primary key; CROSS JOIN
// keeps SQLite from scanning every sample instead).
func (s *Store) AttributeSeriesSince(ctx context.Context, since time.Time) (map[int64][]AttributeSample, error) {
	rows, err := s.db.QueryContext(ctx, attributeSeriesSinceQuery, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: attribute series since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := map[int64][]AttributeSample{}
	for rows.Next() {
		a, err := scanAttributeSample(rows)
		if err != nil {
			return nil, fmt.Errorf("store: attribute series since: %w", err)
		}
		out[a.QueueID] = append(out[a.QueueID], a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: attribute series since: %w", err)
	}
	return out, nil
}
