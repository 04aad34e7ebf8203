package server

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/live"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/web/templates"
)

// everyPage is one request for each page and page state a browser can see, with the status it
// answers.
var everyPage = []struct {
	name   string
	req    request
	status int
}{
	{"overview", request{path: "/"}, http.StatusOK},
	{"overview filtered", request{path: "/?q=web&sort=visible&dir=desc"}, http.StatusOK},
	{"overview embedded", request{path: "/?embed=1"}, http.StatusOK},
	{"source queue", request{path: "/queues/web-search"}, http.StatusOK},
	{"source queue over 7 days", request{path: "/queues/web-search?range=7d"}, http.StatusOK},
	{"dead-letter queue", request{path: "/queues/web-search-dlq"}, http.StatusOK},
	{"FIFO queue", request{path: "/queues/tool-calls.fifo"}, http.StatusOK},
	{"FIFO dead-letter queue", request{path: "/queues/tool-calls-dlq.fifo"}, http.StatusOK},
	{"queue without DLQ", request{path: "/queues/notifications"}, http.StatusOK},
	{"queue card embedded", request{path: "/queues/web-search-dlq?embed=1"}, http.StatusOK},
	{"FIFO card embedded", request{path: "/queues/tool-calls.fifo?embed=1"}, http.StatusOK},
	{"messages", request{path: "/queues/web-search-dlq/messages"}, http.StatusOK},
	{"messages of a hostile tool", request{path: "/queues/web-search-dlq/messages?tool=" + url.QueryEscape("<script>alert('tool')</script>")}, http.StatusOK},
	{"message", request{path: "/queues/web-search-dlq/messages/m-xss"}, http.StatusOK},
	{"redrive panel page", request{path: "/queues/web-search-dlq/redrive"}, http.StatusOK},
	{"audit", request{path: "/audit"}, http.StatusOK},
	{"login", request{path: "/login"}, http.StatusOK},
	{"error page", request{path: "/queues/no-such-queue"}, http.StatusNotFound},
}

// TestEveryPageKeepsTheCSP checks what the browser's CSP (script-src 'self', style-src 'self', no
// eval) would otherwise refuse at run time, on every page: no inline script, event handler or
// style attribute, htmx configured not to inject styles nor eval, and every form control labelled.
func TestEveryPageKeepsTheCSP(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	for _, tt := range everyPage {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := pw.page(t, tt.req, tt.status)
			assertSafe(t, doc)
			doc.Find("script").Each(func(_ int, s *goquery.Selection) {
				if strings.TrimSpace(s.Text()) != "" {
					t.Errorf("inline script: %s", outer(s))
				}
			})
			assertHTMXConfig(t, doc)
			assertLabelled(t, doc)
		})
	}
}

// assertHTMXConfig checks the htmx-config meta that keeps htmx itself within the CSP: htmx would
// otherwise add an inline <style> for its indicators and may eval hx-vals and trigger filters.
func assertHTMXConfig(t *testing.T, doc *goquery.Document) {
	t.Helper()
	content, ok := doc.Find(`head meta[name="htmx-config"]`).Attr("content")
	if !ok {
		t.Fatal("no htmx-config meta")
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(content), &cfg); err != nil {
		t.Fatalf("htmx-config %q: %v", content, err)
	}
	for _, key := range []string{"includeIndicatorStyles", "allowEval", "allowScriptTags"} {
		if v, ok := cfg[key].(bool); !ok || v {
			t.Errorf("htmx-config %s = %v, want false", key, cfg[key])
		}
	}
}

// assertLabelled checks that every visible form control has a label a screen reader announces.
func assertLabelled(t *testing.T, doc *goquery.Document) {
	t.Helper()
	doc.Find("input, select, textarea").Each(func(_ int, s *goquery.Selection) {
		if typ, _ := s.Attr("type"); typ == "hidden" {
			return
		}
		if _, ok := s.Attr("aria-label"); ok {
			return
		}
		if s.Closest("label").Length() > 0 {
			return
		}
		id, _ := s.Attr("id")
		if id == "" || doc.Find(`label[for="`+id+`"]`).Length() == 0 {
			t.Errorf("form control without a label: %s", outer(s))
		}
	})
}

