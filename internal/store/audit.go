package store

import (
	"context"
	"encoding/json"
	"fmt"
)

const auditColumns = `id, at, actor, actor_kind, role, action, queue_name, queue_arn, params, result, detail,
	remote_addr, intent_id, idempotency_key, code, kind, move_task_id, token_id, credential`

func scanAudit(r rowScanner) (AuditEntry, error) {
	var e AuditEntry
	var at int64
	err := r.Scan(&e.ID, &at, &e.Actor, &e.ActorKind, &e.Role, &e.Action, &e.QueueName, &e.QueueARN, &e.Params,
		&e.Result, &e.Detail, &e.RemoteAddr, &e.IntentID, &e.IdempotencyKey, &e.Code, &e.Kind, &e.MoveTaskID, &e.TokenID, &e.Credential)
	e.At = fromMS(at)
	return e, err
}

// AppendAudit stores an audit entry and returns its id. Params must be a JSON object or empty
// (stored as {}), so that every reader can decode it.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (int64, error) {
	if e.Params == "" {
		e.Params = "{}"
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(e.Params), &obj); err != nil {
		return 0, fmt.Errorf("store: append audit %s: params are not a JSON object: %w", e.Action, err)
	}
	var id int64
	err := s.wdb.QueryRowContext(ctx, `
		INSERT INTO audit_log (at, actor, actor_kind, role, action, queue_name, queue_arn, params, result,
			detail, remote_addr, intent_id, idempotency_key, code, kind, move_task_id, token_id, credential)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		ms(e.At), e.Actor, e.ActorKind, e.Role, e.Action, e.QueueName, e.QueueARN, e.Params, e.Result,
		e.Detail, e.RemoteAddr, e.IntentID, e.IdempotencyKey, e.Code, e.Kind, e.MoveTaskID, e.TokenID, e.Credential).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: append audit %s: %w", e.Action, err)
	}
	return id, nil
}

// AuditFilter selects audit entries, newest first. BeforeID is the cursor.
type AuditFilter struct {
	QueueName string
	BeforeID  int64
	Limit     int
}

// ListAudit returns audit entries newest first. Limit 0 means all.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	query := `SELECT ` + auditColumns + ` FROM audit_log WHERE 1 = 1`
	var args []any
	if f.QueueName != "" {
		query += " AND queue_name = ?"
		args = append(args, f.QueueName)
	}
	if f.BeforeID > 0 {
		query += " AND id < ?"
		args = append(args, f.BeforeID)
	}
	query += " ORDER BY id DESC"
	if f.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, f.Limit)
	}
	out, err := s.queryAudit(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	return out, nil
}

// PendingIntents returns the intents that no outcome names yet, oldest first: actions whose
// process stopped between calling AWS and recording what happened (or that are under way).
func (s *Store) PendingIntents(ctx context.Context) ([]AuditEntry, error) {
	out, err := s.queryAudit(ctx, `SELECT `+auditColumns+` FROM audit_log AS i
		WHERE i.result = ? AND NOT EXISTS (SELECT 1 FROM audit_log AS o WHERE o.intent_id = i.id)
		ORDER BY i.id`, AuditIntent)
	if err != nil {
		return nil, fmt.Errorf("store: pending intents: %w", err)
	}
	return out, nil
}

// IntentByKey returns the intent an action made with a credential (AuditEntry.Credential)
// carried an idempotency key on, ErrNotFound when there is none.
func (s *Store) IntentByKey(ctx context.Context, credential, key string) (AuditEntry, error) {
	e, err := scanAudit(s.db.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_log
		WHERE credential = ? AND idempotency_key = ? AND result = ? ORDER BY id LIMIT 1`, credential, key, AuditIntent))
	if err != nil {
		return AuditEntry{}, fmt.Errorf("store: intent by key: %w", notFound(err))
	}
	return e, nil
}

// OutcomeOf returns the outcome that ends an intent, ErrNotFound while there is none.
func (s *Store) OutcomeOf(ctx context.Context, intentID int64) (AuditEntry, error) {
	e, err := scanAudit(s.db.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_log
		WHERE intent_id = ? ORDER BY id LIMIT 1`, intentID))
	if err != nil {
		return AuditEntry{}, fmt.Errorf("store: outcome of %d: %w", intentID, notFound(err))
	}
	return e, nil
}

// AcceptedFor returns the accepted outcome of an action (a redrive start, say) that names the
// move task with that id, ErrNotFound when none does.
func (s *Store) AcceptedFor(ctx context.Context, action string, moveTaskID int64) (AuditEntry, error) {
	e, err := scanAudit(s.db.QueryRowContext(ctx, `SELECT `+auditColumns+` FROM audit_log
		WHERE move_task_id = ? AND action = ? AND result = ? ORDER BY id LIMIT 1`, moveTaskID, action, AuditAccepted))
	if err != nil {
		return AuditEntry{}, fmt.Errorf("store: %s of move task %d: %w", action, moveTaskID, notFound(err))
	}
	return e, nil
}

func (s *Store) queryAudit(ctx context.Context, query string, args ...any) ([]AuditEntry, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}
