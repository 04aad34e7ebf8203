// Package auth decides who makes a request to toolq and what they may do.
//
// Three modes (--auth): "none" treats every request as a local operator and is only allowed on a
// loopback listener unless explicitly forced; "token" accepts API tokens (Authorization: Bearer,
// or a browser session cookie obtained by POST /login with a token); "proxy" trusts the user and
// groups that an authenticating reverse proxy such as oauth2-proxy puts in X-Forwarded-User and
// X-Forwarded-Groups, but only from the proxy's own addresses. In every mode, signed embed links
// give read-only access to one page for iframes in other sites.
//
// Only SHA-256 hashes of tokens are stored; the plain token is shown once, when it is created.
package auth

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Role is what an identity may do: viewers read, operators also start and cancel redrives.
type Role string

// Roles.
const (
	RoleViewer   Role = "viewer"
	RoleOperator Role = "operator"
)

// Kind is what sort of identity made a request.
type Kind string

// Identity kinds.
const (
	KindNone  Kind = "none"  // auth off: a local operator
	KindToken Kind = "token" // an API token, by Bearer header or session cookie
	KindProxy Kind = "proxy" // a user named by the trusted reverse proxy
	KindEmbed Kind = "embed" // a signed embed link: read-only, one page
)

// Via is how the credentials of a request arrived. The CSRF checks depend on it: a Bearer header
// cannot be sent by a hostile page, a cookie can.
type Via string

// Ways credentials arrive.
const (
	ViaNone    Via = "none"
	ViaBearer  Via = "bearer"
	ViaSession Via = "session"
	ViaProxy   Via = "proxy"
	ViaEmbed   Via = "embed"
)

// Identity is who made a request.
type Identity struct {
	Name string
	Kind Kind
	Role Role
	// Via says how the credentials arrived.
	Via Via
	// Scope is, for an embed link, the path the link opens (e.g. "/queues/tool-calls.fifo");
	// requests and websocket topics outside it must be refused. Empty for other kinds.
	Scope string
	// TokenID is the store id of the API token of a KindToken identity, 0 for other kinds. Embed
	// links made by a token carry it, so that revoking the token ends them too.
	TokenID int64
	// Credential names the credential the request was made with, not the name it goes by:
	// "token:<id>" for a Bearer token, "session:<ref>" for a browser session (ref is derived from
	// the session's random id, never the id itself), "proxy:<user>" for a proxy user,
	// "none:anonymous" under --auth none. Confirmations, idempotency keys and CSRF pairs are
	// bound to it, so that a new token given a revoked one's name, or a token named like a proxy
	// user, is another caller. Empty for embed links, which cannot act.
	Credential string
}

// CanAct reports whether the identity may start and cancel redrives.
func (i Identity) CanAct() bool { return i.Role == RoleOperator }

// Anonymous is the identity of every request when auth is off.
var Anonymous = Identity{Name: "anonymous", Kind: KindNone, Role: RoleOperator, Via: ViaNone, Credential: "none:anonymous"}

// tokenCredential is the Credential of a request made with the token of that id by its Bearer
// header.
func tokenCredential(id int64) string { return "token:" + strconv.FormatInt(id, 10) }

// Mode is how requests are authenticated (--auth).
type Mode string

// Modes.
const (
	ModeNone  Mode = "none"
	ModeToken Mode = "token"
	ModeProxy Mode = "proxy"
)

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeNone, ModeToken, ModeProxy:
		return m, nil
	}
	return "", fmt.Errorf("auth: unknown mode %q (want none, token or proxy)", s)
}

// ValidRole reports whether r names a role.
func ValidRole(r string) bool { return Role(r) == RoleViewer || Role(r) == RoleOperator }

// Errors of authentication. The server answers 401 for the first three and 403 for the others.
var (
	// ErrNoCredentials: the request carries no credentials.
	ErrNoCredentials = errors.New("auth: no credentials")
	// ErrInvalidCredentials: a token, session or embed link that is unknown, revoked, expired
	// or forged.
	ErrInvalidCredentials = errors.New("auth: invalid credentials")
	// ErrUntrustedProxy: proxy headers from an address outside the trusted proxies.
	ErrUntrustedProxy = errors.New("auth: proxy headers from an untrusted address")
	// ErrNoRole: a proxy user none of whose groups maps to a role, with no default role.
	ErrNoRole = errors.New("auth: no role for this user")
	// ErrOutOfScope: an embed link used for another page or for a change.
	ErrOutOfScope = errors.New("auth: embed link does not cover this request")
)

// ErrInsecureListen is returned by CheckListen for auth "none" beyond loopback.
var ErrInsecureListen = errors.New("auth: --auth none is only allowed on a loopback address (use --auth token or proxy, or --allow-insecure-no-auth)")

// CheckListen refuses to serve without authentication on anything but a loopback address, since
// anyone who can reach the port could then move messages. allowInsecure overrides it
// (--allow-insecure-no-auth), for a listener protected some other way.
func CheckListen(mode Mode, listenAddr string, allowInsecure bool) error {
	if _, err := ParseMode(string(mode)); err != nil {
		return err
	}
	if mode != ModeNone || allowInsecure {
		return nil
	}
	host, _, err := net.SplitHostPort(listenAddr)
	if err != nil {
		return fmt.Errorf("auth: listen address %q: %w", listenAddr, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrInsecureListen, listenAddr)
}

// LoopbackListen reports whether a listen address ("host:port") binds loopback only.
func LoopbackListen(listenAddr string) bool {
	host, _, err := net.SplitHostPort(listenAddr)
	return err == nil && isLoopbackHost(host)
}

// LoopbackRequestHost reports whether a request's Host header ("host" or "host:port") names this
// machine. A dashboard without auth on loopback must refuse every other name: a hostile page
// whose DNS name is re-bound to 127.0.0.1 (DNS rebinding) is otherwise same-origin with it, so
// neither the browser nor the CSRF checks stop it from reading the API and starting redrives.
func LoopbackRequestHost(hostHeader string) bool {
	host, _, err := net.SplitHostPort(hostHeader)
	if err != nil {
		host = strings.TrimSuffix(strings.TrimPrefix(hostHeader, "["), "]")
	}
	return isLoopbackHost(host)
}

// isLoopbackHost reports whether host only ever means this machine. An empty host listens on
// every interface, so it is not loopback.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
