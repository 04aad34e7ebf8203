package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// Config configures an Authenticator. Mode is required; Store is required in token mode (and
// lets bots use Bearer tokens in proxy mode too).
type Config struct {
	Mode  Mode
	Store TokenStore

	// TrustedProxies are the addresses (CIDRs) of the authenticating proxy in proxy mode. Proxy
	// headers from any other peer are refused, since anyone could set them.
	TrustedProxies []netip.Prefix
	// ProxyOperatorGroups are the groups (X-Forwarded-Groups) whose members are operators.
	ProxyOperatorGroups []string
	// ProxyDefaultRole is the role of a proxy user in none of those groups: RoleViewer or
	// RoleOperator; empty refuses such users (403). The --proxy-default-role flag defaults to
	// viewer; the zero Config denies, the safer reading of "unset".
	ProxyDefaultRole Role
	// AllowedHosts are the host names, besides --listen's and --public-url's, that requests may
	// name in their Host header (--allowed-host; see Hosts): the names a proxy in front forwards.
	AllowedHosts []string

	// SessionKey signs browser session cookies, embed links and CSRF tokens. Default: 32 random
	// bytes, so sessions and embed links end when the process restarts. At least 32 bytes.
	SessionKey []byte
	// SessionTTL is how long a browser session lasts. Default 12h.
	SessionTTL time.Duration
	// SecureCookies marks cookies Secure even on plain-HTTP requests (TLS terminated in front).
	SecureCookies bool

	Now    func() time.Time // default time.Now
	Logger *slog.Logger     // default discard
}

// Authenticator establishes the Identity of requests. It is safe for concurrent use.
type Authenticator struct {
	mode          Mode
	store         TokenStore
	proxies       []netip.Prefix
	operatorGroup map[string]bool
	defaultRole   Role
	allowedHosts  []string
	key           []byte
	sessionTTL    time.Duration
	secure        bool
	now           func() time.Time
	log           *slog.Logger
}

// touchEvery limits how often a token's last use is written: once a minute is enough for
// "last used" and spares the database a write per request.
const touchEvery = time.Minute

