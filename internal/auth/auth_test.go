package auth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openStore(t *testing.T) *store.Store {
	t.Helper()
	return storetest.Open(t)
}

// clock is a settable now.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestCheckListen(t *testing.T) {
	tests := []struct {
		mode     auth.Mode
		addr     string
		insecure bool
		ok       bool
	}{
		{auth.ModeNone, "127.0.0.1:8080", false, true},
		{auth.ModeNone, "[::1]:8080", false, true},
		{auth.ModeNone, "localhost:8080", false, true},
		{auth.ModeNone, ":8080", false, false},
		{auth.ModeNone, "0.0.0.0:8080", false, false},
		{auth.ModeNone, "10.1.2.3:8080", false, false},
		{auth.ModeNone, "dashboard.internal:8080", false, false},
		{auth.ModeNone, "[::]:8080", false, false},
		{auth.ModeNone, "192.168.1.20:8080", false, false},
		{auth.ModeNone, "[fe80::1]:8080", false, false},
		{auth.ModeNone, "localhost.example.com:8080", false, false},
		{auth.ModeNone, "LOCALHOST:8080", false, true},
		{auth.ModeNone, "127.0.0.2:8080", false, true},
		{auth.ModeNone, "[::ffff:127.0.0.1]:8080", false, true},
		{auth.ModeNone, "[::]:8080", true, true},
		{auth.ModeNone, ":8080", true, true},
		{auth.ModeToken, ":8080", false, true},
		{auth.ModeProxy, "0.0.0.0:8080", false, true},
		{auth.Mode("basic"), "127.0.0.1:8080", false, false},
		{auth.ModeNone, "not an address", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+" "+tt.addr, func(t *testing.T) {
			err := auth.CheckListen(tt.mode, tt.addr, tt.insecure)
			if (err == nil) != tt.ok {
				t.Errorf("CheckListen(%s, %q, %v) = %v; want ok=%v", tt.mode, tt.addr, tt.insecure, err, tt.ok)
			}
		})
	}
	if err := auth.CheckListen(auth.ModeNone, ":8080", false); !errors.Is(err, auth.ErrInsecureListen) {
		t.Errorf("err = %v; want ErrInsecureListen", err)
	}
}

func TestLoopbackRequestHost(t *testing.T) {
	tests := []struct {
		host string
		want bool
	}{
		{"127.0.0.1:8080", true},
		{"127.0.0.1", true},
		{"127.9.9.9:80", true},
		{"localhost:8080", true},
		{"LocalHost", true},
		{"[::1]:8080", true},
		{"[::1]", true},
		{"", false}, // HTTP/1.0 without Host: nothing proves a loopback name was asked for
		{"evil.example:8080", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.nip.io:8080", false},
		{"10.0.0.1:8080", false},
		{"[fe80::1]:8080", false},
		{"0.0.0.0:8080", false},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			if got := auth.LoopbackRequestHost(tt.host); got != tt.want {
				t.Errorf("LoopbackRequestHost(%q) = %v, want %v", tt.host, got, tt.want)
			}
		})
	}
}

func TestGenerateToken(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		plain, hash := auth.GenerateToken()
		if !strings.HasPrefix(plain, "tq_") || len(plain) < 3+43 {
			t.Fatalf("token %q: want tq_ and at least 256 bits", plain)
		}
		if strings.Trim(plain[3:], "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("token %q is not base32", plain)
		}
		if string(hash) != string(auth.HashToken(plain)) || len(hash) != 32 {
			t.Fatalf("hash of %q is not its SHA-256", plain)
		}
		if seen[plain] {
			t.Fatalf("token %q generated twice", plain)
		}
		seen[plain] = true
	}
}

