package auth

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
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

// An embed link opens one view, the way a portal's iframe shows it: the overview (path "/") or
// one queue's card (path "/queues/REF", REF a queue name or ARN, path-escaped), with embed=1 and
// the parameters it was made with (the portal's theme and colours, the overview's filters). It
// covers GET requests for that view, its own fragments (htmx asks for them at the same path,
// with the same parameters) and the websocket (/ws, whose topic the server holds to the same
// page). A request must carry each parameter the link fixed, as it fixed it, and no parameter
// but those and the few the view lets its reader change (the overview's sort and scale): without
// embed=1 the same path is the full page, with message ids, tool names and bodies. Nothing else:
// not the pages its links lead to, the audit log, another queue, a queue's messages, their
// bodies or exports, the API or /metrics. The functions below are the one statement of that
// rule: the authenticator applies it to every request, the server to websocket topics and to
// the paths POST /api/v1/embed-links accepts.

// EmbedOverview is the path of a link to the overview.
const EmbedOverview = "/"

// embedQueuePrefix starts the path of a link to one queue's page.
const embedQueuePrefix = "/queues/"

// embedWebsocket is the path of the live updates, which every embeddable page opens.
const embedWebsocket = "/ws"

// embedLook are the parameters of a portal's look, which every embeddable page reads: a link
// fixes them as it was made (absent when made without).
var embedLook = []string{"theme", "colors"}

// EmbedLookParams returns the names of the parameters of a portal's look (theme, colors), which
// every embeddable page reads and every link fixes.
func EmbedLookParams() []string { return slices.Clone(embedLook) }

// embedPageParams are the query parameters one embeddable page reads besides embed=1: fixed
// ones are set when the link is made and held to that value (or held absent); free ones are the
// reader's to change, since they choose how the same rows are shown, never which.
type embedPageParams struct {
	fixed, free []string
}

// embedOverviewParams: the overview reads its filters (q, misconfigured, account, region: which
// queues the view shows) and its order and scale (sort, dir, scale).
var embedOverviewParams = embedPageParams{
	fixed: append(slices.Clone(embedLook), "q", "misconfigured", "account", "region"),
	free:  []string{"sort", "dir", "scale"},
}

// embedQueueParams: an embedded queue card reads the look alone (it draws no charts, so no range).
var embedQueueParams = embedPageParams{fixed: embedLook}

// EmbedView is a view an embed link opens: its page and the parameters the link fixes.
type EmbedView struct {
	// Path is EmbedOverview or an EmbedQueueScope, escaped as the link's URL has it.
	Path string
	// Fixed holds the parameters the link was made with, embed=1 among them, one value each.
	Fixed url.Values
}

// EmbedQueueScope returns the path of a link to the page of the queue ref (a name or an ARN).
func EmbedQueueScope(ref string) string { return embedQueuePrefix + url.PathEscape(ref) }

