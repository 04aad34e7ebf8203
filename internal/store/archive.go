package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// ArchivedMessage is a message a discard took out of a dead-letter queue, kept whole: its body,
// every message attribute (binary ones as their bytes), every system attribute SQS gave, what
// the triage read of it, and who discarded it when. A restore marks it restored (RestoredAt,
// RestoredTo, RestoreJobID), and retention deletes it.
type ArchivedMessage struct {
	ID        int64
	QueueID   int64 // the dead-letter queue it was discarded from
	QueueARN  string
	JobID     int64 // the discard
	MessageID string
	Body      string
	// MessageAttributes are the message attributes as SQS gave them, by name.
	MessageAttributes map[string]ArchivedAttribute
	// SystemAttributes are every system attribute SQS gave (SentTimestamp,
	// ApproximateReceiveCount, AWSTraceHeader, SenderId, …), as it spelt them.
	SystemAttributes    map[string]string
	GroupID             string
	DeduplicationID     string
	SequenceNumber      string
	DeadLetterSourceARN string
	TraceHeader         string
	SentAt              time.Time
	ReceiveCount        int
	BodyHash            string
	ToolName            string
	ToolCallID          string
	SessionID           string
	Dimensions          map[string]string
	Reason              string
	DiscardedBy         string
	DiscardedAt         time.Time
	RestoredAt          time.Time
	RestoredTo          string
	RestoreJobID        int64
}

// ArchivedAttribute is a message attribute as SQS gave it: its data type and its string or
// binary value (JSON keeps the bytes as base64, byte for byte).
type ArchivedAttribute struct {
	DataType    string `json:"dataType"`
	StringValue string `json:"stringValue,omitempty"`
	BinaryValue []byte `json:"binaryValue,omitempty"`
}

const archivedColumns = `id, queue_id, queue_arn, job_id, message_id, body, message_attributes, system_attributes,
	group_id, deduplication_id, sequence_number, dead_letter_source_arn, trace_header, sent_at,
	receive_count, body_hash, tool_name, tool_call_id, session_id, dimensions, reason, discarded_by,
	discarded_at, restored_at, restored_to, restore_job_id`

func scanArchived(r rowScanner) (ArchivedMessage, error) {
	var m ArchivedMessage
	var attrs, sys, dims string
	var sent, discarded, restored int64
	err := r.Scan(&m.ID, &m.QueueID, &m.QueueARN, &m.JobID, &m.MessageID, &m.Body, &attrs, &sys,
		&m.GroupID, &m.DeduplicationID, &m.SequenceNumber, &m.DeadLetterSourceARN, &m.TraceHeader, &sent,
		&m.ReceiveCount, &m.BodyHash, &m.ToolName, &m.ToolCallID, &m.SessionID, &dims, &m.Reason, &m.DiscardedBy,
		&discarded, &restored, &m.RestoredTo, &m.RestoreJobID)
	if err != nil {
		return ArchivedMessage{}, err
	}
	for _, f := range []struct {
		raw string
		dst any
	}{{attrs, &m.MessageAttributes}, {sys, &m.SystemAttributes}, {dims, &m.Dimensions}} {
		if err := json.Unmarshal([]byte(f.raw), f.dst); err != nil {
			return ArchivedMessage{}, fmt.Errorf("archived message %q: %w", m.MessageID, err)
		}
	}
	m.SentAt, m.DiscardedAt, m.RestoredAt = fromMS(sent), fromMS(discarded), fromMS(restored)
	return m, nil
}

// jsonOr is v as JSON, or empty when v is nil.
func jsonOr(v any, empty string) (string, error) {
	b, err := json.Marshal(v)
	if err != nil || string(b) == "null" {
		return empty, err
	}
	return string(b), nil
}

// Archive stores messages of a discard and the journal entries that say so, in one transaction:
// a message is archived and journaled together, or neither. A message the job archived before
// (a resumed job) is not archived twice.
func (s *Store) Archive(ctx context.Context, jobID int64, msgs []ArchivedMessage, entries []JournalEntry) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		for _, m := range msgs {
			attrs, err := jsonOr(m.MessageAttributes, "{}")
			if err != nil {
				return err
			}
			sys, err := jsonOr(m.SystemAttributes, "{}")
			if err != nil {
				return err
			}
			dims, err := jsonOr(m.Dimensions, "{}")
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `
				INSERT INTO archived_messages (queue_id, queue_arn, job_id, message_id, body, message_attributes,
					system_attributes, group_id, deduplication_id, sequence_number, dead_letter_source_arn,
					trace_header, sent_at, receive_count, body_hash, tool_name, tool_call_id, session_id,
					dimensions, reason, discarded_by, discarded_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (job_id, message_id) DO NOTHING`,
				m.QueueID, m.QueueARN, jobID, m.MessageID, m.Body, attrs, sys, m.GroupID, m.DeduplicationID,
				m.SequenceNumber, m.DeadLetterSourceARN, m.TraceHeader, ms(m.SentAt), m.ReceiveCount, m.BodyHash,
				m.ToolName, m.ToolCallID, m.SessionID, dims, m.Reason, m.DiscardedBy, ms(m.DiscardedAt)); err != nil {
				return err
			}
		}
		return writeJournal(ctx, tx, jobID, entries)
	})
	if err != nil {
		return fmt.Errorf("store: archive for job %d: %w", jobID, err)
	}
	return nil
}