func TestCreateTokenAndBearer(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	c := &clock{t: t0}
	a, err := auth.New(auth.Config{Mode: auth.ModeToken, Store: st, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := auth.CreateToken(ctx, st, "deploy-bot", auth.RoleOperator)
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	if _, err := auth.CreateToken(ctx, st, "deploy-bot", auth.RoleViewer); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate name: err = %v; want ErrConflict", err)
	}
	for _, bad := range []struct{ name, role string }{{"", "viewer"}, {"has space", "viewer"}, {strings.Repeat("x", 65), "viewer"}, {"ok", "admin"}} {
		if _, err := auth.CreateToken(ctx, st, bad.name, auth.Role(bad.role)); err == nil {
			t.Errorf("CreateToken(%q, %q) accepted", bad.name, bad.role)
		}
	}
	tokens, _ := auth.ListTokens(ctx, st)
	for _, tk := range tokens {
		if strings.Contains(tk.Name, plain) {
			t.Error("the plain token is stored")
		}
	}

	req := func(header string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		return r
	}
	id, err := a.Authenticate(req("Bearer " + plain))
	if err != nil || id.Name != "deploy-bot" || id.Role != auth.RoleOperator || id.Kind != auth.KindToken || id.Via != auth.ViaBearer {
		t.Fatalf("Authenticate = %+v, %v", id, err)
	}
	for _, h := range []string{"", "Bearer tq_wrong", "Bearer " + plain + "x", "Basic " + plain, "Bearer", "Bearer " + strings.Repeat("a", 5000)} {
		_, err := a.Authenticate(req(h))
		if !errors.Is(err, auth.ErrNoCredentials) && !errors.Is(err, auth.ErrInvalidCredentials) {
			t.Errorf("Authorization %.30q: err = %v; want refused", h, err)
		}
	}
	if err := auth.RevokeToken(ctx, st, "deploy-bot"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if _, err := a.Authenticate(req("Bearer " + plain)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("revoked token: err = %v; want ErrInvalidCredentials", err)
	}
}

func TestSessions(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	c := &clock{t: t0}
	a, _ := auth.New(auth.Config{Mode: auth.ModeToken, Store: st, Now: c.now, SessionTTL: time.Hour})
	plain, _ := auth.CreateToken(ctx, st, "alice", auth.RoleViewer)

	if _, _, err := a.Login(ctx, "tq_nope", false); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Fatalf("Login with a bad token: %v", err)
	}
	cookie, id, err := a.Login(ctx, plain, false)
	if err != nil || id.Name != "alice" {
		t.Fatalf("Login: %+v, %v", id, err)
	}
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || cookie.Path != "/" || strings.Contains(cookie.Value, plain) {
		t.Fatalf("cookie = %+v", cookie)
	}
	withCookie := func(v string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: v})
		return r
	}
	if id, err := a.Authenticate(withCookie(cookie.Value)); err != nil || id.Name != "alice" || id.Via != auth.ViaSession {
		t.Fatalf("session: %+v, %v", id, err)
	}
	// Tampered, foreign-key and expired sessions are refused.
	other, _ := auth.New(auth.Config{Mode: auth.ModeToken, Store: st, Now: c.now})
	if _, err := other.Authenticate(withCookie(cookie.Value)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("session signed by another key: %v", err)
	}
	tampered := strings.Replace(cookie.Value, cookie.Value[:4], "AAAA", 1)
	if _, err := a.Authenticate(withCookie(tampered)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("tampered session: %v", err)
	}
	c.t = t0.Add(2 * time.Hour)
	if _, err := a.Authenticate(withCookie(cookie.Value)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("expired session: %v", err)
	}
	// Signing out ends the session on the server: a copy of the cookie is refused after it,
	// while another session of the same token goes on.
	c.t = t0
	second, _, err := a.Login(ctx, plain, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Logout(ctx, cookie.Value); err != nil {
		t.Fatalf("Logout: %v", err)
	}
	if _, err := a.Authenticate(withCookie(cookie.Value)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("session after its sign-out: %v", err)
	}
	if err := a.Logout(ctx, cookie.Value); err != nil {
		t.Errorf("second Logout: %v; want nil", err)
	}
	if err := a.Logout(ctx, "forged.value"); err != nil {
		t.Errorf("Logout of a forged cookie: %v; want nil", err)
	}
	if id, err := a.Authenticate(withCookie(second.Value)); err != nil || id.Name != "alice" {
		t.Errorf("the other session after one sign-out: %+v, %v", id, err)
	}
	// Revoking the token ends its sessions at once.
	if err := auth.RevokeToken(ctx, st, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(withCookie(second.Value)); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("session of a revoked token: %v", err)
	}
	if lc := a.LogoutCookie(false); lc.MaxAge >= 0 || lc.Value != "" {
		t.Errorf("logout cookie = %+v", lc)
	}
}

