package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/auth"
)

// signEmbedLink signs an embed link for any scope with key, as the authenticator signs links.
// The authenticator makes none for a page that cannot be embedded (a message's page, say), so
// such a link can only be forged with the key or come from a build that made them; the route
// table below shows that it opens nothing even then.
func signEmbedLink(key []byte, scope string, expires time.Time) string {
	payload := []byte(strconv.FormatInt(expires.Unix(), 10) + "|" + scope)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("embed/v1"))
	m.Write([]byte{0})
	m.Write(payload)
	enc := base64.RawURLEncoding.EncodeToString
	return enc(payload) + "." + enc(m.Sum(nil))
}

// TestEmbedLinkScopeOverEveryRoute walks every registered route: an embed link opens its own
// page, that page's fragments and its websocket, and nothing else. A route added later that this
// table does not know fails the test, so its embed scope is decided, not inherited.
func TestEmbedLinkScopeOverEveryRoute(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken, sessionKey: key})
	ctx := t.Context()
	dlq, err := h.w.Views.ResolveQueue(ctx, "orders-dlq")
	if err != nil {
		t.Fatal(err)
	}
	other, err := h.w.Views.ResolveQueue(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	expires := h.w.Now().Add(time.Hour)
	links := map[string]string{
		"overview": signEmbedLink(key, auth.EmbedOverview, expires),
		"queue":    signEmbedLink(key, auth.EmbedQueueScope("orders-dlq"), expires),
		"message":  signEmbedLink(key, "/queues/orders-dlq/messages/m-1", expires),
	}
	// The forged links are signed as the authenticator signs: the one it makes itself matches.
	if made, _, err := h.auth.EmbedToken(auth.EmbedQueueScope("orders-dlq"), time.Hour); err != nil || made != links["queue"] {
		t.Fatalf("the test signs links unlike the authenticator: %q, %v; want %q", made, err, links["queue"])
	}
	if _, _, err := h.auth.EmbedToken("/queues/orders-dlq/messages/m-1", time.Hour); err == nil {
		t.Fatal("the authenticator made a link to a message's page")
	}

	// Each route's requests, and the links that may open each. Anything under /api and every
	// method but GET is refused to every link, by the rules below the table.
	type target struct {
		path  string
		htmx  bool
		opens []string
	}
	queueTopic := func(id int64) string { return "/ws?topic=" + url.QueryEscape(queueTopic(id)) + "&embed=1" }
	table := map[string][]target{
		"/": {
			{path: "/?embed=1", opens: []string{"overview"}},
			{path: "/?embed=1&sort=name&dir=desc&q=orders", htmx: true, opens: []string{"overview"}},
		},
		"/audit":  {{path: "/audit?embed=1"}},
		"/status": {{path: "/status?embed=1"}},
		"/ws": {
			{path: "/ws?topic=overview&embed=1", opens: []string{"overview"}},
			{path: queueTopic(dlq.ID), opens: []string{"queue"}},
			{path: queueTopic(other.ID)},
			{path: "/ws?topic=audit&embed=1"},
		},
		"/queues/:queue": {
			{path: "/queues/orders-dlq?embed=1", opens: []string{"queue"}},
			{path: "/queues/orders-dlq?embed=1&range=7d", htmx: true, opens: []string{"queue"}},
			{path: "/queues/orders?embed=1"},
			{path: "/queues/calls-dlq.fifo?embed=1"},
		},
		"/queues/:queue/messages":            {{path: "/queues/orders-dlq/messages?embed=1"}},
		"/queues/:queue/messages.json":       {{path: "/queues/orders-dlq/messages.json?embed=1"}},
		"/queues/:queue/messages.csv":        {{path: "/queues/orders-dlq/messages.csv?embed=1"}},
		"/queues/:queue/messages/:messageId": {{path: "/queues/orders-dlq/messages/m-1?embed=1"}},
		"/queues/:queue/redrive":             {{path: "/queues/orders-dlq/redrive?embed=1"}},
		"/metrics":                           {{path: "/metrics"}},
	}
	concrete := strings.NewReplacer(":queue", "orders-dlq", ":messageId", "m-1", "*", "x")

	seen := map[string]bool{}
	for _, r := range h.srv.echo.Routes() {
		if r.Method == echo.RouteNotFound || seen[r.Method+" "+r.Path] {
			continue
		}
		seen[r.Method+" "+r.Path] = true
		var targets []target
		switch {
		case publicPath(concrete.Replace(r.Path)):
			continue // served to anyone: the login page, probes, static files
		case r.Method != http.MethodGet || isAPIPath(r.Path):
			targets = []target{{path: concrete.Replace(r.Path)}}
		default:
			var ok bool
			if targets, ok = table[r.Path]; !ok {
				t.Errorf("GET %s is not in the embed scope table: decide which links may open it", r.Path)
				continue
			}
		}
		for _, tg := range targets {
			for kind, token := range links {
				t.Run(kind+" link "+r.Method+" "+tg.path, func(t *testing.T) {
					sep := "?"
					if strings.Contains(tg.path, "?") {
						sep = "&"
					}
					header := map[string]string{}
					if tg.htmx {
						header["HX-Request"] = "true"
					}
					if r.Method != http.MethodGet {
						header["Content-Type"] = "application/x-www-form-urlencoded"
					}
					rec := h.do(t, apiRequest{method: r.Method, target: tg.path + sep + auth.EmbedParam + "=" + url.QueryEscape(token), header: header})
					// A refusal is 403: the link is valid, the request is outside it (401 or a
					// redirect to the login page would mean the link itself was not accepted).
					opened := rec.Code != http.StatusForbidden
					if want := slices.Contains(tg.opens, kind); opened != want || (!want && rec.Code != http.StatusForbidden) {
						t.Errorf("status %d; want opened = %v", rec.Code, want)
					}
					if opened && rec.Code >= 300 && !(r.Path == "/ws" && rec.Code == http.StatusBadRequest) {
						t.Errorf("opened with status %d: %s", rec.Code, clip(rec.Body.String()))
					}
				})
			}
		}
	}
	for path := range table {
		if !seen[http.MethodGet+" "+path] {
			t.Errorf("the table lists %s, which is no route", path)
		}
	}
}

