package store

import (
	"context"
	"fmt"
	"time"
)

const tokenColumns = "id, name, role, created_at, last_used_at, revoked_at"

func scanToken(r rowScanner) (Token, error) {
	var t Token
	var created, used, revoked int64
	if err := r.Scan(&t.ID, &t.Name, &t.Role, &created, &used, &revoked); err != nil {
		return Token{}, err
	}
	t.CreatedAt, t.LastUsedAt, t.RevokedAt = fromMS(created), fromMS(used), fromMS(revoked)
	return t, nil
}

// CreateToken stores a token's hash; ErrConflict when the name is taken by a live token (or, by
// a one-in-2^256 chance, the hash is already stored).
func (s *Store) CreateToken(ctx context.Context, name, role string, hash []byte, at time.Time) (Token, error) {
	if name == "" || len(hash) == 0 {
		return Token{}, fmt.Errorf("store: create token: name and hash are required")
	}
	t, err := scanToken(s.wdb.QueryRowContext(ctx, `
		INSERT INTO api_tokens (name, role, hash, created_at) VALUES (?, ?, ?, ?)
		RETURNING `+tokenColumns, name, role, hash, ms(at)))
	if isUniqueViolation(err) {
		err = ErrConflict
	}
	if err != nil {
		return Token{}, fmt.Errorf("store: create token %q: %w", name, err)
	}
	return t, nil
}

// TokenByHash returns the live (not revoked) token with that hash.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	t, err := scanToken(s.db.QueryRowContext(ctx,
		"SELECT "+tokenColumns+" FROM api_tokens WHERE hash = ? AND revoked_at = 0", hash))
	if err != nil {
		return Token{}, fmt.Errorf("store: token by hash: %w", notFound(err))
	}
	return t, nil
}

// TouchToken records a token's last use.
func (s *Store) TouchToken(ctx context.Context, id int64, at time.Time) error {
	if err := s.execOne(ctx, "UPDATE api_tokens SET last_used_at = ? WHERE id = ?", ms(at), id); err != nil {
		return fmt.Errorf("store: touch token %d: %w", id, err)
	}
	return nil
}

// ListTokens returns every token, revoked ones included, by name.
func (s *Store) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+tokenColumns+" FROM api_tokens ORDER BY name, created_at, id")
	if err != nil {
		return nil, fmt.Errorf("store: list tokens: %w", err)
	}
	defer rows.Close()
	out := []Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("store: list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: list tokens: %w", err)
	}
	return out, nil
}

// RevokeToken revokes the live token of that name; ErrNotFound when there is none.
func (s *Store) RevokeToken(ctx context.Context, name string, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("store: revoke token %q: a revocation time is required", name)
	}
	err := s.execOne(ctx, "UPDATE api_tokens SET revoked_at = ? WHERE name = ? AND revoked_at = 0", ms(at), name)
	if err != nil {
		return fmt.Errorf("store: revoke token %q: %w", name, err)
	}
	return nil
}