func TestProxy(t *testing.T) {
	proxies, err := auth.ParseProxies([]string{"10.0.0.0/8", "192.0.2.10"})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(auth.Config{Mode: auth.ModeProxy, TrustedProxies: proxies, ProxyOperatorGroups: []string{"sre", "oncall"}, ProxyDefaultRole: auth.RoleViewer})
	if err != nil {
		t.Fatal(err)
	}
	deny, _ := auth.New(auth.Config{Mode: auth.ModeProxy, TrustedProxies: proxies, ProxyOperatorGroups: []string{"sre"}})
	tests := []struct {
		name     string
		a        *auth.Authenticator
		remote   string
		user     string
		groups   string
		wantRole auth.Role
		wantErr  error
	}{
		{"operator group", a, "10.1.2.3:5555", "carol@example.com", "dev, sre", auth.RoleOperator, nil},
		{"no group: default viewer", a, "10.1.2.3:5555", "dave", "dev", auth.RoleViewer, nil},
		{"single trusted address", a, "192.0.2.10:1", "erin", "oncall", auth.RoleOperator, nil},
		{"untrusted address", a, "203.0.113.5:5555", "mallory", "sre", "", auth.ErrUntrustedProxy},
		{"trusted, no user", a, "10.1.2.3:5555", "", "sre", "", auth.ErrNoCredentials},
		{"control characters", a, "10.1.2.3:5555", "eve\x00admin", "sre", "", auth.ErrInvalidCredentials},
		{"no default role denies", deny, "10.1.2.3:5555", "dave", "dev", "", auth.ErrNoRole},
		{"no default role, mapped group", deny, "10.1.2.3:5555", "carol", "sre", auth.RoleOperator, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = tt.remote
			if tt.user != "" {
				r.Header.Set(auth.HeaderForwardedUser, tt.user)
			}
			r.Header.Set(auth.HeaderForwardedGroups, tt.groups)
			id, err := tt.a.Authenticate(r)
			if !errors.Is(err, tt.wantErr) || (err == nil && (id.Role != tt.wantRole || id.Name != tt.user || id.Kind != auth.KindProxy)) {
				t.Errorf("Authenticate = %+v, %v; want role %q, err %v", id, err, tt.wantRole, tt.wantErr)
			}
		})
	}
	if _, err := auth.New(auth.Config{Mode: auth.ModeProxy}); err == nil {
		t.Error("proxy mode without trusted proxies accepted")
	}
	if _, err := auth.ParseProxies([]string{"not-a-cidr"}); err == nil {
		t.Error("ParseProxies accepted junk")
	}
}

