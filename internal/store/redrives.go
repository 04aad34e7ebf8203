package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// RedriveMemory is what toolq remembered of a dead-letter queue when one of its move tasks
// started: the DLQ's newest sample at or before the start, how much of the DLQ it saw, and the
// identity of each message it held. SQS gives every message a move task moves a new id, so a
// message that fails again and comes back is recognised by its body's hash or its tool call id.
type RedriveMemory struct {
	MoveTaskID int64
	QueueID    int64
	// SampleID is the sample remembered; 0 when toolq had sampled the DLQ before the start not
	// once (then nothing is remembered, and nothing can be counted back).
	SampleID      int64
	SampleAt      time.Time
	Seen          int   // the sample's distinct messages: len(Messages)
	ApproxVisible int64 // the DLQ's ApproximateNumberOfMessages as the sample began
	Capped        bool  // the sample stopped at its message cap
	RememberedAt  time.Time
	Messages      []RememberedMessage
}

// Coverage is the share of the DLQ the remembered sample saw (Sample.Coverage).
func (m RedriveMemory) Coverage() float64 {
	return Sample{Seen: m.Seen, ApproxVisible: m.ApproxVisible}.Coverage()
}

// RememberedMessage is one message of a redrive's remembered sample, by what survives a move:
// its body (as a hash), its tool call, its FIFO group, its dimensions. MessageID is the id it had
// in the DLQ, which the message it becomes after the move no longer has. DestinationARN is the
// queue the redrive sent it to (the task's destination, or the queue it had failed in): a
// bounce-back of it comes to the DLQ through that queue, and says so in its
// DeadLetterQueueSourceArn. "" when toolq could not tell (a redrive remembered before it kept
// destinations, whose message it no longer holds).
type RememberedMessage struct {
	MessageID      string
	BodyHash       string // "" for a message stored before toolq hashed bodies
	ToolCallID     string
	ToolName       string
	GroupID        string
	Dimensions     map[string]string
	DestinationARN string
}

