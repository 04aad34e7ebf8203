package store

import (
	"context"
	"fmt"
)

const moveTaskColumns = `id, queue_id, task_handle, status, source_arn, destination_arn, max_per_second,
	moved, to_move, failure_reason, started_at, updated_at, kind`

func scanMoveTask(r rowScanner) (MoveTask, error) {
	var t MoveTask
	var started, updated int64
	err := r.Scan(&t.ID, &t.QueueID, &t.TaskHandle, &t.Status, &t.SourceARN, &t.DestinationARN,
		&t.MaxPerSecond, &t.Moved, &t.ToMove, &t.FailureReason, &started, &updated, &t.Kind)
	if err != nil {
		return MoveTask{}, err
	}
	t.StartedAt, t.UpdatedAt = fromMS(started), fromMS(updated)
	return t, nil
}

// UpsertMoveTask stores a task keyed by (SourceARN, StartedAt) and returns its id.
func (s *Store) UpsertMoveTask(ctx context.Context, t MoveTask) (int64, error) {
	if t.SourceARN == "" || t.StartedAt.IsZero() {
		return 0, fmt.Errorf("store: upsert move task: source ARN and start time are required")
	}
	if t.UpdatedAt.IsZero() {
		t.UpdatedAt = t.StartedAt
	}
	// SQS drops the TaskHandle from ListMessageMoveTasks once a task ends, so an update without a
	// handle keeps the one StartMessageMoveTask gave.
	var id int64
	err := s.wdb.QueryRowContext(ctx, `
		INSERT INTO move_tasks (queue_id, task_handle, status, source_arn, destination_arn, max_per_second,
			moved, to_move, failure_reason, started_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (source_arn, started_at) DO UPDATE SET
			queue_id = excluded.queue_id,
			task_handle = CASE WHEN excluded.task_handle <> '' THEN excluded.task_handle ELSE move_tasks.task_handle END,
			status = excluded.status, destination_arn = excluded.destination_arn,
			max_per_second = excluded.max_per_second, moved = excluded.moved, to_move = excluded.to_move,
			failure_reason = excluded.failure_reason, updated_at = excluded.updated_at
		RETURNING id`,
		t.QueueID, t.TaskHandle, t.Status, t.SourceARN, t.DestinationARN, t.MaxPerSecond, t.Moved, t.ToMove,
		t.FailureReason, ms(t.StartedAt), ms(t.UpdatedAt)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: upsert move task of %q: %w", t.SourceARN, notFoundOnFK(err))
	}
	return id, nil
}

// ListMoveTasks returns a dead-letter queue's tasks, newest first; limit 0 means all.
func (s *Store) ListMoveTasks(ctx context.Context, queueID int64, limit int) ([]MoveTask, error) {
	query := "SELECT " + moveTaskColumns + " FROM move_tasks WHERE queue_id = ? ORDER BY started_at DESC, id DESC"
	args := []any{queueID}
	if limit > 0 {
		query += " LIMIT ?"
		args = append(args, limit)
	}
	ts, err := s.queryMoveTasks(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: move tasks of queue %d: %w", queueID, err)
	}
	return ts, nil
}

// RecentMoveTasks returns every dead-letter queue's newest tasks, at most perQueue of each,
// newest first, by queue id, in one query.
func (s *Store) RecentMoveTasks(ctx context.Context, perQueue int) (map[int64][]MoveTask, error) {
	ts, err := s.queryMoveTasks(ctx, `
		SELECT `+moveTaskColumns+` FROM (
			SELECT move_tasks.*, row_number() OVER (PARTITION BY queue_id ORDER BY started_at DESC, id DESC) AS n
			FROM move_tasks) AS recent
		WHERE n <= ? ORDER BY queue_id, started_at DESC, id DESC`, perQueue)
	if err != nil {
		return nil, fmt.Errorf("store: recent move tasks: %w", err)
	}
	out := map[int64][]MoveTask{}
	for _, t := range ts {
		out[t.QueueID] = append(out[t.QueueID], t)
	}
	return out, nil
}

// GetMoveTask returns the move task with that id, ErrNotFound when there is none.
func (s *Store) GetMoveTask(ctx context.Context, id int64) (MoveTask, error) {
	t, err := scanMoveTask(s.db.QueryRowContext(ctx, "SELECT "+moveTaskColumns+" FROM move_tasks WHERE id = ?", id))
	if err != nil {
		return MoveTask{}, fmt.Errorf("store: move task %d: %w", id, notFound(err))
	}
	return t, nil
}

// RunningMoveTasks returns every SQS move task still RUNNING or CANCELLING (toolq's own selection
// jobs are not among them: SQS does not list those).
func (s *Store) RunningMoveTasks(ctx context.Context) ([]MoveTask, error) {
	ts, err := s.queryMoveTasks(ctx, "SELECT "+moveTaskColumns+
		" FROM move_tasks WHERE status IN (?, ?) AND kind = ? ORDER BY started_at, id", MoveTaskRunning, MoveTaskCancelling, KindMoveTask)
	if err != nil {
		return nil, fmt.Errorf("store: running move tasks: %w", err)
	}
	return ts, nil
}

func (s *Store) queryMoveTasks(ctx context.Context, query string, args ...any) ([]MoveTask, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []MoveTask{}
	for rows.Next() {
		t, err := scanMoveTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