func TestEmbedLinks(t *testing.T) {
	st := openStore(t)
	c := &clock{t: t0}
	a, _ := auth.New(auth.Config{Mode: auth.ModeToken, Store: st, Now: c.now})
	tok, exp, err := a.EmbedToken("/queues/orders-dlq", time.Hour)
	if err != nil || !exp.Equal(t0.Add(time.Hour)) {
		t.Fatalf("EmbedToken: %v, %v", exp, err)
	}
	overview, _, _ := a.EmbedToken("/", time.Hour)
	dark, _, err := a.EmbedToken("/queues/orders-dlq?colors=bg%3A000000&embed=1&theme=dark", time.Hour)
	if err != nil {
		t.Fatalf("EmbedToken with a theme: %v", err)
	}
	prod, _, err := a.EmbedToken("/?account=prod&embed=1", time.Hour)
	if err != nil {
		t.Fatalf("EmbedToken with a filter: %v", err)
	}
	tests := []struct {
		name    string
		method  string
		target  string
		token   string
		wantErr error
	}{
		{"the page", http.MethodGet, "/queues/orders-dlq?embed=1", tok, nil},
		{"the page, HEAD", http.MethodHead, "/queues/orders-dlq?embed=1", tok, nil},
		{"the page without embed=1", http.MethodGet, "/queues/orders-dlq", tok, auth.ErrOutOfScope},
		{"the page with embed=0", http.MethodGet, "/queues/orders-dlq?embed=0", tok, auth.ErrOutOfScope},
		{"the page with embed twice", http.MethodGet, "/queues/orders-dlq?embed=1&embed=1", tok, auth.ErrOutOfScope},
		{"the page with a parameter its card does not read", http.MethodGet, "/queues/orders-dlq?embed=1&range=7d", tok, auth.ErrOutOfScope},
		{"the page with a redrive notice", http.MethodGet, "/queues/orders-dlq?embed=1&done=started", tok, auth.ErrOutOfScope},
		{"the page with a theme the link was not made with", http.MethodGet, "/queues/orders-dlq?embed=1&theme=dark", tok, auth.ErrOutOfScope},
		{"the page with a malformed query", http.MethodGet, "/queues/orders-dlq?embed=1&%zz", tok, auth.ErrOutOfScope},
		{"its messages", http.MethodGet, "/queues/orders-dlq/messages?embed=1", tok, auth.ErrOutOfScope},
		{"a message's body", http.MethodGet, "/queues/orders-dlq/messages/m-1?embed=1", tok, auth.ErrOutOfScope},
		{"its export", http.MethodGet, "/queues/orders-dlq/messages.csv?embed=1", tok, auth.ErrOutOfScope},
		{"its redrive panel", http.MethodGet, "/queues/orders-dlq/redrive?embed=1", tok, auth.ErrOutOfScope},
		{"the websocket", http.MethodGet, "/ws?topic=queue:1&embed=1", tok, nil},
		{"the websocket without embed=1", http.MethodGet, "/ws?topic=queue:1", tok, auth.ErrOutOfScope},
		{"the websocket with a chart range", http.MethodGet, "/ws?topic=queue:1&embed=1&range=7d", tok, auth.ErrOutOfScope},
		{"another queue", http.MethodGet, "/queues/orders?embed=1", tok, auth.ErrOutOfScope},
		{"a prefix of another name", http.MethodGet, "/queues/orders-dlq-2?embed=1", tok, auth.ErrOutOfScope},
		{"the overview", http.MethodGet, "/?embed=1", tok, auth.ErrOutOfScope},
		{"themed link, its page", http.MethodGet, "/queues/orders-dlq?embed=1&theme=dark&colors=bg:000000", dark, nil},
		{"themed link, its websocket", http.MethodGet, "/ws?topic=queue:1&embed=1&theme=dark&colors=bg:000000", dark, nil},
		{"themed link, another theme", http.MethodGet, "/queues/orders-dlq?embed=1&theme=light&colors=bg:000000", dark, auth.ErrOutOfScope},
		{"themed link, no colours", http.MethodGet, "/queues/orders-dlq?embed=1&theme=dark", dark, auth.ErrOutOfScope},
		{"themed link, no embed=1", http.MethodGet, "/queues/orders-dlq?theme=dark&colors=bg:000000", dark, auth.ErrOutOfScope},
		{"the API", http.MethodGet, "/api/v1/queues?embed=1", overview, auth.ErrOutOfScope},
		{"metrics", http.MethodGet, "/metrics?embed=1", overview, auth.ErrOutOfScope},
		{"a POST", http.MethodPost, "/queues/orders-dlq/redrive?embed=1", tok, auth.ErrOutOfScope},
		{"overview link, the overview", http.MethodGet, "/?embed=1", overview, nil},
		{"overview link, sorted and scaled", http.MethodGet, "/?embed=1&sort=name&dir=desc&scale=shared", overview, nil},
		{"overview link, without embed=1", http.MethodGet, "/", overview, auth.ErrOutOfScope},
		{"overview link, sorted without embed=1", http.MethodGet, "/?sort=name", overview, auth.ErrOutOfScope},
		{"overview link, a filter it was not made with", http.MethodGet, "/?embed=1&account=prod", overview, auth.ErrOutOfScope},
		{"overview link, another parameter", http.MethodGet, "/?embed=1&before=3", overview, auth.ErrOutOfScope},
		{"overview link, its websocket", http.MethodGet, "/ws?topic=overview&embed=1&sort=name&dir=desc", overview, nil},
		{"overview link, its websocket filtered", http.MethodGet, "/ws?topic=overview&embed=1&q=x", overview, auth.ErrOutOfScope},
		{"overview link, a queue page", http.MethodGet, "/queues/orders?embed=1", overview, auth.ErrOutOfScope},
		{"overview link, the audit log", http.MethodGet, "/audit?embed=1", overview, auth.ErrOutOfScope},
		{"overview link, an export", http.MethodGet, "/queues/orders-dlq/messages.json?embed=1", overview, auth.ErrOutOfScope},
		{"filtered link, its overview", http.MethodGet, "/?embed=1&account=prod&sort=name", prod, nil},
		{"filtered link, the filter removed", http.MethodGet, "/?embed=1", prod, auth.ErrOutOfScope},
		{"filtered link, another account", http.MethodGet, "/?embed=1&account=staging", prod, auth.ErrOutOfScope},
		{"filtered link, the filter twice", http.MethodGet, "/?embed=1&account=prod&account=staging", prod, auth.ErrOutOfScope},
		{"filtered link, its websocket without the filter", http.MethodGet, "/ws?topic=overview&embed=1", prod, auth.ErrOutOfScope},
		{"forged", http.MethodGet, "/queues/orders-dlq?embed=1", tok[:len(tok)-2] + "xx", auth.ErrInvalidCredentials},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			sep := "?"
			if strings.Contains(target, "?") {
				sep = "&"
			}
			r := httptest.NewRequest(tt.method, target+sep+auth.EmbedParam+"="+tt.token, nil)
			id, err := a.Authenticate(r)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v; want %v", err, tt.wantErr)
			}
			if err == nil && (id.Role != auth.RoleViewer || id.Kind != auth.KindEmbed || id.CanAct()) {
				t.Errorf("identity = %+v; want a viewer embed", id)
			}
		})
	}
	// The token itself once only: a second one could be another link's.
	r := httptest.NewRequest(http.MethodGet, "/?embed=1&"+auth.EmbedParam+"="+overview+"&"+auth.EmbedParam+"="+tok, nil)
	if _, err := a.Authenticate(r); !errors.Is(err, auth.ErrOutOfScope) {
		t.Errorf("two embed tokens: %v", err)
	}
	c.t = t0.Add(61 * time.Minute)
	r = httptest.NewRequest(http.MethodGet, "/queues/orders-dlq?embed=1&embed_token="+tok, nil)
	if _, err := a.Authenticate(r); !errors.Is(err, auth.ErrInvalidCredentials) {
		t.Errorf("expired embed link: %v", err)
	}
	for _, bad := range []string{"queues", "/a?b", "/x|y", "/audit", "/queues/", "/queues/orders-dlq/messages",
		"/queues/orders-dlq/messages/m-1", "/queues/a%2Fb", "/metrics", "/?q=x", "/?embed=1&before=2", "/queues/x?embed=1&range=7d",
		"/?embed=1&theme=dark&theme=light", "/?embed=1#top"} {
		if _, _, err := a.EmbedToken(bad, time.Hour); err == nil {
			t.Errorf("EmbedToken(%q) accepted", bad)
		}
	}
	if _, _, err := a.EmbedToken("/", 31*24*time.Hour); err == nil {
		t.Error("a 31-day embed link accepted")
	}
}

