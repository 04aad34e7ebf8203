package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// SelectionJob is a selective redrive: toolq receives the chosen messages of a dead-letter queue,
// sends each to its destination and deletes it from the DLQ, step by step in its journal
// (JournalEntry). It is listed with the move tasks as the MoveTask of Kind KindSelection, whose
// Moved counts the messages deleted from the DLQ after their send and ToMove those matched. A
// discard (KindDiscard) is the same job with the archive in place of the send; a restore
// (KindRestore) sends archived messages of the queue to a queue again.
type SelectionJob struct {
	MoveTask
	// Selection is what the job moves, as JSON (engine.Selection).
	Selection string
	Actor     string
	// Counts, besides MoveTask.Moved: the messages that matched, those that did not and were held
	// until the scan ended, those held and then released, those that matched but could not be
	// moved (left in the DLQ), and how many the scan could not reach (the DLQ's visible messages
	// when it stopped at the in-flight limit).
	Matched, Held, Released, Failed, NotReached int64
	EndedAt                                     time.Time
}

// Journal states of a message a job touched. A state is written before the step it names is
// taken: a restarted job reads it to know what may have happened.
const (
	// JournalHeld: it did not match; the job holds it until its scan ends.
	JournalHeld = "held"
	// JournalReleased: it was held and is visible again.
	JournalReleased = "released"
	// JournalSending: it matched and is being sent, with a deduplication id of the job's.
	JournalSending = "sending"
	// JournalSent: its send succeeded (NewMessageID); its delete from the DLQ comes next.
	JournalSent = "sent"
	// JournalDeleted: it left the DLQ after its send: moved.
	JournalDeleted = "deleted"
	// JournalFailed: it matched but could not be moved (Error says why); it stays in the DLQ.
	JournalFailed = "failed"
)

// JournalEntry is one message a job touched, as far as it went.
type JournalEntry struct {
	MessageID      string
	State          string
	DestinationARN string
	GroupID        string
	// ReceiptHandle is the handle of the job's latest receive of it, to release a held message.
	ReceiptHandle string
	NewMessageID  string // the id SQS gave the sent copy
	BodyHash      string
	ToolCallID    string
	ToolName      string
	Dimensions    map[string]string
	Error         string
	UpdatedAt     time.Time
}

const selectionJobColumns = `mt.id, mt.queue_id, mt.task_handle, mt.status, mt.source_arn, mt.destination_arn,
	mt.max_per_second, mt.moved, mt.to_move, mt.failure_reason, mt.started_at, mt.updated_at, mt.kind,
	sj.selection, sj.actor, sj.matched, sj.held, sj.released, sj.failed, sj.not_reached, sj.ended_at`

const selectionJobFrom = ` FROM move_tasks mt JOIN selection_jobs sj ON sj.move_task_id = mt.id`

func scanSelectionJob(r rowScanner) (SelectionJob, error) {
	var j SelectionJob
	var started, updated, ended int64
	err := r.Scan(&j.ID, &j.QueueID, &j.TaskHandle, &j.Status, &j.SourceARN, &j.DestinationARN,
		&j.MaxPerSecond, &j.Moved, &j.ToMove, &j.FailureReason, &started, &updated, &j.Kind,
		&j.Selection, &j.Actor, &j.Matched, &j.Held, &j.Released, &j.Failed, &j.NotReached, &ended)
	if err != nil {
		return SelectionJob{}, err
	}
	j.StartedAt, j.UpdatedAt, j.EndedAt = fromMS(started), fromMS(updated), fromMS(ended)
	return j, nil
}