// New returns an Authenticator for cfg.
func New(cfg Config) (*Authenticator, error) {
	if _, err := ParseMode(string(cfg.Mode)); err != nil {
		return nil, err
	}
	if cfg.Mode == ModeToken && cfg.Store == nil {
		return nil, errors.New("auth: token mode needs a token store")
	}
	if cfg.Mode == ModeProxy && len(cfg.TrustedProxies) == 0 {
		return nil, errors.New("auth: proxy mode needs --trusted-proxy (the proxy's CIDRs)")
	}
	if cfg.ProxyDefaultRole != "" && !ValidRole(string(cfg.ProxyDefaultRole)) {
		return nil, fmt.Errorf("auth: proxy default role %q: %w", cfg.ProxyDefaultRole, ErrBadRole)
	}
	allowedHosts, err := ParseAllowedHosts(cfg.AllowedHosts)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{
		mode:          cfg.Mode,
		store:         cfg.Store,
		proxies:       cfg.TrustedProxies,
		operatorGroup: make(map[string]bool),
		defaultRole:   cfg.ProxyDefaultRole,
		allowedHosts:  allowedHosts,
		key:           cfg.SessionKey,
		sessionTTL:    cfg.SessionTTL,
		secure:        cfg.SecureCookies,
		now:           cfg.Now,
		log:           cfg.Logger,
	}
	for _, g := range cfg.ProxyOperatorGroups {
		if g = strings.TrimSpace(g); g != "" {
			a.operatorGroup[g] = true
		}
	}
	if len(a.key) == 0 {
		a.key = make([]byte, 32)
		_, _ = rand.Read(a.key)
	} else if len(a.key) < 32 {
		return nil, errors.New("auth: the session key must be at least 32 bytes")
	}
	if a.sessionTTL <= 0 {
		a.sessionTTL = 12 * time.Hour
	}
	if a.now == nil {
		a.now = time.Now
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	return a, nil
}

// ParseProxies parses --trusted-proxy values: CIDRs or single addresses.
func ParseProxies(values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		ip, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("auth: trusted proxy %q: not a CIDR or an address", v)
		}
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

// Mode returns the authentication mode.
func (a *Authenticator) Mode() Mode { return a.mode }

// TrustedPeer reports whether remoteAddr (host:port, as in http.Request.RemoteAddr) is one of the
// trusted proxies; only then may X-Forwarded-For name the client.
func (a *Authenticator) TrustedPeer(remoteAddr string) bool {
	ip, ok := peerAddr(remoteAddr)
	if !ok {
		return false
	}
	for _, p := range a.proxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Authenticate returns who made r. In order: a Bearer header decides alone; then the mode's own
// credentials (a session cookie, or the proxy's headers); then an embed link. The error is one
// of ErrNoCredentials, ErrInvalidCredentials, ErrUntrustedProxy (answer 401), ErrNoRole or
// ErrOutOfScope (answer 403).
func (a *Authenticator) Authenticate(r *http.Request) (Identity, error) {
	if a.mode == ModeNone {
		return Anonymous, nil
	}
	if h := r.Header.Get("Authorization"); h != "" {
		return a.fromBearer(r.Context(), h)
	}
	err := ErrNoCredentials
	switch a.mode {
	case ModeToken:
		if c, cerr := r.Cookie(SessionCookie); cerr == nil && c.Value != "" {
			id, serr := a.fromSession(r.Context(), c.Value)
			if serr == nil {
				return id, nil
			}
			err = serr
		}
	case ModeProxy:
		id, perr := a.fromProxy(r)
		if perr == nil {
			return id, nil
		}
		err = perr
	}
	if t := r.URL.Query().Get(EmbedParam); t != "" {
		return a.fromEmbed(r, t)
	}
	return Identity{}, err
}

// fromBearer checks an "Authorization: Bearer tq_..." header.
func (a *Authenticator) fromBearer(ctx context.Context, header string) (Identity, error) {
	scheme, plain, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || a.store == nil {
		return Identity{}, ErrInvalidCredentials
	}
	plain = strings.TrimSpace(plain)
	if !looksLikeToken(plain) {
		return Identity{}, ErrInvalidCredentials
	}
	t, err := a.store.TokenByHash(ctx, HashToken(plain))
	if err != nil {
		return Identity{}, a.lookupError(err)
	}
	a.touch(ctx, t)
	return Identity{Name: t.Name, Kind: KindToken, Role: Role(t.Role), Via: ViaBearer, TokenID: t.ID, Credential: tokenCredential(t.ID)}, nil
}

// lookupError turns a failed token lookup into ErrInvalidCredentials, keeping other failures
// (a database error) distinct so that they answer 500 rather than 401.
func (a *Authenticator) lookupError(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return ErrInvalidCredentials
	}
	return fmt.Errorf("auth: look up token: %w", err)
}

// touch records a token's use, at most once a minute. Failing to record it must not refuse the
// request, so the error is only logged.
func (a *Authenticator) touch(ctx context.Context, t store.Token) {
	now := a.now()
	if now.Sub(t.LastUsedAt) < touchEvery {
		return
	}
	if err := a.store.TouchToken(ctx, t.ID, now); err != nil {
		a.log.Warn("auth: record token use", "token", t.Name, "err", err)
	}
}

// sign returns the HMAC of msg under the session key, separated by purpose so that a value
// signed for one use (an embed link) is never accepted for another (a session).
func (a *Authenticator) sign(purpose string, msg []byte) []byte {
	m := hmac.New(sha256.New, a.key)
	m.Write([]byte(purpose))
	m.Write([]byte{0})
	m.Write(msg)
	return m.Sum(nil)
}

// Sign returns an HMAC of msg for purpose under the server's key (the CSRF tokens use it).
func (a *Authenticator) Sign(purpose string, msg []byte) []byte { return a.sign("ext:"+purpose, msg) }

// Verify reports whether mac is Sign(purpose, msg), in constant time.
func (a *Authenticator) Verify(purpose string, msg, mac []byte) bool {
	return hmac.Equal(a.Sign(purpose, msg), mac)
}

// AllowedHosts returns the host names of Config.AllowedHosts, lower-cased.
func (a *Authenticator) AllowedHosts() []string { return a.allowedHosts }

// TrustedProxies returns the proxies' CIDRs of proxy mode.
func (a *Authenticator) TrustedProxies() []netip.Prefix { return a.proxies }
