package views

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/toolq/toolq/internal/store"
)

// AuditQuery selects audit entries: of one queue (by name, "" for all), older than BeforeID (0:
// from the newest), at most Limit (0: all).
type AuditQuery struct {
	Queue    string
	BeforeID int64
	Limit    int
}

// Audit returns audit entries, newest first.
func (s *Service) Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error) {
	entries, err := s.store.ListAudit(ctx, store.AuditFilter{QueueName: q.Queue, BeforeID: q.BeforeID, Limit: q.Limit})
	if err != nil {
		return nil, fmt.Errorf("views: audit: %w", err)
	}
	out := make([]AuditEntry, 0, len(entries))
	for _, e := range entries {
		params := map[string]any{}
		if err := json.Unmarshal([]byte(e.Params), &params); err != nil || params == nil {
			// The store only takes JSON objects, so this is a row written by hand: show it raw.
			params = map[string]any{"raw": e.Params}
		}
		v := AuditEntry{
			ID:             e.ID,
			At:             e.At.UTC(),
			Actor:          e.Actor,
			ActorKind:      e.ActorKind,
			TokenID:        e.TokenID,
			Role:           e.Role,
			Action:         e.Action,
			Queue:          e.QueueName,
			Params:         params,
			Result:         e.Result,
			Detail:         e.Detail,
			Code:           e.Code,
			IdempotencyKey: e.IdempotencyKey,
		}
		if e.IntentID != 0 {
			v.IntentID = &e.IntentID
		}
		out = append(out, v)
	}
	return out, nil
}