// CreateSelectionJob stores a new job, RUNNING, and returns it with its id. The caller holds the
// queue's action lock and has checked that nothing else redrives it.
func (s *Store) CreateSelectionJob(ctx context.Context, j SelectionJob) (SelectionJob, error) {
	if j.SourceARN == "" || j.StartedAt.IsZero() || j.Selection == "" {
		return SelectionJob{}, fmt.Errorf("store: create selection job: source ARN, start time and selection are required")
	}
	if j.Kind != KindDiscard && j.Kind != KindRestore {
		j.Kind = KindSelection
	}
	j.Status = MoveTaskRunning
	err := s.inTx(ctx, func(tx *dbTx) error {
		// A redrive is keyed by its queue and start: a job started within the millisecond of the
		// queue's last redrive starts a millisecond after it.
		var last int64
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(started_at), 0) FROM move_tasks WHERE source_arn = ?`, j.SourceARN).Scan(&last); err != nil {
			return err
		}
		if ms(j.StartedAt) <= last {
			j.StartedAt = fromMS(last + 1)
		}
		j.UpdatedAt = j.StartedAt
		if err := tx.QueryRowContext(ctx, `
			INSERT INTO move_tasks (queue_id, task_handle, status, source_arn, destination_arn, max_per_second,
				moved, to_move, failure_reason, started_at, updated_at, kind)
			VALUES (?, ?, ?, ?, ?, ?, 0, 0, '', ?, ?, ?) RETURNING id`,
			j.QueueID, j.TaskHandle, j.Status, j.SourceARN, j.DestinationARN, j.MaxPerSecond,
			ms(j.StartedAt), ms(j.UpdatedAt), j.Kind).Scan(&j.ID); err != nil {
			return notFoundOnFK(err)
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO selection_jobs (move_task_id, queue_id, selection, actor) VALUES (?, ?, ?, ?)`,
			j.ID, j.QueueID, j.Selection, j.Actor)
		return err
	})
	if err != nil {
		return SelectionJob{}, fmt.Errorf("store: create selection job of %q: %w", j.SourceARN, err)
	}
	return j, nil
}

// GetSelectionJob returns the job whose move task row has that id, ErrNotFound when there is none.
func (s *Store) GetSelectionJob(ctx context.Context, id int64) (SelectionJob, error) {
	j, err := scanSelectionJob(s.db.QueryRowContext(ctx, "SELECT "+selectionJobColumns+selectionJobFrom+" WHERE mt.id = ?", id))
	if err != nil {
		return SelectionJob{}, fmt.Errorf("store: selection job %d: %w", id, notFound(err))
	}
	return j, nil
}