// TestEmbedScope is the rule itself: which scopes exist and which requests each covers.
func TestEmbedScope(t *testing.T) {
	arn := "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
	tests := []struct {
		scope string
		valid bool
		ref   string   // the queue of a queue scope
		opens []string // targets it covers; every other target of the list below is refused
	}{
		{"/", true, "", []string{"/?embed=1", "/?embed=1&sort=name&dir=desc", "/ws?topic=overview&embed=1", "/ws?topic=queue:1&embed=1"}},
		{"/?embed=1", true, "", []string{"/?embed=1", "/?embed=1&sort=name&dir=desc", "/ws?topic=overview&embed=1", "/ws?topic=queue:1&embed=1"}},
		{"/?embed=1&theme=dark", true, "", []string{"/?embed=1&theme=dark", "/ws?topic=overview&embed=1&theme=dark"}},
		{"/queues/orders-dlq", true, "orders-dlq", []string{"/queues/orders-dlq?embed=1", "/ws?topic=queue:1&embed=1", "/ws?topic=overview&embed=1"}},
		{auth.EmbedQueueScope(arn), true, arn, []string{"/queues/" + arn + "?embed=1", "/ws?topic=queue:1&embed=1", "/ws?topic=overview&embed=1"}},
		{"/queues/orders-dlq?embed=1&sort=name", false, "", nil},
		{"/queues/orders-dlq?theme=dark", false, "", nil},
		{"/?embed=1&embed=1", false, "", nil},
		{"/queues/orders-dlq/messages/m-1", false, "", nil},
		{"/queues/orders-dlq/messages", false, "", nil},
		{"/audit", false, "", nil},
		{"/queues/", false, "", nil},
		{"", false, "", nil},
	}
	targets := []string{"/", "/?embed=1", "/?embed=1&sort=name&dir=desc", "/?embed=1&theme=dark", "/?embed=1&q=orders",
		"/ws?topic=overview&embed=1", "/ws?topic=overview&embed=1&theme=dark", "/ws?topic=queue:1&embed=1", "/ws?topic=queue:1",
		"/audit?embed=1", "/metrics", "/api/v1/queues", "/queues/orders-dlq", "/queues/orders-dlq?embed=1", "/queues/orders?embed=1",
		"/queues/orders-dlq?embed=1&range=7d", "/queues/orders-dlq/messages?embed=1", "/queues/orders-dlq/messages/m-1?embed=1",
		"/queues/orders-dlq/messages.json?embed=1", "/queues/orders-dlq/messages.csv?embed=1", "/queues/orders-dlq/redrive?embed=1",
		"/queues/" + arn + "?embed=1", "/queues/orders-dlq-2?embed=1", "/login"}
	for _, tt := range tests {
		t.Run(tt.scope, func(t *testing.T) {
			if got := auth.ValidEmbedScope(tt.scope); got != tt.valid {
				t.Errorf("ValidEmbedScope = %v, want %v", got, tt.valid)
			}
			if ref, ok := auth.EmbedQueue(tt.scope); tt.valid && (ref != tt.ref || ok != (tt.ref != "")) {
				t.Errorf("EmbedQueue = %q, %v; want %q", ref, ok, tt.ref)
			}
			for _, target := range targets {
				u, err := url.Parse(target)
				if err != nil {
					t.Fatal(err)
				}
				// The websocket's topic is the server's to hold to the link's page: here any
				// topic passes, with the link's parameters.
				if got, want := auth.InEmbedScope(tt.scope, u), slices.Contains(tt.opens, target); got != want {
					t.Errorf("InEmbedScope(%q) = %v, want %v", target, got, want)
				}
			}
		})
	}
}

