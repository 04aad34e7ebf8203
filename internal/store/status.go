package store

import (
	"context"
	"fmt"
)

// SaveOperationStatuses records what the collector learned of AWS operations since it last
// saved them. Times only move forward: a status written late by a slow cycle never hides a
// newer success or failure.
func (s *Store) SaveOperationStatuses(ctx context.Context, statuses []OperationStatus) error {
	if len(statuses) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *dbTx) error {
		stmt, err := tx.PrepareContext(ctx, `
			INSERT INTO aws_operations (region, operation, last_success_at, last_failure_at, failure_code,
				failure_message, failure_status, failures_in_row, backoff_until)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (region, operation) DO UPDATE SET
				last_success_at = greatest(aws_operations.last_success_at, excluded.last_success_at),
				failure_code = CASE WHEN excluded.last_failure_at >= aws_operations.last_failure_at THEN excluded.failure_code ELSE aws_operations.failure_code END,
				failure_message = CASE WHEN excluded.last_failure_at >= aws_operations.last_failure_at THEN excluded.failure_message ELSE aws_operations.failure_message END,
				failure_status = CASE WHEN excluded.last_failure_at >= aws_operations.last_failure_at THEN excluded.failure_status ELSE aws_operations.failure_status END,
				last_failure_at = greatest(aws_operations.last_failure_at, excluded.last_failure_at),
				failures_in_row = excluded.failures_in_row,
				backoff_until = excluded.backoff_until`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, o := range statuses {
			if _, err := stmt.ExecContext(ctx, o.Region, o.Operation, ms(o.LastSuccessAt), ms(o.LastFailureAt),
				o.FailureCode, o.FailureMessage, o.FailureStatus, o.FailuresInRow, ms(o.BackoffUntil)); err != nil {
				return fmt.Errorf("%s in %s: %w", o.Operation, o.Region, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save operation statuses: %w", err)
	}
	return nil
}

// OperationStatuses returns every recorded operation status, by region and operation.
func (s *Store) OperationStatuses(ctx context.Context) ([]OperationStatus, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT region, operation, last_success_at, last_failure_at, failure_code, failure_message,
			failure_status, failures_in_row, backoff_until
		FROM aws_operations ORDER BY region, operation`)
	if err != nil {
		return nil, fmt.Errorf("store: operation statuses: %w", err)
	}
	defer rows.Close()
	out := []OperationStatus{}
	for rows.Next() {
		var o OperationStatus
		var success, failure, backoff int64
		if err := rows.Scan(&o.Region, &o.Operation, &success, &failure, &o.FailureCode, &o.FailureMessage,
			&o.FailureStatus, &o.FailuresInRow, &backoff); err != nil {
			return nil, fmt.Errorf("store: operation statuses: %w", err)
		}
		o.LastSuccessAt, o.LastFailureAt, o.BackoffUntil = fromMS(success), fromMS(failure), fromMS(backoff)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: operation statuses: %w", err)
	}
	return out, nil
}

// SaveLoopStatus records the last cycle of a collector loop in one region. LastSuccessAt zero
// keeps the one stored.
func (s *Store) SaveLoopStatus(ctx context.Context, l LoopStatus) error {
	_, err := s.wdb.ExecContext(ctx, `
		INSERT INTO collector_loops (loop, region, finished_at, last_success_at, queues, failed_queues, calls, failures)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (loop, region) DO UPDATE SET
			finished_at = excluded.finished_at,
			last_success_at = greatest(collector_loops.last_success_at, excluded.last_success_at),
			queues = excluded.queues, failed_queues = excluded.failed_queues,
			calls = excluded.calls, failures = excluded.failures`,
		l.Loop, l.Region, ms(l.FinishedAt), ms(l.LastSuccessAt), l.Queues, l.FailedQueues, l.Calls, l.Failures)
	if err != nil {
		return fmt.Errorf("store: save %s loop status of %s: %w", l.Loop, l.Region, err)
	}
	return nil
}

// LoopStatuses returns the last cycle of every loop in every region, by region and loop.
func (s *Store) LoopStatuses(ctx context.Context) ([]LoopStatus, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT loop, region, finished_at, last_success_at, queues, failed_queues, calls, failures
		FROM collector_loops ORDER BY region, loop`)
	if err != nil {
		return nil, fmt.Errorf("store: loop statuses: %w", err)
	}
	defer rows.Close()
	out := []LoopStatus{}
	for rows.Next() {
		var l LoopStatus
		var finished, success int64
		if err := rows.Scan(&l.Loop, &l.Region, &finished, &success, &l.Queues, &l.FailedQueues, &l.Calls, &l.Failures); err != nil {
			return nil, fmt.Errorf("store: loop statuses: %w", err)
		}
		l.FinishedAt, l.LastSuccessAt = fromMS(finished), fromMS(success)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: loop statuses: %w", err)
	}
	return out, nil
}

// ForgetScopesExcept deletes the operation and loop statuses of every scope but those given, and
// returns how many rows went. A scope the collector no longer watches (a region dropped from
// --region, a database moved to --account) would otherwise keep its last state on /status and
// in the sight for good, and a failure among them would read as a region toolq cannot see.
func (s *Store) ForgetScopesExcept(ctx context.Context, scopes []string) (int64, error) {
	if len(scopes) == 0 {
		return 0, nil // nothing is watched: nothing to tell the stale from
	}
	args := make([]any, len(scopes))
	for i, sc := range scopes {
		args[i] = sc
	}
	var forgotten int64
	err := s.inTx(ctx, func(tx *dbTx) error {
		for _, table := range []string{"aws_operations", "collector_loops"} {
			res, err := tx.ExecContext(ctx, "DELETE FROM "+table+" WHERE region NOT IN ("+placeholders(len(scopes))+")", args...)
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("%s: %w", table, err)
			}
			forgotten += n
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: forget scopes: %w", err)
	}
	return forgotten, nil
}