// TestEmbedLinkRequests: POST /api/v1/embed-links makes links only to what a link can open, by
// the same rule the authenticator applies.
func TestEmbedLinkRequests(t *testing.T) {
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	tests := []struct {
		name   string
		path   string
		status int
		code   string
		scope  string // of the link made
	}{
		{"the overview", "/?embed=1", http.StatusCreated, "", "/"},
		{"the overview, no embed flag", "/", http.StatusCreated, "", "/"},
		{"a queue", "/queues/orders-dlq?embed=1", http.StatusCreated, "", "/queues/orders-dlq"},
		{"a queue by its escaped ARN", "/queues/" + url.PathEscape("arn:aws:sqs:us-east-1:000000000000:orders") + "?embed=1", http.StatusCreated, "", "/queues/arn:aws:sqs:us-east-1:000000000000:orders"},
		{"the audit log", "/audit?embed=1", http.StatusBadRequest, "invalid_path", ""},
		{"a queue's messages", "/queues/orders-dlq/messages?embed=1", http.StatusBadRequest, "invalid_path", ""},
		{"a message's page", "/queues/orders-dlq/messages/m-1?embed=1", http.StatusBadRequest, "invalid_path", ""},
		{"an export", "/queues/orders-dlq/messages.csv", http.StatusBadRequest, "invalid_path", ""},
		{"the redrive panel", "/queues/orders-dlq/redrive?embed=1", http.StatusBadRequest, "invalid_path", ""},
		{"the websocket", "/ws?topic=audit", http.StatusBadRequest, "invalid_path", ""},
		{"metrics", "/metrics", http.StatusBadRequest, "invalid_path", ""},
		{"a trailing slash", "/queues/orders-dlq/", http.StatusBadRequest, "invalid_path", ""},
		{"an escaped slash", "/queues/a%2Fb?embed=1", http.StatusBadRequest, "invalid_path", ""},
		{"another parameter", "/queues/orders-dlq?embed=1&range=7d", http.StatusBadRequest, "invalid_path", ""},
		{"another site", "//evil.example/", http.StatusBadRequest, "invalid_path", ""},
		{"a queue nobody watches", "/queues/nope?embed=1", http.StatusNotFound, "queue_not_found", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{"path":` + strconv.Quote(tt.path) + `}`
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links", body: body, header: jsonPost(h.viewer)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.code != "" {
				if got := errorCode(t, rec.Body.Bytes()); got != tt.code {
					t.Errorf("code %q, want %q", got, tt.code)
				}
				return
			}
			var link struct{ Path string }
			if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(link.Path)
			if err != nil || u.Path != tt.scope || u.Query().Get("embed") != "1" || u.Query().Get(auth.EmbedParam) == "" {
				t.Errorf("link %q; want one to %s", link.Path, tt.scope)
			}
			if page := h.do(t, apiRequest{target: u.String()}); page.Code != http.StatusOK {
				t.Errorf("the link's own page: status %d", page.Code)
			}
		})
	}
}
