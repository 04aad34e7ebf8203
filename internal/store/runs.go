package store

import (
	"context"
	"fmt"
	"time"
)

// StartRun records the start of a collector pass and returns its id.
func (s *Store) StartRun(ctx context.Context, kind string, at time.Time) (int64, error) {
	var id int64
	err := s.wdb.QueryRowContext(ctx,
		"INSERT INTO collector_runs (kind, started_at) VALUES (?, ?) RETURNING id", kind, ms(at)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: start %s run: %w", kind, err)
	}
	return id, nil
}

// FinishRun records the end of a pass (FinishedAt, Queues, Calls, Errors) by run.ID.
func (s *Store) FinishRun(ctx context.Context, run CollectorRun) error {
	err := s.execOne(ctx, `
		UPDATE collector_runs SET finished_at = ?, queues = ?, calls = ?, errors = ? WHERE id = ?`,
		ms(run.FinishedAt), run.Queues, run.Calls, run.Errors, run.ID)
	if err != nil {
		return fmt.Errorf("store: finish run %d: %w", run.ID, err)
	}
	return nil
}

// usefulRun is the SQL condition of a finished run that collected something: not every one of
// its calls failed (a call skipped while its operation is backed off counts as an error with no
// call). A run whose every call failed (the endpoint unreachable, every request
// denied) stored nothing new, so it must not make the data look fresh.
const usefulRun = `finished_at > 0 AND ((calls = 0 AND errors = 0) OR errors < calls)`

// LatestRun returns the newest finished run of a kind that collected something (see usefulRun):
// what freshness and readiness measure the age of the data by.
func (s *Store) LatestRun(ctx context.Context, kind string) (CollectorRun, error) {
	var r CollectorRun
	var started, finished int64
	err := s.db.QueryRowContext(ctx, `
		SELECT id, kind, started_at, finished_at, queues, calls, errors FROM collector_runs
		WHERE kind = ? AND `+usefulRun+` ORDER BY finished_at DESC, id DESC LIMIT 1`, kind).
		Scan(&r.ID, &r.Kind, &started, &finished, &r.Queues, &r.Calls, &r.Errors)
	if err != nil {
		return CollectorRun{}, fmt.Errorf("store: latest %s run: %w", kind, notFound(err))
	}
	r.StartedAt, r.FinishedAt = fromMS(started), fromMS(finished)
	return r, nil
}

// RecordError stores a failed AWS call.
func (s *Store) RecordError(ctx context.Context, e CollectorError) error {
	_, err := s.wdb.ExecContext(ctx, `
		INSERT INTO collector_errors (run_id, queue_id, operation, code, message, at) VALUES (?, ?, ?, ?, ?, ?)`,
		e.RunID, e.QueueID, e.Operation, e.Code, e.Message, ms(e.At))
	if err != nil {
		return fmt.Errorf("store: record %s error: %w", e.Operation, err)
	}
	return nil
}

// ErrorsSince returns errors since a time, newest first; queueID 0 means every queue.
func (s *Store) ErrorsSince(ctx context.Context, queueID int64, since time.Time) ([]CollectorError, error) {
	query := "SELECT id, run_id, queue_id, operation, code, message, at FROM collector_errors WHERE at >= ?"
	args := []any{ms(since)}
	if queueID != 0 {
		query += " AND queue_id = ?"
		args = append(args, queueID)
	}
	query += " ORDER BY at DESC, id DESC"
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: errors since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	out := []CollectorError{}
	for rows.Next() {
		var e CollectorError
		var at int64
		if err := rows.Scan(&e.ID, &e.RunID, &e.QueueID, &e.Operation, &e.Code, &e.Message, &at); err != nil {
			return nil, fmt.Errorf("store: errors since: %w", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: errors since: %w", err)
	}
	return out, nil
}

// LatestFinishedRun returns the newest finished run of a kind, whatever it collected: readiness
// asks only whether a first attempt has ended.
func (s *Store) LatestFinishedRun(ctx context.Context, kind string) (CollectorRun, error) {
	var r CollectorRun
	var started, finished int64
	err := s.db.QueryRowContext(ctx, `
		SELECT id, kind, started_at, finished_at, queues, calls, errors FROM collector_runs
		WHERE kind = ? AND finished_at > 0 ORDER BY finished_at DESC, id DESC LIMIT 1`, kind).
		Scan(&r.ID, &r.Kind, &started, &finished, &r.Queues, &r.Calls, &r.Errors)
	if err != nil {
		return CollectorRun{}, fmt.Errorf("store: latest finished %s run: %w", kind, notFound(err))
	}
	r.StartedAt, r.FinishedAt = fromMS(started), fromMS(finished)
	return r, nil
}

// RunsSince returns the finished runs of a kind that started at or after since, oldest first.
func (s *Store) RunsSince(ctx context.Context, kind string, since time.Time) ([]CollectorRun, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, kind, started_at, finished_at, queues, calls, errors FROM collector_runs
		WHERE kind = ? AND started_at >= ? AND finished_at > 0 ORDER BY started_at, id`, kind, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: %s runs since %s: %w", kind, since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []CollectorRun
	for rows.Next() {
		var r CollectorRun
		var started, finished int64
		if err := rows.Scan(&r.ID, &r.Kind, &started, &finished, &r.Queues, &r.Calls, &r.Errors); err != nil {
			return nil, fmt.Errorf("store: %s runs: %w", kind, err)
		}
		r.StartedAt, r.FinishedAt = fromMS(started), fromMS(finished)
		out = append(out, r)
	}
	return out, rows.Err()
}
