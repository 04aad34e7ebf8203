package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// NotifyTarget is a configured notification target as the status page shows it: never its URL,
// which for a Slack webhook is a credential.
type NotifyTarget struct {
	Name     string
	Kind     string // slack, webhook, teams or pagerduty
	Endpoint string // scheme and host
	Filter   string // what it is sent, in words
	SeenAt   time.Time
}

// OutboxEntry is one alert on its way to one target: MessageID is 0 until a message takes it.
type OutboxEntry struct {
	AlertID   int64
	Target    string
	GroupKey  string
	CreatedAt time.Time
	MessageID int64
}

// Message statuses.
const (
	MessagePending = "pending" // not sent yet (maybe retrying)
	MessageSent    = "sent"
	MessageFailed  = "failed" // given up
)

// NotifyMessage is what is sent to one target: one message a group at most every few minutes,
// summarising the alerts it took.
type NotifyMessage struct {
	ID            int64
	Target        string
	GroupKey      string
	CreatedAt     time.Time
	Alerts        int
	Title         string
	Payload       string // the exact body, the same on every attempt
	Status        string
	Attempts      int
	NextAttemptAt time.Time
	SentAt        time.Time
	LastError     string
}

// Delivery outcomes.
const (
	DeliverySent   = "sent"
	DeliveryRetry  = "retry"  // failed, to be tried again
	DeliveryFailed = "failed" // failed for good
)

// NotifyDelivery is one attempt to send a message.
type NotifyDelivery struct {
	ID         int64
	MessageID  int64
	Target     string
	At         time.Time
	Attempt    int
	Outcome    string
	HTTPStatus int
	Error      string
	Duration   time.Duration
	Title      string // the message's (read only)
}

// NotifyStats sums one target's messages.
type NotifyStats struct {
	Sent, Failed, Pending int
	LastSentAt            time.Time
	LastFailure           *NotifyDelivery // the newest attempt that did not succeed, nil if none
}

// SaveNotifyTargets records the targets a dashboard runs with.
func (s *Store) SaveNotifyTargets(ctx context.Context, targets []NotifyTarget) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		for _, t := range targets {
			if _, err := tx.ExecContext(ctx, `INSERT INTO notify_targets (name, kind, endpoint, filter, seen_at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (name) DO UPDATE SET kind = excluded.kind, endpoint = excluded.endpoint,
					filter = excluded.filter, seen_at = excluded.seen_at`,
				t.Name, t.Kind, t.Endpoint, t.Filter, ms(t.SeenAt)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: save notify targets: %w", err)
	}
	return nil
}

// NotifyTargets returns the targets seen at or after since (the running dashboard's), by name.
func (s *Store) NotifyTargets(ctx context.Context, since time.Time) ([]NotifyTarget, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name, kind, endpoint, filter, seen_at FROM notify_targets WHERE seen_at >= ? ORDER BY name", ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: notify targets: %w", err)
	}
	defer rows.Close()
	out := []NotifyTarget{}
	for rows.Next() {
		var t NotifyTarget
		var seen int64
		if err := rows.Scan(&t.Name, &t.Kind, &t.Endpoint, &t.Filter, &seen); err != nil {
			return nil, fmt.Errorf("store: notify targets: %w", err)
		}
		t.SeenAt = fromMS(seen)
		out = append(out, t)
	}
	return out, rows.Err()
}

// AlertRouterKey is the kv key of the newest alert id routed to the targets.
const AlertRouterKey = "alerts.routed"

// RouteAlerts puts alerts on their way to targets and moves the router's cursor past them, in
// one transaction: an alert is routed once, whatever restarts.
func (s *Store) RouteAlerts(ctx context.Context, entries []OutboxEntry, cursor int64) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		for _, e := range entries {
			if _, err := tx.ExecContext(ctx, "INSERT INTO notify_outbox (alert_id, target, group_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
				e.AlertID, e.Target, e.GroupKey, ms(e.CreatedAt)); err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", AlertRouterKey, fmt.Sprint(cursor))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: route alerts: %w", err)
	}
	return nil
}

const waitingOutboxQuery = "SELECT alert_id, target, group_key, created_at FROM notify_outbox WHERE message_id = 0 ORDER BY alert_id"

