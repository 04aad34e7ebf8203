package store

import (
	"context"
	"fmt"
	"time"
)

// CreateSession stores a browser session of the token tokenID, by the SHA-256 of its id, valid
// until expires. Sessions that expired before at are deleted on the way: they can never be used
// again, and one login in a while is enough to keep the table small.
func (s *Store) CreateSession(ctx context.Context, tokenID int64, hash []byte, at, expires time.Time) error {
	if len(hash) == 0 || !expires.After(at) {
		return fmt.Errorf("store: create session: a hash and an expiry after its start are required")
	}
	err := s.inTx(ctx, func(tx *dbTx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM browser_sessions WHERE expires_at <= ?", ms(at)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `
			INSERT INTO browser_sessions (hash, token_id, created_at, expires_at) VALUES (?, ?, ?, ?)`,
			hash, tokenID, ms(at), ms(expires))
		return err
	})
	if isUniqueViolation(err) {
		err = ErrConflict
	}
	if err != nil {
		return fmt.Errorf("store: create session of token %d: %w", tokenID, notFoundOnFK(err))
	}
	return nil
}

// SessionToken returns the token of the live session with that hash: not ended, not expired at
// at, its token not revoked. ErrNotFound otherwise.
func (s *Store) SessionToken(ctx context.Context, hash []byte, at time.Time) (Token, error) {
	t, err := scanToken(s.db.QueryRowContext(ctx, `
		SELECT t.id, t.name, t.role, t.created_at, t.last_used_at, t.revoked_at
		FROM browser_sessions s JOIN api_tokens t ON t.id = s.token_id
		WHERE s.hash = ? AND s.ended_at = 0 AND s.expires_at > ? AND t.revoked_at = 0`, hash, ms(at)))
	if err != nil {
		return Token{}, fmt.Errorf("store: session token: %w", notFound(err))
	}
	return t, nil
}

// EndSession ends the session with that hash at at (a sign-out); ErrNotFound when no session
// with that hash is still open.
func (s *Store) EndSession(ctx context.Context, hash []byte, at time.Time) error {
	if at.IsZero() {
		return fmt.Errorf("store: end session: an end time is required")
	}
	if err := s.execOne(ctx, "UPDATE browser_sessions SET ended_at = ? WHERE hash = ? AND ended_at = 0", ms(at), hash); err != nil {
		return fmt.Errorf("store: end session: %w", err)
	}
	return nil
}
