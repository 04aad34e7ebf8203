package store

import (
	"context"
	"encoding/json"
	"fmt"
)

const costEstimateKey = "cost_estimate"

// SetCostEstimate replaces the stored cost estimate.
func (s *Store) SetCostEstimate(ctx context.Context, c CostEstimate) error {
	js, err := json.Marshal(c)
	if err == nil {
		_, err = s.wdb.ExecContext(ctx, "INSERT INTO kv (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", costEstimateKey, string(js))
	}
	if err != nil {
		return fmt.Errorf("store: set cost estimate: %w", err)
	}
	return nil
}

// GetCostEstimate returns the stored cost estimate.
func (s *Store) GetCostEstimate(ctx context.Context) (CostEstimate, error) {
	var js string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM kv WHERE key = ?", costEstimateKey).Scan(&js)
	if err != nil {
		return CostEstimate{}, fmt.Errorf("store: get cost estimate: %w", notFound(err))
	}
	var c CostEstimate
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		return CostEstimate{}, fmt.Errorf("store: get cost estimate: %w", err)
	}
	return c, nil
}