// WaitingOutbox returns the routed alerts no message has taken yet, oldest first.
func (s *Store) WaitingOutbox(ctx context.Context) ([]OutboxEntry, error) {
	rows, err := s.db.QueryContext(ctx, waitingOutboxQuery)
	if err != nil {
		return nil, fmt.Errorf("store: waiting outbox: %w", err)
	}
	defer rows.Close()
	out := []OutboxEntry{}
	for rows.Next() {
		var e OutboxEntry
		var at int64
		if err := rows.Scan(&e.AlertID, &e.Target, &e.GroupKey, &at); err != nil {
			return nil, fmt.Errorf("store: waiting outbox: %w", err)
		}
		e.CreatedAt = fromMS(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Told is what a target was told of a group lately: the alerts its messages summarised, and
// when the oldest of those messages was made (zero when there was none), after which the told
// alerts can only be fewer.
type Told struct {
	AlertIDs []int64 // in id order
	Oldest   time.Time
}

// ToldAfter returns what a target's messages of a group made after a time summarise: what the
// target was told of the group lately, by which the notifier tells news from repeats. It reads
// those messages by (target, group, time) and their alerts by message, never the whole outbox.
func (s *Store) ToldAfter(ctx context.Context, target, group string, after time.Time) (Told, error) {
	rows, err := s.db.QueryContext(ctx, toldAfterQuery, target, group, ms(after))
	if err != nil {
		return Told{}, fmt.Errorf("store: told %s of %s: %w", target, group, err)
	}
	defer rows.Close()
	out := Told{AlertIDs: []int64{}}
	oldest := int64(0)
	for rows.Next() {
		var id, created int64
		if err := rows.Scan(&id, &created); err != nil {
			return Told{}, fmt.Errorf("store: told %s of %s: %w", target, group, err)
		}
		out.AlertIDs = append(out.AlertIDs, id)
		if oldest == 0 || created < oldest {
			oldest = created
		}
	}
	if err := rows.Err(); err != nil {
		return Told{}, fmt.Errorf("store: told %s of %s: %w", target, group, err)
	}
	out.Oldest = fromMS(oldest)
	return out, nil
}

const toldAfterQuery = `SELECT o.alert_id, m.created_at FROM notify_messages m
	JOIN notify_outbox o ON o.message_id = m.id AND o.target = m.target
	WHERE m.target = ? AND m.group_key = ? AND m.created_at > ?
	ORDER BY o.alert_id`

// CreateMessage stores a message to send and marks the alerts it summarises as taken, in one
// transaction. It returns the message's id.
func (s *Store) CreateMessage(ctx context.Context, m NotifyMessage, alertIDs []int64) (int64, error) {
	var id int64
	err := s.inTx(ctx, func(tx *dbTx) error {
		err := tx.QueryRowContext(ctx, `
			INSERT INTO notify_messages (target, group_key, created_at, alerts, title, payload, status, next_attempt_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			m.Target, m.GroupKey, ms(m.CreatedAt), len(alertIDs), m.Title, m.Payload, MessagePending, ms(m.NextAttemptAt)).Scan(&id)
		if err != nil {
			return err
		}
		for _, a := range alertIDs {
			if _, err := tx.ExecContext(ctx, "UPDATE notify_outbox SET message_id = ? WHERE alert_id = ? AND target = ?", id, a, m.Target); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: create message for %s: %w", m.Target, err)
	}
	return id, nil
}

const messageColumns = `id, target, group_key, created_at, alerts, title, payload, status, attempts, next_attempt_at, sent_at, last_error`

func scanMessage(r rowScanner) (NotifyMessage, error) {
	var m NotifyMessage
	var created, next, sent int64
	err := r.Scan(&m.ID, &m.Target, &m.GroupKey, &created, &m.Alerts, &m.Title, &m.Payload, &m.Status, &m.Attempts, &next, &sent, &m.LastError)
	m.CreatedAt, m.NextAttemptAt, m.SentAt = fromMS(created), fromMS(next), fromMS(sent)
	return m, err
}

const dueMessagesQuery = "SELECT " + messageColumns + ` FROM notify_messages m
	WHERE status = ?1 AND next_attempt_at <= ?2 AND NOT EXISTS (SELECT 1 FROM notify_messages e
		WHERE e.target = m.target AND e.group_key = m.group_key AND e.status = ?1 AND e.id < m.id)
	ORDER BY next_attempt_at, id LIMIT ?3`

// DueMessages returns the pending messages whose next attempt is due at now, oldest first, each
// the oldest pending message of its target's group: a group's messages go out in order, a later
// one waiting while an earlier one is retried (a PagerDuty incident's resolve never overtakes its
// trigger).
func (s *Store) DueMessages(ctx context.Context, now time.Time, limit int) ([]NotifyMessage, error) {
	rows, err := s.db.QueryContext(ctx, dueMessagesQuery, MessagePending, ms(now), limit)
	if err != nil {
		return nil, fmt.Errorf("store: due messages: %w", err)
	}
	defer rows.Close()
	out := []NotifyMessage{}
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("store: due messages: %w", err)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// GetMessage returns one message.
func (s *Store) GetMessage(ctx context.Context, id int64) (NotifyMessage, error) {
	m, err := scanMessage(s.db.QueryRowContext(ctx, "SELECT "+messageColumns+" FROM notify_messages WHERE id = ?", id))
	if err != nil {
		return NotifyMessage{}, fmt.Errorf("store: message %d: %w", id, notFound(err))
	}
	return m, nil
}

// RecordDelivery stores one attempt and the message's state after it (Status, Attempts,
// NextAttemptAt, SentAt, LastError) in one transaction.
func (s *Store) RecordDelivery(ctx context.Context, d NotifyDelivery, m NotifyMessage) error {
	err := s.inTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO notify_deliveries (message_id, target, at, attempt, outcome, http_status, error, duration_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			d.MessageID, d.Target, ms(d.At), d.Attempt, d.Outcome, d.HTTPStatus, d.Error, d.Duration.Milliseconds()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE notify_messages SET status = ?, attempts = ?, next_attempt_at = ?, sent_at = ?, last_error = ? WHERE id = ?`,
			m.Status, m.Attempts, ms(m.NextAttemptAt), ms(m.SentAt), m.LastError, m.ID)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record delivery of message %d: %w", d.MessageID, err)
	}
	return nil
}

// RecentDeliveries returns the newest attempts of every target, newest first.
func (s *Store) RecentDeliveries(ctx context.Context, limit int) ([]NotifyDelivery, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT d.id, d.message_id, d.target, d.at, d.attempt, d.outcome, d.http_status, d.error, d.duration_ms, coalesce(m.title, '')
		FROM notify_deliveries d LEFT JOIN notify_messages m ON m.id = d.message_id
		ORDER BY d.at DESC, d.id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: recent deliveries: %w", err)
	}
	defer rows.Close()
	out := []NotifyDelivery{}
	for rows.Next() {
		var d NotifyDelivery
		var at, dur int64
		if err := rows.Scan(&d.ID, &d.MessageID, &d.Target, &at, &d.Attempt, &d.Outcome, &d.HTTPStatus, &d.Error, &dur, &d.Title); err != nil {
			return nil, fmt.Errorf("store: recent deliveries: %w", err)
		}
		d.At, d.Duration = fromMS(at), time.Duration(dur)*time.Millisecond
		out = append(out, d)
	}
	return out, rows.Err()
}

const notifyStatsQuery = `SELECT target, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
		count(*) FILTER (WHERE status = 'pending'), coalesce(max(sent_at), 0)
	FROM notify_messages GROUP BY target`

// lastFailureQuery reads a target's newest attempt that did not succeed; its outcome <> 'sent'
// is the partial index notify_deliveries_failures's condition, word for word.
const lastFailureQuery = `SELECT id, message_id, target, at, attempt, outcome, http_status, error, duration_ms
	FROM notify_deliveries WHERE target = ? AND outcome <> 'sent' ORDER BY at DESC, id DESC LIMIT 1`

// NotifyTargetStats sums each target's messages, by target name.
func (s *Store) NotifyTargetStats(ctx context.Context) (map[string]NotifyStats, error) {
	rows, err := s.db.QueryContext(ctx, notifyStatsQuery)
	if err != nil {
		return nil, fmt.Errorf("store: notify stats: %w", err)
	}
	out := map[string]NotifyStats{}
	for rows.Next() {
		var name string
		var st NotifyStats
		var last int64
		if err := rows.Scan(&name, &st.Sent, &st.Failed, &st.Pending, &last); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: notify stats: %w", err)
		}
		st.LastSentAt = fromMS(last)
		out[name] = st
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: notify stats: %w", err)
	}
	for name, st := range out {
		var d NotifyDelivery
		var at, dur int64
		err := s.db.QueryRowContext(ctx, lastFailureQuery, name).
			Scan(&d.ID, &d.MessageID, &d.Target, &at, &d.Attempt, &d.Outcome, &d.HTTPStatus, &d.Error, &dur)
		switch {
		case err == nil:
			d.At, d.Duration = fromMS(at), time.Duration(dur)*time.Millisecond
			st.LastFailure = &d
			out[name] = st
		case !errors.Is(err, sql.ErrNoRows):
			return nil, fmt.Errorf("store: notify stats: %w", err)
		}
	}
	return out, nil
}

// SetMessagePayload stores what a message says: it is written once its id is known, since the
// id is part of it.
func (s *Store) SetMessagePayload(ctx context.Context, id int64, payload string) error {
	if err := s.execOne(ctx, "UPDATE notify_messages SET payload = ? WHERE id = ?", payload, id); err != nil {
		return fmt.Errorf("store: payload of message %d: %w", id, err)
	}
	return nil
}

const messageAlertIDsQuery = "SELECT alert_id FROM notify_outbox WHERE message_id = ? ORDER BY alert_id"

// MessageAlertIDs returns the alerts a message summarises, oldest first.
func (s *Store) MessageAlertIDs(ctx context.Context, messageID int64) ([]int64, error) {
	rows, err := s.db.QueryContext(ctx, messageAlertIDsQuery, messageID)
	if err != nil {
		return nil, fmt.Errorf("store: alerts of message %d: %w", messageID, err)
	}
	defer rows.Close()
	out := []int64{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: alerts of message %d: %w", messageID, err)
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