// TestPushesTargetTheirPage renders, for every live page, what the hub pushes to its topic and
// checks that each out-of-band element finds its target in that page: htmx logs an error for
// every one that does not, and the part of the page it was meant for silently goes stale.
func TestPushesTargetTheirPage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	// Every kind at once: the push then carries all it can, the redrive refresh included.
	kinds := live.Changes{events.QueuesChanged: true, events.MetricsChanged: true, events.SampleTaken: true, events.MoveTasksChanged: true}
	pages := 0
	for _, tt := range everyPage {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := pw.page(t, tt.req, tt.status)
			sub, ok := liveSubscription(t, doc)
			if !ok {
				return // not a live page
			}
			hookID, _ := doc.Find("[ws-connect]").Attr("id")
			pages++
			if ext, _ := doc.Find("body").Attr("hx-ext"); !strings.Contains(ext, "ws") {
				t.Errorf("hx-ext %q does not load the websocket extension", ext)
			}
			msg, err := pw.srv.hubRender(ctx, sub, kinds)
			if err != nil {
				t.Fatalf("render the push of %q: %v", sub.Topic, err)
			}
			push := parsePush(t, msg)
			assertSafe(t, push)
			oob := push.Find("template").Children().Filter("[hx-swap-oob]")
			if oob.Length() == 0 {
				t.Fatalf("the push of %q swaps nothing:\n%s", sub.Topic, clip(pushText(msg)))
			}
			oob.Each(func(_ int, s *goquery.Selection) {
				id, _ := s.Attr("id")
				if id == "" {
					t.Errorf("pushed element without id: %s", outer(s))
					return
				}
				target := doc.Find("#" + id)
				if id == hookID || s.Find("[ws-connect]").Length() > 0 {
					// Swapping the element that opened the websocket closes it and opens another,
					// whose first push swaps it again: a reconnection loop.
					t.Errorf("the push of %q replaces the websocket's element #%s", sub.Topic, id)
				}
				if target.Length() != 1 {
					t.Errorf("the push of %q carries #%s, which the page has %d times", sub.Topic, id, target.Length())
				} else if goquery.NodeName(target) != goquery.NodeName(s) {
					t.Errorf("#%s is <%s> in the page and <%s> in the push", id, goquery.NodeName(target), goquery.NodeName(s))
				}
			})
		})
	}
	if pages < 5 {
		t.Errorf("only %d live pages checked", pages)
	}
}

// liveSubscription returns what a page's websocket subscribes to, read from its one ws-connect
// URL as the server reads it; false when the page is not live.
func liveSubscription(t *testing.T, doc *goquery.Document) (subscription, bool) {
	t.Helper()
	hook := doc.Find("[ws-connect]")
	switch hook.Length() {
	case 0:
		return subscription{}, false
	case 1:
	default:
		t.Fatalf("the page opens %d websockets", hook.Length())
	}
	ws, _ := hook.Attr("ws-connect")
	u, err := url.Parse(ws)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	topic, err := live.ParseTopic(q.Get("topic"))
	if err != nil {
		t.Fatal(err)
	}
	view := url.Values{}
	for _, k := range []string{"q", "sort", "dir", "range"} {
		if v := q.Get(k); v != "" {
			view.Set(k, v)
		}
	}
	sub := subscriptionOf(topic, templates.Nav{Embed: q.Get("embed") == "1", EmbedToken: q.Get("embed_token")}, view)
	return sub, true
}

// parseFragment parses a push the way htmx does, inside a <template>, where table rows stand
// alone. It fails the test unless the push swaps as htmx's websocket extension swaps it: the
// extension swaps each element at the top of the parsed push, by its hx-swap-oob or else by its
// id, and nothing below them. An element the parser moved under another (a cell after a row is
// put in a row of its own, a row after a cell loses its tags) would be lost on the page.
func parseFragment(t *testing.T, msg []byte) *goquery.Document {
	t.Helper()
	doc, err := goquery.NewDocumentFromReader(strings.NewReader("<template>" + string(msg) + "</template>"))
	if err != nil {
		t.Fatal(err)
	}
	doc.Find("template").First().Children().Each(func(_ int, top *goquery.Selection) {
		if _, oob := top.Attr("hx-swap-oob"); !oob && top.AttrOr("id", "") == "" {
			t.Errorf("a push's %s swaps nothing: it has neither hx-swap-oob nor an id:\n%s", goquery.NodeName(top), clip(outer(top)))
		}
		if nested := top.Find("[hx-swap-oob]"); nested.Length() > 0 {
			t.Errorf("a push's %s holds %d elements with hx-swap-oob, which the websocket extension never swaps:\n%s",
				goquery.NodeName(top), nested.Length(), clip(outer(top)))
		}
	})
	return doc
}
