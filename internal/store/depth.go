package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

const latestAttributeSamplesQuery = `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id AND a.at = (SELECT max(at) FROM attribute_samples WHERE queue_id = q.id)
	ORDER BY q.id, a.resolution`

// LatestAttributeSamples returns each queue's newest depth sample, by queue id. It answers from
// memory (recentDepth), which it loads from SQLite the first time.
func (s *Store) LatestAttributeSamples(ctx context.Context) (map[int64]AttributeSample, error) {
	return s.depth.latestSamples(ctx, s.latestAttributeSamples)
}

// latestAttributeSamples reads each queue's newest depth sample from SQLite.
func (s *Store) latestAttributeSamples(ctx context.Context) (map[int64]AttributeSample, error) {
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

// visiblePeaksQuery is VisiblePeaks' query: over every queue, or over queue ?4 alone.
func visiblePeaksQuery(oneQueue bool) string {
	q := `
	SELECT q.id, (
		SELECT string_agg(bucket || ':' || visible, ',') FROM (
			SELECT (at - ?1) / ?3 AS bucket, max(visible) AS visible FROM attribute_samples
			WHERE queue_id = q.id AND at >= ?1 AND at <= ?2
			GROUP BY bucket) AS peaks)
	FROM queues q`
	if oneQueue {
		q += " WHERE q.id = ?4"
	}
	return q
}

// VisiblePeaks returns each queue's highest visible depth per bucket of width, the buckets
// counted from since, over the depth samples in [since, until] (both included), oldest bucket
// first, by queue id; a bucket without samples is absent, and so is a queue without any. With
// queueID not 0 it reads only that queue. Within the last hour or so it answers from memory
// (recentDepth); further back, SQLite buckets the samples itself.
func (s *Store) VisiblePeaks(ctx context.Context, queueID int64, since, until time.Time, width time.Duration) (map[int64][]DepthPeak, error) {
	out, covered, err := recentPeaks(s, ctx, queueID, since, until, width,
		func(start, visible int64) DepthPeak { return DepthPeak{Start: fromMS(start), Visible: visible} },
		func(p *DepthPeak, visible int64) { p.Visible = max(p.Visible, visible) })
	if err != nil || covered {
		return out, err
	}
	return s.visiblePeaks(ctx, queueID, since, until, width)
}

// VisiblePeakValues is VisiblePeaks without the buckets' times: the peaks alone, oldest first,
// as the overview's sparklines draw them. A thousand queues' hour of minutes is 60,000 peaks,
// which as values cost a quarter of the memory and none of the time conversions.
//
// Every queue's sparklines in whole minutes, as the overview reads them, come from the memory's
// values of each queue's minutes (recentDepth.values), kept as samples come: the lists are
// shared between readers, which must not change them.
func (s *Store) VisiblePeakValues(ctx context.Context, queueID int64, since, until time.Time, width time.Duration) (map[int64][]float64, error) {
	if from := msCeil(since); queueID == 0 && width == time.Minute && from%minuteMS == 0 {
		out, covered, err := s.depth.sparklines(ctx, from, ms(until), s.recentDepthSamples)
		if err != nil {
			return nil, fmt.Errorf("store: visible peaks: %w", err)
		}
		if covered {
			return out, nil
		}
	}
	out, covered, err := recentPeaks(s, ctx, queueID, since, until, width, minuteValue,
		func(p *float64, visible int64) { *p = max(*p, float64(visible)) })
	if err != nil || covered {
		return out, err
	}
	peaks, err := s.visiblePeaks(ctx, queueID, since, until, width)
	if err != nil {
		return nil, err
	}
	out = make(map[int64][]float64, len(peaks))
	for id, list := range peaks {
		values := make([]float64, len(list))
		for i, p := range list {
			values[i] = float64(p.Visible)
		}
		out[id] = values
	}
	return out, nil
}

// recentPeaks is VisiblePeaks and VisiblePeakValues from memory: point makes a bucket's peak of
// its start (unix ms) and first sample's visible depth, raise raises it by a later sample of
// the same bucket. It reports false when the memory does not cover since.
func recentPeaks[P any](s *Store, ctx context.Context, queueID int64, since, until time.Time, width time.Duration,
	point func(start, visible int64) P, raise func(p *P, visible int64)) (map[int64][]P, bool, error) {
	if width < time.Millisecond {
		return nil, false, fmt.Errorf("store: visible peaks: bucket width %s is under a millisecond", width)
	}
	// The samples' times are milliseconds: the first that is not before since is since rounded
	// up, and buckets counted from it put each sample where since itself would.
	from, to, widthMS := msCeil(since), ms(until), width.Milliseconds()
	var out map[int64][]P
	peaks := func(id int64, ring []depthSample) {
		var list []P
		bucket := int64(-1)
		for _, d := range ring[firstAt(ring, from):] {
			if d.at > to {
				break
			}
			if b := (d.at - from) / widthMS; b != bucket {
				bucket = b
				list = append(list, point(from+b*widthMS, d.visible))
				continue
			}
			raise(&list[len(list)-1], d.visible)
		}
		if len(list) > 0 {
			out[id] = list
		}
	}
	// The sparklines' buckets are whole minutes: those the memory keeps the peak of, all but
	// the one that holds until, which counts only the samples up to it.
	byMinute := widthMS == minuteMS && from%minuteMS == 0
	minutePeaks := func(id int64, ring []depthSample, minutes []minutePeak) {
		if list := minutePeaksOf(ring, minutes, from, to, point); len(list) > 0 {
			out[id] = list
		}
	}
	covered, err := s.depth.window(ctx, from, s.recentDepthSamples, func(v depthView) {
		read := func(id int64) {
			if byMinute {
				minutePeaks(id, v.rings[id], v.minutes[id])
			} else {
				peaks(id, v.rings[id])
			}
		}
		if queueID != 0 {
			out = map[int64][]P{}
			read(queueID)
			return
		}
		out = make(map[int64][]P, len(v.rings))
		for id := range v.rings {
			read(id)
		}
	})
	if err != nil {
		return nil, false, fmt.Errorf("store: visible peaks: %w", err)
	}
	return out, covered, nil
}

// firstAt returns the index of the first sample of ring at or after at (unix ms).
func firstAt(ring []depthSample, at int64) int {
	i, _ := slices.BinarySearchFunc(ring, at, func(d depthSample, at int64) int { return cmpInt(d.at, at) })
	return i
}

// visiblePeaks is VisiblePeaks read from SQLite.
func (s *Store) visiblePeaks(ctx context.Context, queueID int64, since, until time.Time, width time.Duration) (map[int64][]DepthPeak, error) {
	from, widthMS := msCeil(since), width.Milliseconds()
	// One row per queue, its buckets as "bucket:visible,…": grouping each queue's samples in
	// its own small sort, rather than every queue's in one, keeps the sort in memory, and one
	// row instead of sixty saves the rest. Measured at 1,000 queues, one GROUP BY queue_id,
	// bucket over every queue took nearly twice as long (docs/storage.md, Read side).
	args := []any{from, ms(until), widthMS}
	if queueID != 0 {
		args = append(args, queueID)
	}
	rows, err := s.db.QueryContext(ctx, visiblePeaksQuery(queueID != 0), args...)
	if err != nil {
		return nil, fmt.Errorf("store: visible peaks since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := map[int64][]DepthPeak{}
	for rows.Next() {
		var id int64
		var buckets sql.NullString
		if err := rows.Scan(&id, &buckets); err != nil {
			return nil, fmt.Errorf("store: visible peaks: %w", err)
		}
		if !buckets.Valid {
			continue
		}
		peaks, err := parsePeaks(buckets.String, from, widthMS)
		if err != nil {
			return nil, fmt.Errorf("store: visible peaks of queue %d: %w", id, err)
		}
		out[id] = peaks
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: visible peaks: %w", err)
	}
	return out, nil
}

// parsePeaks reads visiblePeaksQuery's "bucket:visible,…" list, oldest bucket first (SQLite does
// not promise string_agg's order).
func parsePeaks(list string, from, widthMS int64) ([]DepthPeak, error) {
	peaks := make([]DepthPeak, 0, strings.Count(list, ",")+1)
	for pair := range strings.SplitSeq(list, ",") {
		b, v, _ := strings.Cut(pair, ":")
		bucket, err := strconv.ParseInt(b, 10, 64)
		if err != nil {
			return nil, err
		}
		visible, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, err
		}
		peaks = append(peaks, DepthPeak{Start: fromMS(from + bucket*widthMS), Visible: visible})
	}
	slices.SortFunc(peaks, func(a, b DepthPeak) int { return a.Start.Compare(b.Start) })
	return peaks, nil
}

// latestAttributeSamplesBetweenQuery is LatestAttributeSamplesBetween's query: over every
// queue, or over queue ?3 alone.
func latestAttributeSamplesBetweenQuery(oneQueue bool) string {
	filter := ""
	if oneQueue {
		filter = " AND q.id = ?3"
	}
	return `
	SELECT a.queue_id, a.at, a.resolution, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id` + filter + ` AND a.at = (
		SELECT max(at) FROM attribute_samples WHERE queue_id = q.id AND at >= ?1 AND at <= ?2)
	ORDER BY q.id, a.resolution DESC`
}

// LatestAttributeSamplesBetween returns each queue's newest depth sample in [since, until] (both
// included), by queue id; a queue without one is absent. With queueID not 0 it reads only that
// queue. This is the growth rule's earlier sample. Where a roll-up and a raw sample share the
// newest time, the roll-up (its bucket's maxima) is the one returned. Within the last hour or so
// it answers from memory (recentDepth).
func (s *Store) LatestAttributeSamplesBetween(ctx context.Context, queueID int64, since, until time.Time) (map[int64]AttributeSample, error) {
	from, to := msCeil(since), ms(until)
	var out map[int64]AttributeSample
	newest := func(id int64, ring []depthSample) {
		i, _ := slices.BinarySearchFunc(ring, to, func(d depthSample, at int64) int {
			if d.at <= at {
				return -1
			}
			return 1
		})
		// i is the first sample after until; the one before it is the newest not after until.
		if i > 0 && ring[i-1].at >= from {
			out[id] = ring[i-1].sample(id)
		}
	}
	covered, err := s.depth.window(ctx, from, s.recentDepthSamples, func(v depthView) {
		if queueID != 0 {
			out = map[int64]AttributeSample{}
			newest(queueID, v.rings[queueID])
			return
		}
		out = make(map[int64]AttributeSample, len(v.rings))
		for id, ring := range v.rings {
			newest(id, ring)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("store: latest attribute samples between: %w", err)
	}
	if covered {
		return out, nil
	}
	return s.latestAttributeSamplesBetween(ctx, queueID, since, until)
}

// latestAttributeSamplesBetween is LatestAttributeSamplesBetween read from SQLite.
func (s *Store) latestAttributeSamplesBetween(ctx context.Context, queueID int64, since, until time.Time) (map[int64]AttributeSample, error) {
	// As in LatestAttributeSamples, the CROSS JOIN makes the correlated max(at) a seek per queue.
	args := []any{msCeil(since), ms(until)}
	if queueID != 0 {
		args = append(args, queueID)
	}
	rows, err := s.db.QueryContext(ctx, latestAttributeSamplesBetweenQuery(queueID != 0), args...)
	if err != nil {
		return nil, fmt.Errorf("store: latest attribute samples between: %w", err)
	}
	defer rows.Close()
	m := map[int64]AttributeSample{}
	for rows.Next() {
		a, err := scanAttributeSample(rows)
		if err != nil {
			return nil, fmt.Errorf("store: latest attribute samples between: %w", err)
		}
		if _, ok := m[a.QueueID]; !ok {
			m[a.QueueID] = a
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: latest attribute samples between: %w", err)
	}
	return m, nil
}

// recentDepthSamplesQuery reads every queue's samples from ?1 on, a range seek per queue.
const recentDepthSamplesQuery = `
	SELECT a.queue_id, a.at, a.visible, a.in_flight, a.delayed
	FROM queues q CROSS JOIN attribute_samples a
	WHERE a.queue_id = q.id AND a.at >= ?1
	ORDER BY q.id, a.at, a.resolution`

// recentDepthSamples loads recentDepth's rings: every queue's samples from since (unix ms) on,
// oldest first. Where a roll-up and a raw sample share a time, the roll-up, which sorts after,
// stays, as in LatestAttributeSamplesBetween.
func (s *Store) recentDepthSamples(ctx context.Context, since int64) (map[int64][]depthSample, error) {
	rows, err := s.db.QueryContext(ctx, recentDepthSamplesQuery, since)
	if err != nil {
		return nil, fmt.Errorf("load recent depth samples: %w", err)
	}
	defer rows.Close()
	rings := map[int64][]depthSample{}
	for rows.Next() {
		var id int64
		var d depthSample
		if err := rows.Scan(&id, &d.at, &d.visible, &d.inFlight, &d.delayed); err != nil {
			return nil, fmt.Errorf("load recent depth samples: %w", err)
		}
		ring := rings[id]
		if n := len(ring); n > 0 && ring[n-1].at == d.at {
			ring[n-1] = d
			continue
		}
		rings[id] = append(ring, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load recent depth samples: %w", err)
	}
	return rings, nil
}

// DepthSamplesSince returns every queue's depth samples from since on, oldest first, by queue id:
// a range seek per queue. Where a roll-up and a raw sample share a time, the roll-up stays, as
// in LatestAttributeSamplesBetween.
func (s *Store) DepthSamplesSince(ctx context.Context, since time.Time) (map[int64][]AttributeSample, error) {
	rows, err := s.db.QueryContext(ctx, recentDepthSamplesQuery, msCeil(since))
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
// imported at once (benchmarks and fixtures build an hour of a thousand queues with it). It
// leaves the queues' attributes alone; SaveQueueAttributes is the collector's way.
func (s *Store) SaveAttributeSamples(ctx context.Context, samples []AttributeSample) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		stmt, err := tx.PrepareContext(ctx, `
			INSERT INTO attribute_samples (queue_id, at, resolution, visible, in_flight, delayed)
			VALUES (?, ?, 0, ?, ?, ?)
			ON CONFLICT (queue_id, at, resolution) DO UPDATE SET
				visible = excluded.visible, in_flight = excluded.in_flight, delayed = excluded.delayed`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, a := range samples {
			if _, err := stmt.ExecContext(ctx, a.QueueID, ms(a.At), a.Visible, a.InFlight, a.Delayed); err != nil {
				return notFoundOnFK(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save %d attribute samples: %w", len(samples), err)
	}
	for _, a := range samples {
		s.depth.added(a)
	}
	return nil
}

// LastEmptyTimes returns, by queue id, the time of each queue's newest depth sample in [since,
// until] that showed no message visible or in flight; a queue without one is absent. Every
// message a queue holds arrived after that time, which bounds the age of its oldest message when
// CloudWatch has no recent datapoint. Within the last hour or so it answers from memory
// (recentDepth), which keeps each queue's newest empty sample as samples are added.
func (s *Store) LastEmptyTimes(ctx context.Context, since, until time.Time) (map[int64]time.Time, error) {
	from, to := msCeil(since), ms(until)
	var out map[int64]time.Time
	covered, err := s.depth.window(ctx, from, s.recentDepthSamples, func(v depthView) {
		out = make(map[int64]time.Time, len(v.empty))
		for id, at := range v.empty {
			if at <= to {
				if at >= from {
					out[id] = fromMS(at)
				}
				continue
			}
			// The newest empty sample is after until (a caller whose clock runs behind the
			// samples'): look for the one before it.
			ring := v.rings[id]
			for i := len(ring) - 1; i >= 0 && ring[i].at >= from; i-- {
				if d := ring[i]; d.at <= to && d.visible+d.inFlight == 0 {
					out[id] = fromMS(d.at)
					break
				}
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("store: last empty times: %w", err)
	}
	if covered {
		return out, nil
	}
	return s.lastEmptyTimes(ctx, from, to)
}

// lastEmptyTimesQuery is each queue's newest sample without messages in [?1, ?2] (unix ms), a
// range seek per queue.
const lastEmptyTimesQuery = `
	SELECT q.id, (SELECT max(a.at) FROM attribute_samples a
		WHERE a.queue_id = q.id AND a.at >= ?1 AND a.at <= ?2 AND a.visible + a.in_flight = 0)
	FROM queues q`

// lastEmptyTimes is LastEmptyTimes read from the database, from and to in unix ms.
func (s *Store) lastEmptyTimes(ctx context.Context, from, to int64) (map[int64]time.Time, error) {
	rows, err := s.db.QueryContext(ctx, lastEmptyTimesQuery, from, to)
	if err != nil {
		return nil, fmt.Errorf("store: last empty times: %w", err)
	}
	return scanQueueTimes(rows, "last empty times")
}

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
