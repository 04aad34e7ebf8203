package auth

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// EmbedParam is the query parameter that carries an embed link's token.
const EmbedParam = "embed_token"

// embedPurpose separates embed signatures from the key's other uses.
const embedPurpose = "embed/v1"

// MaxEmbedTTL bounds how long an embed link lives: long-lived links are shared credentials.
const MaxEmbedTTL = 30 * 24 * time.Hour

// EmbedToken signs a read-only link to the page at scope (a path such as "/" or
// "/queues/tool-calls.fifo", without query) valid for ttl. The token grants viewer rights for GET
// requests to that page, the pages under it, and the websocket (/ws); never the API. It is bound
// to no one: only its expiry or a new session key ends it. Links asked for by a caller are made
// with EmbedTokenFor.
func (a *Authenticator) EmbedToken(scope string, ttl time.Duration) (string, time.Time, error) {
	return a.EmbedTokenFor(Identity{}, scope, ttl)
}

// EmbedTokenFor is EmbedToken for a link that issuer asks for. A link made by an API token (or a
// session of one) names that token and dies with it: otherwise a revoked token's owner could
// keep reading through the 30-day links it made. Proxy users have no token to name; their links
// last until they expire.
func (a *Authenticator) EmbedTokenFor(issuer Identity, scope string, ttl time.Duration) (string, time.Time, error) {
	if !strings.HasPrefix(scope, "/") || strings.ContainsAny(scope, "?#|") {
		return "", time.Time{}, fmt.Errorf("auth: embed scope %q is not a path", scope)
	}
	if ttl <= 0 || ttl > MaxEmbedTTL {
		return "", time.Time{}, fmt.Errorf("auth: embed link lifetime %s out of range", ttl)
	}
	expires := a.now().Add(ttl).Truncate(time.Second)
	payload := strconv.FormatInt(expires.Unix(), 10) + "|" + scope
	if issuer.Kind == KindToken && issuer.TokenID > 0 {
		payload += "|" + strconv.FormatInt(issuer.TokenID, 10)
	}
	return enc([]byte(payload)) + "." + enc(a.sign(embedPurpose, []byte(payload))), expires, nil
}

// fromEmbed checks an embed token against the request it came with.
func (a *Authenticator) fromEmbed(r *http.Request, token string) (Identity, error) {
	payload, ok := a.open(embedPurpose, token)
	if !ok {
		return Identity{}, ErrInvalidCredentials
	}
	expText, scope, ok := strings.Cut(string(payload), "|")
	exp, err := strconv.ParseInt(expText, 10, 64)
	if !ok || err != nil || !a.now().Before(time.Unix(exp, 0)) {
		return Identity{}, ErrInvalidCredentials
	}
	// Scopes hold no "|" (EmbedTokenFor refuses them), so a third field is the issuing token.
	if scopePath, issuer, bound := strings.Cut(scope, "|"); bound {
		tokenID, err := strconv.ParseInt(issuer, 10, 64)
		if err != nil {
			return Identity{}, ErrInvalidCredentials
		}
		if _, err := a.liveToken(r.Context(), tokenID); err != nil {
			return Identity{}, err
		}
		scope = scopePath
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return Identity{}, ErrOutOfScope
	}
	if !InEmbedScope(scope, r.URL.Path) {
		return Identity{}, ErrOutOfScope
	}
	return Identity{Name: "embed", Kind: KindEmbed, Role: RoleViewer, Via: ViaEmbed, Scope: scope}, nil
}

// InEmbedScope reports whether an embed link for scope covers path: the page itself, pages under
// it (fragments, message details), and the websocket. The API and /metrics are never covered;
// scope "/" covers every page.
func InEmbedScope(scope, path string) bool {
	if path == "/api" || strings.HasPrefix(path, "/api/") || path == "/metrics" {
		return false
	}
	switch {
	case path == "/ws", scope == "/", path == scope:
		return true
	}
	return strings.HasPrefix(path, strings.TrimSuffix(scope, "/")+"/")
}
