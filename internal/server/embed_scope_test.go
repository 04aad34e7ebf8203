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

	"github.com/PuerkitoBio/goquery"
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
// view (its page with embed=1 and nothing its card does not read), that view's fragments and its
// websocket, and nothing else. A route added later that this table does not know fails the test,
// so its embed scope is decided, not inherited.
func TestEmbedLinkScopeOverEveryRoute(t *testing.T) {
	t.Parallel()
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
		"overview": signEmbedLink(key, auth.EmbedOverview+"?embed=1", expires),
		"queue":    signEmbedLink(key, auth.EmbedQueueScope("orders-dlq")+"?embed=1", expires),
		"message":  signEmbedLink(key, "/queues/orders-dlq/messages/m-1?embed=1", expires),
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
	queueTopic := func(id int64) string { return "/ws?topic=" + url.QueryEscape(queueTopic(id)) }
	table := map[string][]target{
		"/": {
			{path: "/?embed=1", opens: []string{"overview"}},
			{path: "/?embed=1&sort=name&dir=desc&scale=shared", htmx: true, opens: []string{"overview"}},
			{path: "/"}, // the whole overview: problems, cost, filters
			{path: "/?sort=name&dir=desc", htmx: true}, // its table, not embedded
			{path: "/?embed=1&q=orders", htmx: true},   // a filter the link was not made with
			{path: "/?embed=1&misconfigured=1"},        // another
			{path: "/?embed=1&theme=dark"},             // a look the link was not made with
			{path: "/?embed=1&before=9"},               // a parameter the overview does not read
			{path: "/?embed=1&embed=0"},                // embed twice
			{path: "/?embed=true"},                     // embed as the page does not read it
			{path: "/?embed=1&%zz=1"},                  // a query that does not parse
		},
		"/audit":  {{path: "/audit?embed=1"}},
		"/status": {{path: "/status?embed=1"}},
		"/ws": {
			{path: "/ws?topic=overview&embed=1", opens: []string{"overview"}},
			{path: "/ws?topic=overview&embed=1&sort=name&dir=desc", opens: []string{"overview"}},
			{path: "/ws?topic=overview"},                  // the whole overview's pushes
			{path: "/ws?topic=overview&embed=1&q=orders"}, // a filter the link was not made with
			{path: queueTopic(dlq.ID) + "&embed=1", opens: []string{"queue"}},
			{path: queueTopic(dlq.ID)},                       // the whole queue page's pushes: its sample
			{path: queueTopic(dlq.ID) + "&embed=1&range=7d"}, // charts the card does not draw
			{path: queueTopic(other.ID) + "&embed=1"},
			{path: "/ws?topic=audit&embed=1"},
		},
		"/queues/:queue": {
			{path: "/queues/orders-dlq?embed=1", opens: []string{"queue"}},
			{path: "/queues/orders-dlq?embed=1", htmx: true, opens: []string{"queue"}},
			{path: "/queues/orders-dlq"},             // the whole page: message ids, tools, bodies
			{path: "/queues/orders-dlq", htmx: true}, // its charts
			{path: "/queues/orders-dlq?embed=0"},
			{path: "/queues/orders-dlq?embed=1&range=7d", htmx: true}, // the card draws no chart
			{path: "/queues/orders-dlq?embed=1&done=started"},         // a notice for the full page
			{path: "/queues/orders-dlq?embed=1&sort=name"},            // the overview's parameter
			{path: "/queues/orders?embed=1"},
			{path: "/queues/calls-dlq.fifo?embed=1"},
		},
		"/queues/:queue/messages": {
			{path: "/queues/orders-dlq/messages?embed=1"},
			{path: "/queues/orders-dlq/messages?embed=1", htmx: true}, // a fragment of another view
		},
		"/queues/:queue/messages.json":       {{path: "/queues/orders-dlq/messages.json?embed=1"}},
		"/queues/:queue/messages.csv":        {{path: "/queues/orders-dlq/messages.csv?embed=1"}},
		"/queues/:queue/messages/:messageId": {{path: "/queues/orders-dlq/messages/m-1?embed=1"}},
		"/queues/:queue/redrive": {
			{path: "/queues/orders-dlq/redrive?embed=1"},
			{path: "/queues/orders-dlq/redrive?embed=1", htmx: true}, // the redrive panel's fragment
		},
		"/queues/:queue/redrives/:redriveId": {{path: "/queues/orders-dlq/redrives/1?embed=1"}},
		// The archive keeps discarded calls whole: no embed link opens any of it.
		"/archive":                          {{path: "/archive?embed=1"}},
		"/queues/:queue/archive":            {{path: "/queues/orders-dlq/archive?embed=1"}, {path: "/queues/orders-dlq/archive?embed=1", htmx: true}},
		"/queues/:queue/archive.json":       {{path: "/queues/orders-dlq/archive.json?embed=1"}},
		"/queues/:queue/archive.csv":        {{path: "/queues/orders-dlq/archive.csv?embed=1"}},
		"/queues/:queue/archive.jsonl":      {{path: "/queues/orders-dlq/archive.jsonl?embed=1"}},
		"/queues/:queue/archive/:messageId": {{path: "/queues/orders-dlq/archive/m-1?embed=1"}},
		"/metrics":                          {{path: "/metrics"}},
	}
	concrete := strings.NewReplacer(":queue", "orders-dlq", ":messageId", "m-1", ":redriveId", "1", "*", "x")

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
			targets = []target{{path: concrete.Replace(r.Path) + "?embed=1"}}
		default:
			var ok bool
			if targets, ok = table[r.Path]; !ok {
				t.Errorf("GET %s is not in the embed scope table: decide which links may open it", r.Path)
				continue
			}
		}
		for _, tg := range targets {
			for kind, token := range links {
				name := kind + " link " + r.Method + " " + tg.path
				if tg.htmx {
					name += " (htmx)"
				}
				t.Run(name, func(t *testing.T) {
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

// TestEmbedLinkRequests: POST /api/v1/embed-links makes links only to embedded views, by the
// same rule the authenticator applies, with the parameters those views read; each link opens its
// view as it was asked for, and not with embed=1 removed, a parameter added or one it fixed
// changed.
func TestEmbedLinkRequests(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	ref := url.PathEscape("arn:aws:sqs:us-east-1:000000000000:orders")
	tests := []struct {
		name   string
		path   string
		status int
		code   string
		// Of the link made: its scope and the query its URL carries besides the token.
		scope, query string
		// A page the link does not open: its fixed parameters changed.
		refused []string
	}{
		{"the overview", "/?embed=1", http.StatusCreated, "", "/", "embed=1", []string{"/?embed=1&theme=dark", "/?embed=1&q=orders"}},
		{"the overview, sorted", "/?embed=1&sort=name&dir=desc", http.StatusCreated, "", "/", "dir=desc&embed=1&sort=name", nil},
		{"the overview, sorted as it is by default", "/?embed=1&sort=health&dir=asc", http.StatusCreated, "", "/", "embed=1", nil},
		{"the overview, sorted by what it does not know", "/?embed=1&sort=bogus", http.StatusCreated, "", "/", "embed=1", nil},
		{"the overview of one account", "/?embed=1&account=default", http.StatusCreated, "", "/", "account=default&embed=1",
			[]string{"/?embed=1", "/?embed=1&account=other", "/?embed=1&account=default&region=us-east-1"}},
		{"the overview's misconfigured queues", "/?embed=1&misconfigured=1", http.StatusCreated, "", "/", "embed=1&misconfigured=1", []string{"/?embed=1"}},
		{"the overview, dark", "/?embed=1&theme=dark", http.StatusCreated, "", "/", "embed=1&theme=dark",
			[]string{"/?embed=1", "/?embed=1&theme=light"}},
		{"the overview, colours", "/?embed=1&colors=fg:%23112233,bg:FFFFFF", http.StatusCreated, "", "/", "colors=bg%3Affffff%2Cfg%3A112233&embed=1",
			[]string{"/?embed=1", "/?embed=1&colors=bg:ffffff"}},
		{"a queue", "/queues/orders-dlq?embed=1", http.StatusCreated, "", "/queues/orders-dlq", "embed=1", []string{"/queues/orders-dlq?embed=1&theme=dark"}},
		{"a queue, dark", "/queues/orders-dlq?embed=1&theme=dark", http.StatusCreated, "", "/queues/orders-dlq", "embed=1&theme=dark",
			[]string{"/queues/orders-dlq?embed=1", "/queues/orders-dlq?theme=dark"}},
		{"a queue by its escaped ARN", "/queues/" + ref + "?embed=1", http.StatusCreated, "", "/queues/arn:aws:sqs:us-east-1:000000000000:orders", "embed=1", nil},
		{"the overview, no embed flag", "/", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a queue, no embed flag", "/queues/orders-dlq", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a queue, embed=0", "/queues/orders-dlq?embed=0", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"embed twice", "/?embed=1&embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a theme twice", "/?embed=1&theme=dark&theme=light", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a theme there is not", "/?embed=1&theme=sepia", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"colours that are not", "/?embed=1&colors=bg:url(x)", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"misconfigured=yes", "/?embed=1&misconfigured=yes", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a filter too long", "/?embed=1&q=" + strings.Repeat("x", 201), http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a token of its own", "/?embed=1&embed_token=x", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"the audit log", "/audit?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a queue's messages", "/queues/orders-dlq/messages?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a message's page", "/queues/orders-dlq/messages/m-1?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"an export", "/queues/orders-dlq/messages.csv?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"the redrive panel", "/queues/orders-dlq/redrive?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"the websocket", "/ws?topic=audit&embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"metrics", "/metrics?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a trailing slash", "/queues/orders-dlq/?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"an escaped slash", "/queues/a%2Fb?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a chart range the card does not draw", "/queues/orders-dlq?embed=1&range=7d", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"the overview's parameter on a queue", "/queues/orders-dlq?embed=1&sort=name", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a parameter nothing reads", "/?embed=1&utm_source=portal", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"another site", "//evil.example/?embed=1", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a fragment", "/?embed=1#queues", http.StatusBadRequest, "invalid_path", "", "", nil},
		{"a queue nobody watches", "/queues/nope?embed=1", http.StatusNotFound, "queue_not_found", "", "", nil},
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
			var link struct{ Path, URL string }
			if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil {
				t.Fatal(err)
			}
			u, err := url.Parse(link.Path)
			if err != nil {
				t.Fatal(err)
			}
			token := u.Query().Get(auth.EmbedParam)
			rest := u.Query()
			rest.Del(auth.EmbedParam)
			if u.Path != tt.scope || token == "" || rest.Encode() != tt.query || !strings.HasSuffix(link.URL, link.Path) {
				t.Errorf("link %q; want one to %s?%s", link.Path, tt.scope, tt.query)
			}
			page := h.do(t, apiRequest{target: u.String()})
			if page.Code != http.StatusOK {
				t.Fatalf("the link's own page: status %d", page.Code)
			}
			if !strings.Contains(page.Body.String(), `class="embed"`) {
				t.Errorf("the link's page is not embedded: %s", clip(page.Body.String()))
			}
			// The same view with embed=1 removed, or with one more parameter, is not the link's.
			bare := u.Query()
			bare.Del("embed")
			refused := append([]string{u.Path + "?" + bare.Encode(), u.String() + "&range=1h", u.String() + "&done=started"}, tt.refused...)
			for _, target := range refused {
				if !strings.Contains(target, auth.EmbedParam+"=") {
					target += "&" + auth.EmbedParam + "=" + url.QueryEscape(token)
				}
				if rec := h.do(t, apiRequest{target: target}); rec.Code != http.StatusForbidden {
					t.Errorf("GET %s: status %d, want 403", target, rec.Code)
				}
			}
		})
	}
}

// TestEmbeddedViewsStayInTheirScope follows every link, fragment request and websocket of the
// embedded views that carries the link's token: each opens, so that what a view writes and what
// its link allows are the same list (a sort link that drops the theme, say, would break the
// iframe); a link that leaves the view carries no token and opens in a new tab.
func TestEmbeddedViewsStayInTheirScope(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeToken})
	for _, path := range []string{
		"/?embed=1",
		"/?embed=1&theme=dark&colors=bg:ffffff&account=default&scale=shared&sort=name&dir=desc",
		"/queues/orders-dlq?embed=1&theme=light&colors=fg:000000",
		"/queues/calls.fifo?embed=1",
	} {
		t.Run(path, func(t *testing.T) {
			body := `{"path":` + strconv.Quote(path) + `}`
			rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/embed-links", body: body, header: jsonPost(h.viewer)})
			if rec.Code != http.StatusCreated {
				t.Fatalf("POST embed-links: %d %s", rec.Code, rec.Body)
			}
			var link struct{ Path string }
			if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil {
				t.Fatal(err)
			}
			token, _ := url.Parse(link.Path)
			page := h.do(t, apiRequest{target: link.Path})
			if page.Code != http.StatusOK {
				t.Fatalf("GET %s: %d", link.Path, page.Code)
			}
			doc, err := goquery.NewDocumentFromReader(page.Body)
			if err != nil {
				t.Fatal(err)
			}
			followed := 0
			doc.Find("[href], [hx-get], [ws-connect]").Each(func(_ int, el *goquery.Selection) {
				for _, attr := range []string{"href", "hx-get", "ws-connect"} {
					target, ok := el.Attr(attr)
					if !ok || target == "" || strings.HasPrefix(target, "#") {
						continue
					}
					u, err := url.Parse(target)
					if err != nil {
						t.Errorf("%s=%q: %v", attr, target, err)
						continue
					}
					if u.Query().Get(auth.EmbedParam) != token.Query().Get(auth.EmbedParam) {
						// Out of the view: no token, and a new tab where the reader signs in.
						if publicPath(u.Path) || u.Host != "" {
							continue
						}
						if u.Query().Get(auth.EmbedParam) != "" || (attr == "href" && el.AttrOr("target", "") != "_blank") {
							t.Errorf("%s=%q leaves the view without a new tab, or with another token", attr, target)
						}
						continue
					}
					header := map[string]string{}
					if attr == "hx-get" {
						header["HX-Request"] = "true"
					}
					rec := h.do(t, apiRequest{target: target, header: header})
					want := http.StatusOK
					if u.Path == "/ws" {
						want = http.StatusBadRequest // in scope, then refused for not being a websocket
					}
					if rec.Code != want {
						t.Errorf("%s=%q: status %d, want %d", attr, target, rec.Code, want)
					}
					followed++
				}
			})
			if followed == 0 {
				t.Error("the embedded view links to nothing of its own: the test follows nothing")
			}
		})
	}
}