// RememberRedrive keeps, for the move task with that id, the identities of the messages of its
// dead-letter queue's newest sample taken at or before the task's start (what the task is about
// to move, as far as toolq has seen), once: a second call for the same task changes nothing and
// reports false. A task of a DLQ never sampled before its start is remembered with no sample.
// The actions call it for the redrives they start, the collector for those it finds started
// elsewhere (the console, the CLI).
func (s *Store) RememberRedrive(ctx context.Context, taskID int64, now time.Time) (bool, error) {
	remembered := false
	err := s.inTx(ctx, func(tx *dbTx) error {
		var queueID, started int64
		var destination string
		if err := tx.QueryRowContext(ctx, `SELECT queue_id, started_at, destination_arn FROM move_tasks WHERE id = ?`, taskID).Scan(&queueID, &started, &destination); err != nil {
			return notFound(err)
		}
		var sample Sample
		var at int64
		err := tx.QueryRowContext(ctx, `
			SELECT id, at, seen, approx_visible, capped FROM samples
			WHERE queue_id = ? AND at <= ? AND error = ''
			ORDER BY at DESC, id DESC LIMIT 1`, queueID, started).Scan(&sample.ID, &at, &sample.Seen, &sample.ApproxVisible, &sample.Capped)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		n, err := execCount(ctx, tx, `
			INSERT INTO redrive_samples (move_task_id, queue_id, sample_id, sample_at, seen, approx_visible, capped, remembered_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (move_task_id) DO NOTHING`,
			taskID, queueID, sample.ID, at, sample.Seen, sample.ApproxVisible, sample.Capped, ms(now))
		if err != nil || n == 0 || sample.ID == 0 {
			return err
		}
		remembered = true
		// Without a destination, SQS returns each message to the queue it failed in.
		_, err = tx.ExecContext(ctx, `
			INSERT INTO redrive_messages (move_task_id, message_id, body_hash, tool_call_id, tool_name, group_id, dimensions, destination_arn)
			SELECT ?, m.message_id, m.body_hash, m.tool_call_id, m.tool_name, m.group_id, m.dimensions,
				CASE WHEN ? <> '' THEN ? ELSE m.dead_letter_source_arn END
			FROM sample_messages sm JOIN messages m ON m.id = sm.message_ref
			WHERE sm.sample_id = ?
			ON CONFLICT (move_task_id, message_id) DO NOTHING`, taskID, destination, destination, sample.ID)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: remember redrive %d: %w", taskID, err)
	}
	return remembered, nil
}

func redriveSamplesQuery(d dialect) string {
	return `
	SELECT rs.move_task_id, rs.queue_id, rs.sample_id, rs.sample_at, rs.seen, rs.approx_visible, rs.capped, rs.remembered_at
	FROM ` + d.idTable("?") + ` j CROSS JOIN redrive_samples rs WHERE rs.move_task_id = j.value`
}

func redriveMessagesQuery(d dialect) string {
	return `
	SELECT rm.move_task_id, rm.message_id, rm.body_hash, rm.tool_call_id, rm.tool_name, rm.group_id, rm.dimensions, rm.destination_arn
	FROM ` + d.idTable("?") + ` j CROSS JOIN redrive_messages rm WHERE rm.move_task_id = j.value
	ORDER BY rm.move_task_id, rm.message_id`
}

// RedriveMemories returns what RememberRedrive kept of each of the move tasks, by task id; a task
// not remembered (yet) is absent. Two queries for all of them.
func (s *Store) RedriveMemories(ctx context.Context, taskIDs []int64) (map[int64]RedriveMemory, error) {
	out := map[int64]RedriveMemory{}
	if len(taskIDs) == 0 {
		return out, nil
	}
	list, err := sampleIDList(taskIDs)
	if err != nil {
		return nil, fmt.Errorf("store: redrive memories: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, redriveSamplesQuery(s.d), list)
	if err != nil {
		return nil, fmt.Errorf("store: redrive memories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var m RedriveMemory
		var at, remembered int64
		if err := rows.Scan(&m.MoveTaskID, &m.QueueID, &m.SampleID, &at, &m.Seen, &m.ApproxVisible, &m.Capped, &remembered); err != nil {
			return nil, fmt.Errorf("store: redrive memories: %w", err)
		}
		m.SampleAt, m.RememberedAt = fromMS(at), fromMS(remembered)
		m.Messages = []RememberedMessage{}
		out[m.MoveTaskID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: redrive memories: %w", err)
	}
	rows.Close()
	mrows, err := s.db.QueryContext(ctx, redriveMessagesQuery(s.d), list)
	if err != nil {
		return nil, fmt.Errorf("store: redrive messages: %w", err)
	}
	defer mrows.Close()
	for mrows.Next() {
		var id int64
		var r RememberedMessage
		var dims string
		if err := mrows.Scan(&id, &r.MessageID, &r.BodyHash, &r.ToolCallID, &r.ToolName, &r.GroupID, &dims, &r.DestinationARN); err != nil {
			return nil, fmt.Errorf("store: redrive messages: %w", err)
		}
		if r.Dimensions, err = decodeDimensions(dims); err != nil {
			return nil, fmt.Errorf("store: redrive messages of task %d: %w", id, err)
		}
		if m, ok := out[id]; ok {
			m.Messages = append(m.Messages, r)
			out[id] = m
		}
	}
	if err := mrows.Err(); err != nil {
		return nil, fmt.Errorf("store: redrive messages: %w", err)
	}
	return out, nil
}

// Arrival is a message of a dead-letter queue as it first came: what it is recognised by, the
// queue it failed in (DeadLetterQueueSourceArn; "" for a message sent straight to the DLQ), and
// when the samples saw it.
type Arrival struct {
	Ref                 int64 // the message's row id
	QueueID             int64
	MessageID           string
	BodyHash            string
	ToolCallID          string
	ToolName            string
	GroupID             string
	Dimensions          map[string]string
	DeadLetterSourceARN string
	SentAt              time.Time
	FirstSeen           time.Time // the sample that first saw it in this queue
	LastSeen            time.Time // the newest sample that saw it
}

func arrivalsQuery(d dialect) string {
	// Only the messages some redrive of their queue remembered the body or the tool call of:
	// a DLQ's other failures are no bounce-back of anything.
	return `
	SELECT m.id, m.queue_id, m.message_id, m.body_hash, m.tool_call_id, m.tool_name, m.group_id, m.dimensions,
		m.dead_letter_source_arn, m.sent_at, m.first_seen, m.last_seen
	FROM ` + d.idTable("?") + ` j CROSS JOIN messages m
	WHERE m.queue_id = j.value AND m.first_seen >= ? AND (
		(m.body_hash <> '' AND EXISTS (SELECT 1 FROM redrive_messages rm JOIN redrive_samples rs ON rs.move_task_id = rm.move_task_id
			WHERE rm.body_hash = m.body_hash AND rm.body_hash <> '' AND rs.queue_id = m.queue_id))
		OR (m.tool_call_id <> '' AND EXISTS (SELECT 1 FROM redrive_messages rm JOIN redrive_samples rs ON rs.move_task_id = rm.move_task_id
			WHERE rm.tool_call_id = m.tool_call_id AND rm.tool_call_id <> '' AND rs.queue_id = m.queue_id)))
	ORDER BY m.queue_id, m.first_seen, m.id`
}

// RedrivenArrivals returns the messages of the queues first seen at or after since whose body
// hash or tool call id a remembered redrive of their queue holds: the candidates for bounce-backs
// (and for arrivals that reuse a redriven tool call id with another body), oldest first by
// queue. Which of them came back through a redrive's destination is the views' to tell.
func (s *Store) RedrivenArrivals(ctx context.Context, queueIDs []int64, since time.Time) ([]Arrival, error) {
	if len(queueIDs) == 0 {
		return []Arrival{}, nil
	}
	list, err := sampleIDList(queueIDs)
	if err != nil {
		return nil, fmt.Errorf("store: redriven arrivals: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, arrivalsQuery(s.d), list, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: redriven arrivals: %w", err)
	}
	defer rows.Close()
	out := []Arrival{}
	for rows.Next() {
		var a Arrival
		var dims string
		var sent, first, last int64
		if err := rows.Scan(&a.Ref, &a.QueueID, &a.MessageID, &a.BodyHash, &a.ToolCallID, &a.ToolName, &a.GroupID, &dims,
			&a.DeadLetterSourceARN, &sent, &first, &last); err != nil {
			return nil, fmt.Errorf("store: redriven arrivals: %w", err)
		}
		if a.Dimensions, err = decodeDimensions(dims); err != nil {
			return nil, fmt.Errorf("store: redriven arrival %q: %w", a.MessageID, err)
		}
		a.SentAt, a.FirstSeen, a.LastSeen = fromMS(sent), fromMS(first), fromMS(last)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: redriven arrivals: %w", err)
	}
	return out, nil
}

// decodeDimensions reads a stored dimensions object; never nil.
func decodeDimensions(js string) (map[string]string, error) {
	out := map[string]string{}
	if js == "" {
		return out, nil
	}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		return nil, fmt.Errorf("dimensions: %w", err)
	}
	return out, nil
}
