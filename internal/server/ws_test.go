package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/events"
)

// dial opens a websocket to the test server as a browser on origin would.
func dial(t *testing.T, srv *httptest.Server, query, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	u := "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws?" + query
	h := http.Header{}
	if origin != "" {
		h.Set("Origin", origin)
	}
	conn, res, err := websocket.DefaultDialer.Dial(u, h)
	if err == nil {
		t.Cleanup(func() { conn.Close() })
	}
	return conn, res, err
}

// next reads the next push. The deadline bounds a broken test; the hub pushes within its
// coalescing delay (250 ms).
func next(t *testing.T, conn *websocket.Conn) *goquery.Document {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, msg, err := conn.ReadMessage()
	if err != nil {
		t.Fatalf("read push: %v", err)
	}
	return parseFragment(t, msg)
}

// nextWith reads pushes until one holds sel, skipping the periodic freshness pushes.
func nextWith(t *testing.T, conn *websocket.Conn, sel string) *goquery.Document {
	t.Helper()
	for i := 0; i < 10; i++ {
		if doc := next(t, conn); doc.Find(sel).Length() > 0 {
			return doc
		}
	}
	t.Fatalf("no push with %s", sel)
	return nil
}

func TestWebsocketPushes(t *testing.T) {
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)

	overview, _, err := dial(t, srv, "topic=overview", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	doc := nextWith(t, overview, "#totals")
	assertSafe(t, doc)
	if n := doc.Find(`tr[hx-swap-oob="true"]`).Length(); n != 6 {
		t.Errorf("pushed rows = %d, want 6", n)
	}
	for _, id := range []string{"#totals", "#cost", "#freshness"} {
		if v, _ := doc.Find(id).Attr("hx-swap-oob"); v != "true" {
			t.Errorf("%s not pushed out of band", id)
		}
	}
	if pw.srv.WebsocketClients() != 1 {
		t.Errorf("WebsocketClients = %d, want 1", pw.srv.WebsocketClients())
	}

	dlq, err := pw.Views.ResolveQueue(context.Background(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	queue, _, err := dial(t, srv, "topic=queue:"+strconv.FormatInt(dlq.ID, 10), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	doc = nextWith(t, queue, "#queue-stats")
	if doc.Find("#queue-stats").Length() != 1 || doc.Find("#messages").Length() != 1 || doc.Find("#redrive-progress").Length() != 1 {
		t.Errorf("queue push lacks sections")
	}
	if doc.Find("#redrive-refresh").Length() != 0 {
		t.Error("a push not about move tasks refreshes the redrive panel")
	}
	pw.bus.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: dlq.ID, At: pw.Now()})
	doc = nextWith(t, queue, "#queue-stats")
	if get, _ := doc.Find("#redrive-refresh").Attr("hx-get"); get != "/queues/web-search-dlq/redrive" {
		t.Errorf("redrive refresh hx-get = %q", get)
	}

	if err := pw.srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	_ = queue.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		if _, _, err := queue.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != closeServiceRestart {
				t.Errorf("close = %v, want code %d", err, closeServiceRestart)
			}
			break
		}
	}
}

func TestWebsocketRefusals(t *testing.T) {
	pw := newPageWorld(t, pageWorldOptions{})
	pw.srv.opts.FrameAncestors = []string{"'self'", "https://*.portal.example"}
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	tests := []struct {
		name   string
		query  string
		origin string
		status int // 0: accepted
	}{
		{"same origin", "topic=overview", srv.URL, 0},
		{"no origin (not a browser)", "topic=audit", "", 0},
		{"allowed frame ancestor", "topic=overview", "https://ops.portal.example", 0},
		{"foreign origin", "topic=overview", "https://evil.example", http.StatusForbidden},
		{"unknown topic", "topic=secrets", srv.URL, http.StatusBadRequest},
		{"unknown queue", "topic=queue:999", srv.URL, http.StatusNotFound},
		{"junk queue id", "topic=queue:" + url.QueryEscape("1 OR 1"), srv.URL, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, res, err := dial(t, srv, tt.query, tt.origin)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || res == nil || res.StatusCode != tt.status {
				code := 0
				if res != nil {
					code = res.StatusCode
				}
				t.Errorf("status %d (%v), want %d", code, err, tt.status)
			}
		})
	}
}

func TestSourceMatches(t *testing.T) {
	tests := []struct {
		src, origin string
		want        bool
	}{
		{"https://portal.example", "https://portal.example", true},
		{"https://portal.example", "http://portal.example", false},
		{"portal.example", "https://portal.example", true},
		{"https://*.example", "https://a.example", true},
		{"https://*.example", "https://example", false},
		{"https:", "https://anything", true},
		{"'self'", "https://portal.example", false},
		{"'none'", "https://portal.example", false},
		{"*", "https://x", true},
	}
	for _, tt := range tests {
		t.Run(tt.src+" "+tt.origin, func(t *testing.T) {
			u, _ := url.Parse(tt.origin)
			if got := sourceMatches(tt.src, u); got != tt.want {
				t.Errorf("sourceMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWebsocketEmbedScope(t *testing.T) {
	pw := newPageWorld(t, pageWorldOptions{TokenAuth: true})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	token, _, err := pw.srv.auth.EmbedToken("/queues/web-search", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	own, err := pw.Views.ResolveQueue(context.Background(), "web-search")
	if err != nil {
		t.Fatal(err)
	}
	other, err := pw.Views.ResolveQueue(context.Background(), "notifications")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		topic  string
		status int
	}{
		{"its queue", queueTopic(own.ID), 0},
		{"another queue", queueTopic(other.ID), http.StatusForbidden},
		{"the overview", topicOverview, http.StatusForbidden},
		{"the audit log", topicAudit, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{"topic": {tt.topic}, "embed": {"1"}, "embed_token": {token}}
			conn, res, err := dial(t, srv, q.Encode(), srv.URL)
			if tt.status == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				doc := nextWith(t, conn, "#queue-stats")
				if doc.Find("#messages").Length() != 0 {
					t.Error("an embedded card got the full page's sections")
				}
				return
			}
			if err == nil || res == nil || res.StatusCode != tt.status {
				t.Errorf("err %v, want status %d", err, tt.status)
			}
		})
	}
	t.Run("no credentials", func(t *testing.T) {
		_, res, err := dial(t, srv, "topic=overview", srv.URL)
		if err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
			t.Errorf("err %v, want 401", err)
		}
	})
}