// TestParseEmbedView: the views a link may be asked for, and what each fixes.
func TestParseEmbedView(t *testing.T) {
	tests := []struct {
		target string
		scope  string // "" when refused
		free   string
	}{
		{"/?embed=1", "/?embed=1", ""},
		{"/?embed=1&theme=dark&colors=bg:ffffff", "/?colors=bg%3Affffff&embed=1&theme=dark", ""},
		{"/?embed=1&account=prod&sort=name&dir=desc", "/?account=prod&embed=1", "dir=desc&sort=name"},
		{"/queues/orders-dlq?embed=1&theme=light", "/queues/orders-dlq?embed=1&theme=light", ""},
		{"/queues/arn:aws:sqs:us-east-1:123456789012:orders?embed=1", "/queues/arn:aws:sqs:us-east-1:123456789012:orders?embed=1", ""},
		{"/", "", ""},
		{"/?embed=0", "", ""},
		{"/?embed=1&embed=1", "", ""},
		{"/?embed=1&theme=dark&theme=light", "", ""},
		{"/?embed=1&embed_token=x", "", ""},
		{"/queues/orders-dlq?embed=1&range=7d", "", ""},
		{"/queues/orders-dlq?embed=1&sort=name", "", ""},
		{"/queues/orders-dlq/messages?embed=1", "", ""},
		{"/audit?embed=1", "", ""},
		{"//evil.example/?embed=1", "", ""},
		{"https://toolq.example/?embed=1", "", ""},
		{"/?embed=1#x", "", ""},
		{"/?embed=1;theme=dark", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			view, free, err := auth.ParseEmbedView(tt.target)
			if tt.scope == "" {
				if err == nil {
					t.Fatalf("accepted as %q", view.Scope())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if view.Scope() != tt.scope || free.Encode() != tt.free {
				t.Errorf("scope %q, free %q; want %q, %q", view.Scope(), free.Encode(), tt.scope, tt.free)
			}
		})
	}
}

func TestEmbedLinksEndWithTheirToken(t *testing.T) {
	st := openStore(t)
	ctx := context.Background()
	a, _ := auth.New(auth.Config{Mode: auth.ModeToken, Store: st, Now: func() time.Time { return t0 }})
	plain, _ := auth.CreateToken(ctx, st, "portal-admin", auth.RoleViewer)
	bearer := httptest.NewRequest(http.MethodGet, "/", nil)
	bearer.Header.Set("Authorization", "Bearer "+plain)
	issuer, err := a.Authenticate(bearer)
	if err != nil || issuer.TokenID == 0 {
		t.Fatalf("bearer identity %+v, %v; want its token id", issuer, err)
	}
	_, session, _ := a.Login(ctx, plain, false)
	byToken, _, _ := a.EmbedTokenFor(issuer, "/", time.Hour)
	bySession, _, _ := a.EmbedTokenFor(session, "/", time.Hour)
	byProxy, _, _ := a.EmbedTokenFor(auth.Identity{Name: "carol", Kind: auth.KindProxy, Role: auth.RoleViewer}, "/", time.Hour)
	open := func(token string) error {
		_, err := a.Authenticate(httptest.NewRequest(http.MethodGet, "/?embed=1&"+auth.EmbedParam+"="+token, nil))
		return err
	}
	tests := []struct {
		name    string
		token   string
		revoked error // after portal-admin is revoked
	}{
		{"made with a bearer token", byToken, auth.ErrInvalidCredentials},
		{"made in a session of the token", bySession, auth.ErrInvalidCredentials},
		{"made by a proxy user", byProxy, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name+", token live", func(t *testing.T) {
			if err := open(tt.token); err != nil {
				t.Errorf("err = %v", err)
			}
		})
	}
	if err := auth.RevokeToken(ctx, st, "portal-admin"); err != nil {
		t.Fatal(err)
	}
	// A new token of the same name is another token: the old links stay dead.
	if _, err := auth.CreateToken(ctx, st, "portal-admin", auth.RoleViewer); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name+", token revoked", func(t *testing.T) {
			if err := open(tt.token); !errors.Is(err, tt.revoked) {
				t.Errorf("err = %v; want %v", err, tt.revoked)
			}
		})
	}
}

func TestModeNone(t *testing.T) {
	a, _ := auth.New(auth.Config{Mode: auth.ModeNone})
	id, err := a.Authenticate(httptest.NewRequest(http.MethodPost, "/api/v1/queues/x/redrives", nil))
	if err != nil || id != auth.Anonymous || !id.CanAct() {
		t.Errorf("none: %+v, %v", id, err)
	}
}