// EmbedQueue returns the queue (its name or ARN, unescaped) whose page a link's path (or
// scope) opens; ok is false for one that is no queue's page.
func EmbedQueue(scope string) (ref string, ok bool) {
	scope, _, _ = strings.Cut(scope, "?")
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

// embedParamsOf returns the parameters the page at path reads; ok is false for a path no link
// can open.
func embedParamsOf(path string) (embedPageParams, bool) {
	if path == EmbedOverview {
		return embedOverviewParams, true
	}
	if _, ok := EmbedQueue(path); ok && !strings.ContainsAny(path, "?#|") {
		return embedQueueParams, true
	}
	return embedPageParams{}, false
}

// EmbedParams returns the names of the query parameters the page at path reads besides embed:
// those a link fixes and those its reader may change; ok is false for a path no link can open.
func EmbedParams(path string) (fixed, free []string, ok bool) {
	p, ok := embedParamsOf(path)
	return slices.Clone(p.fixed), slices.Clone(p.free), ok
}

// ParseEmbedView reads the view a link is asked for, a path with its query as a browser's
// address bar has it ("/queues/NAME?embed=1&theme=dark"): an embeddable page, embed=1 once, and
// each other parameter once and one that page reads. It returns the view, whose Fixed holds
// embed=1 and the fixed parameters given, and the free parameters given (which a link does not
// hold). Values are as given: the server, which knows what each means, checks them.
func ParseEmbedView(target string) (EmbedView, url.Values, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return EmbedView{}, nil, fmt.Errorf("auth: embed link target %q is not a path of this site", target)
	}
	path := u.EscapedPath()
	params, ok := embedParamsOf(path)
	if !ok {
		return EmbedView{}, nil, fmt.Errorf("auth: %q is not a page an embed link can open", path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return EmbedView{}, nil, fmt.Errorf("auth: embed link query: %w", err)
	}
	if len(q["embed"]) != 1 || q.Get("embed") != "1" {
		return EmbedView{}, nil, fmt.Errorf("auth: an embed link is for an embedded view: embed=1 once")
	}
	view := EmbedView{Path: path, Fixed: url.Values{"embed": {"1"}}}
	free := url.Values{}
	for k, vs := range q {
		switch {
		case k == "embed":
		case len(vs) != 1:
			return EmbedView{}, nil, fmt.Errorf("auth: embed link parameter %q given %d times", k, len(vs))
		case slices.Contains(params.fixed, k):
			view.Fixed.Set(k, vs[0])
		case slices.Contains(params.free, k):
			free.Set(k, vs[0])
		default:
			return EmbedView{}, nil, fmt.Errorf("auth: %s reads no parameter %q", path, k)
		}
	}
	return view, free, nil
}

// Scope is the view as a link signs it: its path, "?" and its fixed parameters in a canonical
// order ("/queues/orders-dlq?embed=1&theme=dark"). A scope holds no "|": the token's fields are
// separated by it (url.Values.Encode escapes it).
func (v EmbedView) Scope() string { return v.Path + "?" + v.Fixed.Encode() }

// parseEmbedScope reads a scope as Scope writes it. A scope without a query, as links made before
// links fixed their parameters signed it, is its path with embed=1 alone.
func parseEmbedScope(scope string) (EmbedView, bool) {
	path, query, hasQuery := strings.Cut(scope, "?")
	params, ok := embedParamsOf(path)
	if !ok {
		return EmbedView{}, false
	}
	if !hasQuery {
		return EmbedView{Path: path, Fixed: url.Values{"embed": {"1"}}}, true
	}
	fixed, err := url.ParseQuery(query)
	if err != nil || len(fixed["embed"]) != 1 || fixed.Get("embed") != "1" {
		return EmbedView{}, false
	}
	for k, vs := range fixed {
		if len(vs) != 1 || (k != "embed" && !slices.Contains(params.fixed, k)) {
			return EmbedView{}, false
		}
	}
	return EmbedView{Path: path, Fixed: fixed}, true
}

// ValidEmbedScope reports whether scope is a view an embed link can open: the overview or a
// queue's page, bare ("/queues/orders-dlq") or with the parameters it fixes, as
// EmbedView.Scope writes them.
func ValidEmbedScope(scope string) bool {
	_, ok := parseEmbedScope(scope)
	return ok
}

// InEmbedScope reports whether a link for scope covers a GET of u (a request's URL: its path
// as http.Request.URL.Path has it, unescaped, and its raw query): the link's page, which also
// answers that page's fragments, or the websocket, with embed=1 and the link's fixed parameters
// as fixed, and no parameter the page does not read (the websocket's topic aside, which the
// server holds to the link's page). Every parameter appears once.
func InEmbedScope(scope string, u *url.URL) bool {
	view, ok := parseEmbedScope(scope)
	if !ok {
		return false
	}
	return view.covers(u)
}

// covers is InEmbedScope for a parsed scope.
func (v EmbedView) covers(u *url.URL) bool {
	ws := u.Path == embedWebsocket
	if !ws {
		if v.Path == EmbedOverview {
			if u.Path != EmbedOverview {
				return false
			}
		} else if ref, _ := EmbedQueue(v.Path); u.Path != embedQueuePrefix+ref {
			return false
		}
	}
	params, _ := embedParamsOf(v.Path)
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return false
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return false
		}
		switch {
		case k == EmbedParam, ws && k == "topic", slices.Contains(params.free, k):
		case k == "embed", slices.Contains(params.fixed, k):
			if fixed, ok := v.Fixed[k]; !ok || fixed[0] != vs[0] {
				return false
			}
		default:
			return false
		}
	}
	for k := range v.Fixed {
		if _, ok := q[k]; !ok {
			return false
		}
	}
	return true
}

// EmbedToken signs a read-only link to the view at scope (an EmbedView's Scope, or a bare
// EmbedOverview or EmbedQueueScope: the view with embed=1 alone) valid for ttl. The token grants
// viewer rights for GET requests to that view and its websocket (see InEmbedScope); never the
// API. It is bound to no one: only its expiry or a new session key
// ends it. Links asked for by a caller are made with EmbedTokenFor.
func (a *Authenticator) EmbedToken(scope string, ttl time.Duration) (string, time.Time, error) {
	return a.EmbedTokenFor(Identity{}, scope, ttl)
}

// EmbedTokenFor is EmbedToken for a link that issuer asks for. A link made by an API token (or a
// session of one) names that token and dies with it: otherwise a revoked token's owner could
// keep reading through the 30-day links it made. Proxy users have no token to name; their links
// last until they expire.
func (a *Authenticator) EmbedTokenFor(issuer Identity, scope string, ttl time.Duration) (string, time.Time, error) {
	view, ok := parseEmbedScope(scope)
	if !ok || strings.ContainsAny(scope, "#|") {
		return "", time.Time{}, fmt.Errorf("auth: embed scope %q is not a view a link can open", scope)
	}
	scope = view.Scope()
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
	// A signed scope that is no view (no build makes one) opens nothing, as any request outside
	// a link does.
	view, ok := parseEmbedScope(scope)
	if !ok || !view.covers(r.URL) {
		return Identity{}, ErrOutOfScope
	}
	return Identity{Name: "embed", Kind: KindEmbed, Role: RoleViewer, Via: ViaEmbed, Scope: view.Path}, nil
}
