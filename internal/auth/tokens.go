package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// TokenPrefix starts every toolq API token, so that secret scanners and people recognise one.
const TokenPrefix = "tq_"

// tokenBytes is the entropy of a token: 256 bits, far beyond guessing.
const tokenBytes = 32

// tokenEncoding is lower-case base32 without padding: safe in headers, shells and URLs.
var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// GenerateToken returns a new random token and the hash to store for it.
func GenerateToken() (plain string, hash []byte) {
	b := make([]byte, tokenBytes)
	// crypto/rand.Read never fails on the supported platforms (it panics instead).
	_, _ = rand.Read(b)
	plain = TokenPrefix + tokenEncoding.EncodeToString(b)
	return plain, HashToken(plain)
}

// HashToken returns the SHA-256 of a plain token, the only form in which tokens are stored. A
// fast hash is enough because tokens are random, not passwords.
func HashToken(plain string) []byte {
	h := sha256.Sum256([]byte(plain))
	return h[:]
}

// looksLikeToken rejects obvious junk before the store is asked.
func looksLikeToken(plain string) bool {
	return strings.HasPrefix(plain, TokenPrefix) && len(plain) <= 128
}

// TokenStore is what the token functions and the browser sessions need of the store.
type TokenStore interface {
	CreateToken(ctx context.Context, name, role string, hash []byte, at time.Time) (store.Token, error)
	TokenByHash(ctx context.Context, hash []byte) (store.Token, error)
	TouchToken(ctx context.Context, id int64, at time.Time) error
	ListTokens(ctx context.Context) ([]store.Token, error)
	RevokeToken(ctx context.Context, name string, at time.Time) error

	CreateSession(ctx context.Context, tokenID int64, hash []byte, at, expires time.Time) error
	SessionToken(ctx context.Context, hash []byte, at time.Time) (store.Token, error)
	EndSession(ctx context.Context, hash []byte, at time.Time) error
}

// tokenName is what a token may be called: it appears in the audit log as the actor.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// ErrBadTokenName is returned for a token name outside [A-Za-z0-9._@-]{1,64}.
var ErrBadTokenName = errors.New("auth: token names are 1 to 64 letters, digits, '.', '_', '@' or '-'")

// ErrBadRole is returned for a role other than viewer or operator.
var ErrBadRole = errors.New("auth: role must be viewer or operator")

// CreateToken creates a token called name with a role and returns the plain token, which is
// never stored and cannot be shown again. A live token of the same name is store.ErrConflict.
func CreateToken(ctx context.Context, s TokenStore, name string, role Role) (string, error) {
	if !tokenName.MatchString(name) {
		return "", ErrBadTokenName
	}
	if !ValidRole(string(role)) {
		return "", ErrBadRole
	}
	plain, hash := GenerateToken()
	if _, err := s.CreateToken(ctx, name, string(role), hash, time.Now()); err != nil {
		return "", fmt.Errorf("auth: create token %q: %w", name, err)
	}
	return plain, nil
}

// ListTokens returns every token, revoked ones included (never their secrets, which are not kept).
func ListTokens(ctx context.Context, s TokenStore) ([]store.Token, error) {
	tokens, err := s.ListTokens(ctx)
	if err != nil {
		return nil, fmt.Errorf("auth: list tokens: %w", err)
	}
	return tokens, nil
}

// RevokeToken revokes the live token called name; store.ErrNotFound when there is none. Requests
// and browser sessions made with it are refused from then on.
func RevokeToken(ctx context.Context, s TokenStore, name string) error {
	if err := s.RevokeToken(ctx, name, time.Now()); err != nil {
		return fmt.Errorf("auth: revoke token %q: %w", name, err)
	}
	return nil
}