// ArchiveFilter chooses archived messages: of one queue (0: every queue), newest first, before
// the id BeforeID (0: from the newest), at most Limit (0: all).
type ArchiveFilter struct {
	QueueID     int64
	BeforeID    int64
	Limit       int
	NotRestored bool // only the messages no restore has sent again
}

// ArchivedMessages returns archived messages, newest first.
func (s *Store) ArchivedMessages(ctx context.Context, f ArchiveFilter) ([]ArchivedMessage, error) {
	query := "SELECT " + archivedColumns + " FROM archived_messages WHERE 1 = 1"
	var args []any
	if f.QueueID != 0 {
		query += " AND queue_id = ?"
		args = append(args, f.QueueID)
	}
	if f.BeforeID != 0 {
		query += " AND id < ?"
		args = append(args, f.BeforeID)
	}
	if f.NotRestored {
		query += " AND restored_at = 0"
	}
	query += " ORDER BY id DESC"
	if f.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: archived messages: %w", err)
	}
	defer rows.Close()
	out := []ArchivedMessage{}
	for rows.Next() {
		m, err := scanArchived(rows)
		if err != nil {
			return nil, fmt.Errorf("store: archived messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: archived messages: %w", err)
	}
	return out, nil
}

// ArchivedMessage returns the newest archived copy of a message of a queue, ErrNotFound when the
// archive has none.
func (s *Store) ArchivedMessage(ctx context.Context, queueID int64, messageID string) (ArchivedMessage, error) {
	m, err := scanArchived(s.db.QueryRowContext(ctx, "SELECT "+archivedColumns+
		" FROM archived_messages WHERE queue_id = ? AND message_id = ? ORDER BY id DESC LIMIT 1", queueID, messageID))
	if err != nil {
		return ArchivedMessage{}, fmt.Errorf("store: archived message %q: %w", messageID, notFound(err))
	}
	return m, nil
}

// MarkRestored marks archived messages restored by a job, to a queue, with the journal entries
// that say so, in one transaction.
func (s *Store) MarkRestored(ctx context.Context, jobID int64, ids []int64, restoredTo string, at time.Time, entries []JournalEntry) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE archived_messages SET restored_at = ?, restored_to = ?, restore_job_id = ? WHERE id = ?`,
				ms(at), restoredTo, jobID, id); err != nil {
				return err
			}
		}
		return writeJournal(ctx, tx, jobID, entries)
	})
	if err != nil {
		return fmt.Errorf("store: mark restored for job %d: %w", jobID, err)
	}
	return nil
}

// ArchiveStats is the archive's size: how many messages it holds, their bodies' bytes, and
// when the oldest was discarded (zero when it is empty).
type ArchiveStats struct {
	Messages  int64
	BodyBytes int64
	Oldest    time.Time
}

// ArchiveStats returns the archive's size.
func (s *Store) ArchiveStats(ctx context.Context) (ArchiveStats, error) {
	var st ArchiveStats
	var oldest int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(body)), 0), coalesce(min(discarded_at), 0) FROM archived_messages`).
		Scan(&st.Messages, &st.BodyBytes, &oldest); err != nil {
		return ArchiveStats{}, fmt.Errorf("store: archive stats: %w", err)
	}
	st.Oldest = fromMS(oldest)
	return st, nil
}

// PruneArchive deletes the archived messages discarded before cutoff and reports how many.
func (s *Store) PruneArchive(ctx context.Context, cutoff time.Time) (int64, error) {
	var n int64
	err := s.inTx(ctx, func(tx *dbTx) error {
		var err error
		n, err = execCount(ctx, tx, `DELETE FROM archived_messages WHERE discarded_at < ?`, ms(cutoff))
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: prune the archive: %w", err)
	}
	return n, nil
}
