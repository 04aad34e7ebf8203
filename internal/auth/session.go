package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// SessionCookie is the browser session cookie of token mode.
const SessionCookie = "toolq_session"

// sessionPurpose separates session signatures from the key's other uses. v2 cookies name a
// session the store can end; v1 cookies (a token id and an expiry alone) are no longer accepted.
const sessionPurpose = "session/v2"

// sessionIDBytes is the entropy of a session id: 128 random bits.
const sessionIDBytes = 16

// Login checks a plain token typed into the login form, opens a session of it in the store and
// returns the session cookie to set: HttpOnly, SameSite=Lax, holding a signed, expiring reference
// to the token's id and the session's random id (never the token itself). secure marks it Secure
// (the request came over TLS). The error is ErrInvalidCredentials for a bad token.
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
	now := a.now()
	expires := now.Add(a.sessionTTL)
	sid := make([]byte, sessionIDBytes)
	_, _ = rand.Read(sid)
	if err := a.store.CreateSession(ctx, t.ID, sessionHash(sid), now, expires); err != nil {
		return nil, Identity{}, fmt.Errorf("auth: open a session: %w", err)
	}
	payload := []byte(fmt.Sprintf("%d|%d|%s", t.ID, expires.Unix(), enc(sid)))
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
	return c, a.sessionIdentity(t, sid), nil
}

// Logout ends the session a cookie value names, on the server: the cookie, and every copy of it,
// is refused from then on. A value that names no open session (forged, expired, already ended)
// is no error: there is nothing left to end. Only a store failure is.
func (a *Authenticator) Logout(ctx context.Context, value string) error {
	sess, ok := a.parseSession(value)
	if !ok || a.store == nil {
		return nil
	}
	err := a.store.EndSession(ctx, sessionHash(sess.id), a.now())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("auth: end the session: %w", err)
	}
	return nil
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

// fromSession checks a session cookie: its signature, its expiry, and that the store still
// holds it open (not signed out) for a live token, so that a sign-out or revoking the token ends
// it at once.
func (a *Authenticator) fromSession(ctx context.Context, value string) (Identity, error) {
	sess, ok := a.parseSession(value)
	if !ok || !a.now().Before(sess.expires) || a.store == nil {
		return Identity{}, ErrInvalidCredentials
	}
	t, err := a.store.SessionToken(ctx, sessionHash(sess.id), a.now())
	if err != nil {
		return Identity{}, a.lookupError(err)
	}
	if t.ID != sess.tokenID {
		return Identity{}, ErrInvalidCredentials
	}
	a.touch(ctx, t)
	return a.sessionIdentity(t, sess.id), nil
}

// sessionIdentity is who a browser session of token t, with the random id sid, is.
func (a *Authenticator) sessionIdentity(t store.Token, sid []byte) Identity {
	return Identity{Name: t.Name, Kind: KindToken, Role: Role(t.Role), Via: ViaSession, TokenID: t.ID,
		Credential: a.sessionCredential(sid)}
}

// sessionCredential names a session in Identity.Credential: a signature of its random id under
// a purpose of its own, so that what the audit log keeps of it opens nothing (neither the
// cookie, which needs the id, nor the store's row, which is keyed by the id's SHA-256).
func (a *Authenticator) sessionCredential(sid []byte) string {
	return "session:" + enc(a.sign("session-ref", sid)[:12])
}

// PublicCredential is the Credential of a request to a public path (the sign-in and sign-out
// forms), which is not authenticated: under --auth none the anonymous operator's, in proxy mode
// the proxy user's, in token mode the session its cookie names (signed, even if it has ended or
// expired: signing out of an ended session must still pass the CSRF check), else "" (nobody).
func (a *Authenticator) PublicCredential(r *http.Request) string {
	switch a.mode {
	case ModeNone:
		return Anonymous.Credential
	case ModeProxy:
		if id, err := a.fromProxy(r); err == nil {
			return id.Credential
		}
	case ModeToken:
		if c, err := r.Cookie(SessionCookie); err == nil {
			if sess, ok := a.parseSession(c.Value); ok {
				return a.sessionCredential(sess.id)
			}
		}
	}
	return ""
}

// sessionRef is what a session cookie holds.
type sessionRef struct {
	tokenID int64
	expires time.Time
	id      []byte // the random session id; the store keeps its SHA-256
}

// parseSession checks a session cookie's signature and reads it.
func (a *Authenticator) parseSession(value string) (sessionRef, bool) {
	payload, ok := a.open(sessionPurpose, value)
	if !ok {
		return sessionRef{}, false
	}
	parts := strings.Split(string(payload), "|")
	if len(parts) != 3 {
		return sessionRef{}, false
	}
	tokenID, err1 := strconv.ParseInt(parts[0], 10, 64)
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	id, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || len(id) != sessionIDBytes {
		return sessionRef{}, false
	}
	return sessionRef{tokenID: tokenID, expires: time.Unix(exp, 0), id: id}, true
}

// sessionHash is how the store knows a session: the SHA-256 of its random id.
func sessionHash(id []byte) []byte {
	h := sha256.Sum256(id)
	return h[:]
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
