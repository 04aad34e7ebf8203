package store

import (
	"context"
	"fmt"
	"time"
)

// Alert is one stored alert: what toolq tells people and bots (a DLQ arrival, a health change…).
// Body is its JSON as the read side defines it (views.Alert); the store keeps it as it is.
type Alert struct {
	ID       int64
	At       time.Time
	Kind     string
	GroupKey string // what one notification message is about: "queue:<id>", "region:<name>"
	Body     string
}

// AlertDetectorKey is the kv key of the alert detector's memory of what it last saw.
const AlertDetectorKey = "alerts.detector"

// AppendAlerts stores alerts and the detector's memory that raised them in one transaction, so
// that after a restart the detector neither raises them again nor misses them. It returns the
// alerts with their ids.
func (s *Store) AppendAlerts(ctx context.Context, alerts []Alert, memoryKey, memory string) ([]Alert, error) {
	out := make([]Alert, len(alerts))
	copy(out, alerts)
	err := s.inTx(ctx, func(tx *dbTx) error {
		for i, a := range out {
			err := tx.QueryRowContext(ctx, "INSERT INTO alerts (at, kind, group_key, body) VALUES (?, ?, ?, ?) RETURNING id",
				ms(a.At), a.Kind, a.GroupKey, a.Body).Scan(&out[i].ID)
			if err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", memoryKey, memory)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: append %d alerts: %w", len(alerts), err)
	}
	return out, nil
}

// KV returns a kv value (ErrNotFound when there is none).
func (s *Store) KV(ctx context.Context, key string) (string, error) {
	var v string
	if err := s.db.QueryRowContext(ctx, "SELECT value FROM kv WHERE key = ?", key).Scan(&v); err != nil {
		return "", fmt.Errorf("store: kv %q: %w", key, notFound(err))
	}
	return v, nil
}

// AlertsAfter returns the alerts with an id above afterID, oldest first, at most limit.
func (s *Store) AlertsAfter(ctx context.Context, afterID int64, limit int) ([]Alert, error) {
	return s.queryAlerts(ctx, "SELECT id, at, kind, group_key, body FROM alerts WHERE id > ? ORDER BY id LIMIT ?", afterID, limit)
}

// AlertsByID returns the alerts with these ids, oldest first (those pruned left out).
func (s *Store) AlertsByID(ctx context.Context, ids []int64) ([]Alert, error) {
	if len(ids) == 0 {
		return []Alert{}, nil
	}
	query := "SELECT id, at, kind, group_key, body FROM alerts WHERE id IN (" + placeholders(len(ids)) + ") ORDER BY id"
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	return s.queryAlerts(ctx, query, args...)
}

// LatestAlertID returns the newest alert's id, 0 when there is none (nor ever was: ids are never
// reused, pruned or not).
func (s *Store) LatestAlertID(ctx context.Context) (int64, error) {
	// The highest id ever given, from the id sequence: the table's max(id) would go back down
	// once the newest alerts were pruned.
	query := "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'alerts'), 0)"
	if s.d == postgresDialect {
		query = "SELECT coalesce((SELECT last_value FROM pg_sequences WHERE schemaname = current_schema() AND sequencename = 'alerts_id_seq'), 0)"
	}
	var id int64
	err := s.db.QueryRowContext(ctx, query).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: latest alert id: %w", err)
	}
	return id, nil
}

func (s *Store) queryAlerts(ctx context.Context, query string, args ...any) ([]Alert, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: alerts: %w", err)
	}
	defer rows.Close()
	out := []Alert{}
	for rows.Next() {
		var a Alert
		var at int64
		if err := rows.Scan(&a.ID, &at, &a.Kind, &a.GroupKey, &a.Body); err != nil {
			return nil, fmt.Errorf("store: alerts: %w", err)
		}
		a.At = fromMS(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: alerts: %w", err)
	}
	return out, nil
}

// placeholders returns "?, ?, …" for n values.
func placeholders(n int) string {
	b := make([]byte, 0, 3*n)
	for i := range n {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, '?')
	}
	return string(b)
}