// SelectionJobs returns the jobs among the move task ids, by id (the others are left out).
func (s *Store) SelectionJobs(ctx context.Context, ids []int64) (map[int64]SelectionJob, error) {
	out := map[int64]SelectionJob{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := sampleIDList(ids)
	if err != nil {
		return nil, fmt.Errorf("store: selection jobs: %w", err)
	}
	jobs, err := s.querySelectionJobs(ctx, "SELECT "+selectionJobColumns+" FROM "+s.d.idTable("?")+
		" j JOIN move_tasks mt ON mt.id = j.value JOIN selection_jobs sj ON sj.move_task_id = mt.id", list)
	if err != nil {
		return nil, fmt.Errorf("store: selection jobs: %w", err)
	}
	for _, j := range jobs {
		out[j.ID] = j
	}
	return out, nil
}

// RunnableSelectionJobs returns every job still RUNNING or CANCELLING, oldest first: the jobs a
// leader runs, or resumes after a restart or a takeover.
func (s *Store) RunnableSelectionJobs(ctx context.Context) ([]SelectionJob, error) {
	jobs, err := s.querySelectionJobs(ctx, "SELECT "+selectionJobColumns+selectionJobFrom+
		" WHERE mt.status IN (?, ?) ORDER BY mt.started_at, mt.id", MoveTaskRunning, MoveTaskCancelling)
	if err != nil {
		return nil, fmt.Errorf("store: runnable selection jobs: %w", err)
	}
	return jobs, nil
}

// RunningSelectionJob returns the job still RUNNING or CANCELLING on a dead-letter queue,
// ErrNotFound when none is.
func (s *Store) RunningSelectionJob(ctx context.Context, queueID int64) (SelectionJob, error) {
	j, err := scanSelectionJob(s.db.QueryRowContext(ctx, "SELECT "+selectionJobColumns+selectionJobFrom+
		" WHERE sj.queue_id = ? AND mt.status IN (?, ?) ORDER BY mt.started_at LIMIT 1", queueID, MoveTaskRunning, MoveTaskCancelling))
	if err != nil {
		return SelectionJob{}, fmt.Errorf("store: running selection job of queue %d: %w", queueID, notFound(err))
	}
	return j, nil
}

func (s *Store) querySelectionJobs(ctx context.Context, query string, args ...any) ([]SelectionJob, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []SelectionJob{}
	for rows.Next() {
		j, err := scanSelectionJob(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, j)
	}
	return out, rows.Err()
}

// SaveSelectionJob writes a job's status, failure reason and counts. A job that has ended keeps
// its end: a status other than RUNNING or CANCELLING is never changed again.
func (s *Store) SaveSelectionJob(ctx context.Context, j SelectionJob) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		n, err := execCount(ctx, tx, `
			UPDATE move_tasks SET status = ?, moved = ?, to_move = ?, failure_reason = ?, updated_at = ?
			WHERE id = ? AND status IN (?, ?)`,
			j.Status, j.Moved, j.Matched, j.FailureReason, ms(j.UpdatedAt), j.ID, MoveTaskRunning, MoveTaskCancelling)
		if err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			UPDATE selection_jobs SET matched = ?, held = ?, released = ?, failed = ?, not_reached = ?, ended_at = ?
			WHERE move_task_id = ?`,
			j.Matched, j.Held, j.Released, j.Failed, j.NotReached, ms(j.EndedAt), j.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: save selection job %d: %w", j.ID, err)
	}
	return nil
}

// CancelSelectionJob marks a RUNNING job CANCELLING, for its runner to stop at its next step and
// release what it holds. It reports false when the job was not running.
func (s *Store) CancelSelectionJob(ctx context.Context, id int64, now time.Time) (bool, error) {
	var n int64
	err := s.inTx(ctx, func(tx *dbTx) error {
		var err error
		n, err = execCount(ctx, tx, `UPDATE move_tasks SET status = ?, updated_at = ? WHERE id = ? AND kind <> ? AND status = ?`,
			MoveTaskCancelling, ms(now), id, KindMoveTask, MoveTaskRunning)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: cancel selection job %d: %w", id, err)
	}
	return n > 0, nil
}

// WriteJournal writes the entries of one job in one transaction, each replacing the message's
// earlier entry.
func (s *Store) WriteJournal(ctx context.Context, jobID int64, entries []JournalEntry) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.inTx(ctx, func(tx *dbTx) error { return writeJournal(ctx, tx, jobID, entries) })
	if err != nil {
		return fmt.Errorf("store: journal of job %d: %w", jobID, err)
	}
	return nil
}

// writeJournal writes journal entries within a transaction.
func writeJournal(ctx context.Context, tx *dbTx, jobID int64, entries []JournalEntry) error {
	for _, e := range entries {
		dims, err := json.Marshal(e.Dimensions)
		if err != nil {
			return err
		}
		if e.Dimensions == nil {
			dims = []byte("{}")
		}
		if _, err := tx.ExecContext(ctx, `
				INSERT INTO selection_journal (move_task_id, message_id, state, destination_arn, group_id,
					receipt_handle, new_message_id, body_hash, tool_call_id, tool_name, dimensions, error, updated_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (move_task_id, message_id) DO UPDATE SET
					state = excluded.state, destination_arn = excluded.destination_arn, group_id = excluded.group_id,
					receipt_handle = excluded.receipt_handle, new_message_id = excluded.new_message_id,
					body_hash = excluded.body_hash, tool_call_id = excluded.tool_call_id,
					tool_name = excluded.tool_name, dimensions = excluded.dimensions, error = excluded.error,
					updated_at = excluded.updated_at`,
			jobID, e.MessageID, e.State, e.DestinationARN, e.GroupID, e.ReceiptHandle, e.NewMessageID,
			e.BodyHash, e.ToolCallID, e.ToolName, string(dims), e.Error, ms(e.UpdatedAt)); err != nil {
			return err
		}
	}
	return nil
}

const journalColumns = `message_id, state, destination_arn, group_id, receipt_handle, new_message_id,
	body_hash, tool_call_id, tool_name, dimensions, error, updated_at`

func scanJournalEntry(r rowScanner) (JournalEntry, error) {
	var e JournalEntry
	var dims string
	var updated int64
	if err := r.Scan(&e.MessageID, &e.State, &e.DestinationARN, &e.GroupID, &e.ReceiptHandle, &e.NewMessageID,
		&e.BodyHash, &e.ToolCallID, &e.ToolName, &dims, &e.Error, &updated); err != nil {
		return JournalEntry{}, err
	}
	if err := json.Unmarshal([]byte(dims), &e.Dimensions); err != nil {
		return JournalEntry{}, fmt.Errorf("dimensions of %q: %w", e.MessageID, err)
	}
	e.UpdatedAt = fromMS(updated)
	return e, nil
}

// JournalOf returns the journal entries of a job for the message ids it has them for, by id.
func (s *Store) JournalOf(ctx context.Context, jobID int64, messageIDs []string) (map[string]JournalEntry, error) {
	out := make(map[string]JournalEntry, len(messageIDs))
	if len(messageIDs) == 0 {
		return out, nil
	}
	list, err := json.Marshal(messageIDs)
	if err != nil {
		return nil, fmt.Errorf("store: journal of job %d: %w", jobID, err)
	}
	// The ids drive the lookup, each one a seek of the primary key: the journal grows with the
	// DLQ, and a join the planner led with the journal read all of it for every receive.
	entries, err := s.queryJournal(ctx, "SELECT "+journalColumns+" FROM selection_journal WHERE move_task_id = ? AND message_id IN (SELECT value FROM "+s.d.textTable("?")+" j)", jobID, string(list))
	if err != nil {
		return nil, fmt.Errorf("store: journal of job %d: %w", jobID, err)
	}
	for _, e := range entries {
		out[e.MessageID] = e
	}
	return out, nil
}

// JournalInState returns up to limit entries of a job in a state, by message id after the given
// one (for paging through them: "" starts at the first).
func (s *Store) JournalInState(ctx context.Context, jobID int64, state, after string, limit int) ([]JournalEntry, error) {
	entries, err := s.queryJournal(ctx, "SELECT "+journalColumns+` FROM selection_journal
		WHERE move_task_id = ? AND state = ? AND message_id > ? ORDER BY message_id LIMIT ?`, jobID, state, after, limit)
	if err != nil {
		return nil, fmt.Errorf("store: journal of job %d in state %s: %w", jobID, state, err)
	}
	return entries, nil
}

func (s *Store) queryJournal(ctx context.Context, query string, args ...any) ([]JournalEntry, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []JournalEntry{}
	for rows.Next() {
		e, err := scanJournalEntry(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// RememberSelection keeps, for a selection job that has ended, the identities of the messages it
// moved (its journal's deleted entries), as RememberRedrive keeps a move task's: what comes back
// to the dead-letter queue afterwards is then counted as the move tasks' bounce-backs are. The
// job knows exactly what it moved, so its memory covers the whole of it (SampleID is the job's
// own id, Seen and ApproxVisible the messages moved). Once: a second call changes nothing.
func (s *Store) RememberSelection(ctx context.Context, jobID int64, now time.Time) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		var queueID, started, moved int64
		if err := tx.QueryRowContext(ctx, `
			SELECT mt.queue_id, mt.started_at, (SELECT count(*) FROM selection_journal WHERE move_task_id = mt.id AND state = ?)
			FROM move_tasks mt WHERE mt.id = ? AND mt.kind = ?`, JournalDeleted, jobID, KindSelection).Scan(&queueID, &started, &moved); err != nil {
			return notFound(err)
		}
		n, err := execCount(ctx, tx, `
			INSERT INTO redrive_samples (move_task_id, queue_id, sample_id, sample_at, seen, approx_visible, capped, remembered_at)
			VALUES (?, ?, ?, ?, ?, ?, FALSE, ?) ON CONFLICT (move_task_id) DO NOTHING`,
			jobID, queueID, jobID, started, moved, moved, ms(now))
		if err != nil || n == 0 {
			return err
		}
		_, err = tx.ExecContext(ctx, `
			INSERT INTO redrive_messages (move_task_id, message_id, body_hash, tool_call_id, tool_name, group_id, dimensions, destination_arn)
			SELECT move_task_id, message_id, body_hash, tool_call_id, tool_name, group_id, dimensions, destination_arn
			FROM selection_journal WHERE move_task_id = ? AND state = ?
			ON CONFLICT (move_task_id, message_id) DO NOTHING`, jobID, JournalDeleted)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: remember selection job %d: %w", jobID, err)
	}
	return nil
}

// JournalCounts counts a job's journal entries by state: what a resumed job counts from.
func (s *Store) JournalCounts(ctx context.Context, jobID int64) (map[string]int64, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT state, count(*) FROM selection_journal WHERE move_task_id = ? GROUP BY state`, jobID)
	if err != nil {
		return nil, fmt.Errorf("store: journal counts of job %d: %w", jobID, err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("store: journal counts of job %d: %w", jobID, err)
		}
		out[state] = n
	}
	return out, rows.Err()
}
