package store

import (
	"context"
	"encoding/json"
	"fmt"
)

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
			detail, remote_addr)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		ms(e.At), e.Actor, e.ActorKind, e.Role, e.Action, e.QueueName, e.QueueARN, e.Params, e.Result,
		e.Detail, e.RemoteAddr).Scan(&id)
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
	query := `SELECT id, at, actor, actor_kind, role, action, queue_name, queue_arn, params, result, detail,
		remote_addr FROM audit_log WHERE 1 = 1`
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
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.ActorKind, &e.Role, &e.Action, &e.QueueName,
			&e.QueueARN, &e.Params, &e.Result, &e.Detail, &e.RemoteAddr); err != nil {
			return nil, fmt.Errorf("store: list audit: %w", err)
		}
		e.At = fromMS(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list audit: %w", err)
	}
	return out, nil
}
