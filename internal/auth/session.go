package auth

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// SessionCookie is the browser session cookie of token mode.
const SessionCookie = "toolq_session"

// sessionPurpose separates session signatures from the key's other uses.
const sessionPurpose = "session/v1"

// Login checks a plain token typed into the login form and returns the session cookie to set:
// HttpOnly, SameSite=Lax, holding a signed, expiring reference to the token's id (never the
// token itself). secure marks it Secure (the request came over TLS). The error is
// ErrInvalidCredentials for a bad token.
func (a *Authenticator) Login(ctx context.Context, plain string, secure bool) (*http.Cookie, Identity, error) {
	if a.store == nil {
		return nil, Identity{}, ErrInvalidCredentials
	}
	plain = strings.TrimSpace(plain)
	if !looksLikeToken(plain) {
		return nil, Identity{}, ErrInvalidCredentials
	}
	t, err := a.store.TokenByHash(ctx, HashToken(plain))
	if err != nil {
		return nil, Identity{}, a.lookupError(err)
	}
	a.touch(ctx, t)
	expires := a.now().Add(a.sessionTTL)
	payload := []byte(fmt.Sprintf("%d|%d", t.ID, expires.Unix()))
	value := enc(payload) + "." + enc(a.sign(sessionPurpose, payload))
	c := &http.Cookie{
		Name:     SessionCookie,
		Value:    value,
		Path:     "/",
		Expires:  expires,
		MaxAge:   int(a.sessionTTL / time.Second),
		HttpOnly: true,
		Secure:   secure || a.secure,
		SameSite: http.SameSiteLaxMode,
	}
	return c, Identity{Name: t.Name, Kind: KindToken, Role: t.Role, Via: ViaSession, TokenID: t.ID}, nil
}

// LogoutCookie returns the cookie that ends a browser session.
func (a *Authenticator) LogoutCookie(secure bool) *http.Cookie {
	return &http.Cookie{
		Name:     SessionCookie,
		Value:    "",
		Path:     "/",
		MaxAge:   -1,
		Expires:  time.Unix(0, 0),
		HttpOnly: true,
		Secure:   secure || a.secure,
		SameSite: http.SameSiteLaxMode,
	}
}

// fromSession checks a session cookie: its signature, its expiry, and that its token is still
// live, so that revoking a token ends its sessions at once.
func (a *Authenticator) fromSession(ctx context.Context, value string) (Identity, error) {
	payload, ok := a.open(sessionPurpose, value)
	if !ok {
		return Identity{}, ErrInvalidCredentials
	}
	idText, expText, ok := strings.Cut(string(payload), "|")
	if !ok {
		return Identity{}, ErrInvalidCredentials
	}
	id, err1 := strconv.ParseInt(idText, 10, 64)
	exp, err2 := strconv.ParseInt(expText, 10, 64)
	if err1 != nil || err2 != nil || !a.now().Before(time.Unix(exp, 0)) {
		return Identity{}, ErrInvalidCredentials
	}
	t, err := a.liveToken(ctx, id)
	if err != nil {
		return Identity{}, err
	}
	a.touch(ctx, t)
	return Identity{Name: t.Name, Kind: KindToken, Role: t.Role, Via: ViaSession, TokenID: t.ID}, nil
}

// liveToken returns the token with the store id, or ErrInvalidCredentials when it is unknown or
// revoked: what a session or an embed link made by a token checks on every request.
func (a *Authenticator) liveToken(ctx context.Context, id int64) (store.Token, error) {
	if a.store == nil {
		return store.Token{}, ErrInvalidCredentials
	}
	// Tokens are few (one per person or bot), so a scan is cheaper than another store method.
	tokens, err := a.store.ListTokens(ctx)
	if err != nil {
		return store.Token{}, fmt.Errorf("auth: list tokens: %w", err)
	}
	for _, t := range tokens {
		if t.ID == id && t.RevokedAt.IsZero() {
			return t, nil
		}
	}
	return store.Token{}, ErrInvalidCredentials
}

// open checks a "payload.mac" value signed for purpose and returns the payload.
func (a *Authenticator) open(purpose, value string) ([]byte, bool) {
	if len(value) > 4096 {
		return nil, false
	}
	p, m, ok := strings.Cut(value, ".")
	if !ok {
		return nil, false
	}
	payload, err1 := base64.RawURLEncoding.DecodeString(p)
	mac, err2 := base64.RawURLEncoding.DecodeString(m)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	if !hmac.Equal(mac, a.sign(purpose, payload)) {
		return nil, false
	}
	return payload, true
}

func enc(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
