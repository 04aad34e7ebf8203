package auth

import (
	"fmt"
	"net/http"
	"net/url"
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

// MaxViewerEmbedTTL bounds the links a viewer makes: a viewer may show what it reads, but not
// hand out a month-long credential to it; operators may, up to MaxEmbedTTL.
const MaxViewerEmbedTTL = 24 * time.Hour

// MaxEmbedTTLFor is the longest embed link someone of role may make.
func MaxEmbedTTLFor(role Role) time.Duration {
	if role == RoleOperator {
		return MaxEmbedTTL
	}
	return MaxViewerEmbedTTL
}

// An embed link opens one page, the way a portal's iframe shows it (?embed=1): the overview
// (scope "/") or one queue's page (scope "/queues/REF", REF a queue name or ARN, path-escaped).
// It covers GET requests for that page, its own fragments (htmx asks for them at the same path)
// and the websocket (/ws, whose topic the server holds to the same page). Nothing else: not the
// pages its links lead to, the audit log, another queue, a queue's messages, their bodies or
// exports, the API or /metrics. The functions below are the one statement of that rule: the
// authenticator applies it to every request, the server to websocket topics and to the paths
// POST /api/v1/embed-links accepts.

// EmbedOverview is the scope of a link to the overview.
const EmbedOverview = "/"

// embedQueuePrefix starts the scope of a link to one queue's page.
const embedQueuePrefix = "/queues/"

// EmbedQueueScope returns the scope of a link to the page of the queue ref (a name or an ARN).
func EmbedQueueScope(ref string) string { return embedQueuePrefix + url.PathEscape(ref) }

// EmbedQueue returns the queue (its name or ARN, unescaped) whose page a link's scope opens; ok
// is false for a scope that is no queue's page.
func EmbedQueue(scope string) (ref string, ok bool) {
	rest, ok := strings.CutPrefix(scope, embedQueuePrefix)
	if !ok || rest == "" || strings.Contains(rest, "/") {
		return "", false
	}
	ref, err := url.PathUnescape(rest)
	if err != nil || ref == "" || strings.Contains(ref, "/") {
		return "", false
	}
	return ref, true
}

// ValidEmbedScope reports whether scope is a page an embed link can open: the overview or a
// queue's page.
func ValidEmbedScope(scope string) bool {
	_, queue := EmbedQueue(scope)
	return scope == EmbedOverview || queue
}

// InEmbedScope reports whether a link for scope covers a GET of path (as http.Request.URL.Path
// has it, unescaped): its page, which also answers that page's fragments, and the websocket.
func InEmbedScope(scope, path string) bool {
	switch {
	case path == "/ws":
		return ValidEmbedScope(scope)
	case scope == EmbedOverview:
		return path == "/"
	}
	ref, ok := EmbedQueue(scope)
	return ok && path == embedQueuePrefix+ref
}

// EmbedToken signs a read-only link to the page at scope (EmbedOverview or an EmbedQueueScope)
// valid for ttl. The token grants viewer rights for GET requests to that page and its websocket
// (see InEmbedScope); never the API. It is bound to no one: only its expiry or a new session key
// ends it. Links asked for by a caller are made with EmbedTokenFor.
func (a *Authenticator) EmbedToken(scope string, ttl time.Duration) (string, time.Time, error) {
	return a.EmbedTokenFor(Identity{}, scope, ttl)
}

// EmbedTokenFor is EmbedToken for a link that issuer asks for. A link made by an API token (or a
// session of one) names that token and dies with it: otherwise a revoked token's owner could
// keep reading through the 30-day links it made. Proxy users have no token to name; their links
// last until they expire.
func (a *Authenticator) EmbedTokenFor(issuer Identity, scope string, ttl time.Duration) (string, time.Time, error) {
	if !ValidEmbedScope(scope) || strings.ContainsAny(scope, "?#|") {
		return "", time.Time{}, fmt.Errorf("auth: embed scope %q is not a page a link can open", scope)
	}
	if ttl <= 0 || ttl > MaxEmbedTTLFor(issuer.Role) {
		return "", time.Time{}, fmt.Errorf("auth: embed link lifetime %s out of range for a %s", ttl, issuer.Role)
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
