package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/live"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
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
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)

	overview, _, err := dial(t, srv, "topic=overview", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// The first push: the table's body in one message, the parts in the next.
	doc := nextWith(t, overview, "#overview-rows")
	assertSafe(t, doc)
	if n := doc.Find(`tbody#overview-rows[hx-swap-oob="true"] tr`).Length(); n != 6 {
		t.Errorf("pushed rows = %d, want 6", n)
	}
	doc = next(t, overview)
	assertSafe(t, doc)
	for _, id := range []string{"#totals", "#cost", "#freshness"} {
		if v, _ := doc.Find(id).Attr("hx-swap-oob"); v != "true" {
			t.Errorf("%s not pushed out of band", id)
		}
	}
	if pw.srv.hub.Clients() != 1 {
		t.Errorf("WebsocketClients = %d, want 1", pw.srv.hub.Clients())
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
	// A page's own first push does not tell it to fetch its redrive panel: the page was just
	// rendered with a fresh one, and a fetch then would swap away a confirmation being read.
	if _, ok := doc.Find("#redrive-refresh").Attr("hx-get"); ok {
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
			if !errors.As(err, &ce) || ce.Code != live.CloseServiceRestart {
				t.Errorf("close = %v, want code %d", err, live.CloseServiceRestart)
			}
			break
		}
	}
}

func TestWebsocketRefusals(t *testing.T) {
	t.Parallel()
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
		{"same host, another scheme", "topic=overview", "https" + strings.TrimPrefix(srv.URL, "http"), http.StatusForbidden},
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
	t.Parallel()
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
	t.Parallel()
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
		extra  url.Values // parameters besides the topic, the token and embed=1
		status int
	}{
		{"its queue", queueTopic(own.ID), nil, 0},
		// Without embed=1 the pushes would be the whole page's: the sample, message ids, bodies.
		{"its queue, not embedded", queueTopic(own.ID), url.Values{"embed": nil}, http.StatusForbidden},
		{"its queue, with charts", queueTopic(own.ID), url.Values{"range": {"7d"}}, http.StatusForbidden},
		{"its queue, in a theme the link was not made with", queueTopic(own.ID), url.Values{"theme": {"dark"}}, http.StatusForbidden},
		{"another queue", queueTopic(other.ID), nil, http.StatusForbidden},
		{"the overview", topicOverview, nil, http.StatusForbidden},
		{"the audit log", topicAudit, nil, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := url.Values{"topic": {tt.topic}, "embed": {"1"}, "embed_token": {token}}
			for k, v := range tt.extra {
				if v == nil {
					q.Del(k)
				} else {
					q[k] = v
				}
			}
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
	// Without credentials the page is told it is signed out, and nothing reconnects.
	t.Run("no credentials", func(t *testing.T) {
		conn, _, err := dial(t, srv, "topic=overview", srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if code := closeCode(t, conn); code != closeSignedOut {
			t.Errorf("close code %d, want %d", code, closeSignedOut)
		}
	})
	t.Run("no credentials, foreign origin", func(t *testing.T) {
		_, res, err := dial(t, srv, "topic=overview", "https://evil.example")
		if err == nil || res == nil || res.StatusCode != http.StatusForbidden {
			t.Errorf("err %v, want 403", err)
		}
	})
	t.Run("forged link", func(t *testing.T) {
		conn, _, err := dial(t, srv, url.Values{"topic": {topicOverview}, "embed": {"1"}, "embed_token": {"forged.token"}}.Encode(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if code := closeCode(t, conn); code != closeLinkEnded {
			t.Errorf("close code %d, want %d", code, closeLinkEnded)
		}
	})
}

// TestOverviewPushKeepsEachView: every overview subscriber gets the table body in its own filter
// and sort, the order the page itself shows; and after a queue's health changes or a queue
// appears, the next push moves and adds the rows.
func TestOverviewPushKeepsEachView(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	views := []struct {
		name string
		path string
	}{
		{"default order", "/"},
		{"by name, descending", "/?sort=name&dir=desc"},
		{"by visible", "/?sort=visible&dir=asc"},
		{"filtered", "/?q=tool"},
		{"filtered and sorted", "/?q=tool&sort=name&dir=desc"},
	}
	// pushRows renders what the hub sends the subscribers of a page's websocket, and returns the
	// rows of the pushed body with the page's own rows.
	pushRows := func(t *testing.T, path string) (pushed, page []string, push *goquery.Document) {
		t.Helper()
		doc, _ := pw.page(t, request{path: path}, http.StatusOK)
		sub, ok := liveSubscription(t, doc)
		if !ok {
			t.Fatal("the overview is not live")
		}
		msg, err := pw.srv.hubRender(ctx, sub, live.Changes{events.QueuesChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		push = parsePush(t, msg)
		if push.Find(`tbody#overview-rows[hx-swap-oob="true"]`).Length() != 1 {
			t.Fatalf("the push does not swap the table body:\n%s", clip(pushText(msg)))
		}
		return rowNames(push), rowNames(doc), push
	}
	check := func(t *testing.T) {
		for _, v := range views {
			t.Run(v.name, func(t *testing.T) {
				pushed, page, _ := pushRows(t, v.path)
				if strings.Join(pushed, "\n") != strings.Join(page, "\n") {
					t.Errorf("pushed rows %q, the page shows %q", pushed, page)
				}
			})
		}
	}
	t.Run("as loaded", check)

	// A message lands in tool-calls-dlq.fifo (healthy so far) and a new queue appears.
	out, err := pw.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("tool-calls-dlq.fifo")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pw.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(`{"toolName":"run_sql"}`),
		MessageGroupId: aws.String("sess_1"), MessageDeduplicationId: aws.String("tc_1")}); err != nil {
		t.Fatal(err)
	}
	pw.CreateQueue(t, "tool-calls-new", "", nil)
	pw.Watch(t, "tool-calls-dlq.fifo", "tool-calls-new")
	t.Run("after a change", check)

	t.Run("the unhealthy queue moves up, the new one shows", func(t *testing.T) {
		pushed, _, push := pushRows(t, "/")
		assertUnhealthyFirst(t, push)
		if !slices.Contains(pushed, "tool-calls-new") {
			t.Errorf("the new queue is not pushed: %q", pushed)
		}
		row := push.Find("tr").FilterFunction(func(_ int, s *goquery.Selection) bool {
			return s.Find("th a").Text() == "tool-calls-dlq.fifo"
		})
		if !row.HasClass("health-warning") && !row.HasClass("health-critical") {
			t.Errorf("tool-calls-dlq.fifo holds a message but its row is %q", row.AttrOr("class", ""))
		}
		if len(pushed) == 0 || pushed[len(pushed)-1] == "tool-calls-dlq.fifo" {
			t.Errorf("tool-calls-dlq.fifo stayed at the bottom: %q", pushed)
		}
		filtered, _, _ := pushRows(t, "/?q=tool&sort=name&dir=desc")
		if want := []string{"tool-calls.fifo", "tool-calls-new", "tool-calls-dlq.fifo"}; !slices.Equal(filtered, want) {
			t.Errorf("filtered and sorted push = %q, want %q", filtered, want)
		}
	})
}

// TestWebsocketFollowsTheView: the websocket URL that a sorted overview or a queue page over a
// range opens carries its view, and the pushes that come over it are in that view.
func TestWebsocketFollowsTheView(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)

	t.Run("overview sorted by name, descending", func(t *testing.T) {
		page, _ := pw.page(t, request{path: "/?sort=name&dir=desc", htmx: true}, http.StatusOK)
		ws, _ := page.Find("#overview-table").Attr("ws-connect")
		if ws != "/ws?dir=desc&sort=name&topic=overview" {
			t.Fatalf("the swapped table's ws-connect = %q", ws)
		}
		conn, _, err := dial(t, srv, strings.TrimPrefix(ws, "/ws?"), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		doc := nextWith(t, conn, "#overview-rows")
		if got, want := rowNames(doc), rowNames(page); !slices.Equal(got, want) {
			t.Errorf("pushed rows %q, the table shows %q", got, want)
		}
	})
	t.Run("queue page over 7 days", func(t *testing.T) {
		page, _ := pw.page(t, request{path: "/queues/web-search?range=7d", htmx: true}, http.StatusOK)
		ws, _ := page.Find("#charts").Attr("ws-connect")
		if !strings.Contains(ws, "range=7d") {
			t.Fatalf("the swapped chart section's ws-connect = %q", ws)
		}
		conn, _, err := dial(t, srv, strings.TrimPrefix(ws, "/ws?"), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		// A new connection gets everything, the charts of its range included.
		doc := nextWith(t, conn, "#chart-grid")
		got := doc.Find("#chart-grid figure.chart").First().AttrOr("data-range-since", "")
		want := page.Find("#chart-grid figure.chart").First().AttrOr("data-range-since", "")
		if got == "" || got != want {
			t.Errorf("pushed charts start at %q, the 7-day page's at %q", got, want)
		}
	})
}

// TestQueuePushCharts: the charts ride on the pushes of new snapshots (an attributes cycle's), of
// metrics cycles and of new connections, not on samples, and are drawn over the subscriber's
// range.
func TestQueuePushCharts(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	q, err := pw.Views.ResolveQueue(ctx, "web-search")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		kinds     live.Changes
		view      url.Values
		embed     bool
		wantSince time.Duration // 0: no charts pushed
	}{
		{"a new snapshot (after an attributes cycle)", live.Changes{events.SnapshotBuilt: true}, nil, false, time.Hour},
		{"sample", live.Changes{events.SampleTaken: true}, nil, false, 0},
		{"metrics cycle", live.Changes{events.MetricsChanged: true}, nil, false, time.Hour},
		{"metrics cycle, 24 hours", live.Changes{events.MetricsChanged: true}, url.Values{"range": {"24h"}}, false, 24 * time.Hour},
		{"new connection, 7 days", live.Changes{live.Connect: true}, url.Values{"range": {"7d"}}, false, 7 * 24 * time.Hour},
		{"embedded card", live.Changes{events.MetricsChanged: true}, nil, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := subscriptionOf(live.Queue(q.ID), templates.Nav{Embed: tt.embed}, tt.view)
			msg, err := pw.srv.hubRender(ctx, sub, tt.kinds)
			if err != nil {
				t.Fatal(err)
			}
			doc := parsePush(t, msg)
			grid := doc.Find(`#chart-grid[hx-swap-oob="true"]`)
			if tt.wantSince == 0 {
				if grid.Length() != 0 {
					t.Error("charts pushed")
				}
				return
			}
			if n := grid.Find("figure.chart").Length(); n != len(queueCharts) {
				t.Fatalf("pushed charts = %d, want %d", n, len(queueCharts))
			}
			want := pw.Now().UTC().Add(-tt.wantSince).Format(time.RFC3339)
			if got := grid.Find("figure.chart").First().AttrOr("data-range-since", ""); got != want {
				t.Errorf("charts start at %q, want %q", got, want)
			}
		})
	}
}

// TestWebsocketQuotaPerIdentity: one identity (here, one address with auth off) gets at most
// maxWebsocketsPerIdentity live connections; closing one frees its place.
func TestWebsocketQuotaPerIdentity(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	conns := make([]*websocket.Conn, 0, maxWebsocketsPerIdentity)
	for i := range maxWebsocketsPerIdentity {
		conn, _, err := dial(t, srv, "topic=audit", srv.URL)
		if err != nil {
			t.Fatalf("connection %d refused: %v", i+1, err)
		}
		conns = append(conns, conn)
	}
	_, res, err := dial(t, srv, "topic=audit", srv.URL)
	if err == nil || res == nil || res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("connection %d: err %v, response %v; want 429", maxWebsocketsPerIdentity+1, err, res)
	}
	conns[0].Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		conn, _, err := dial(t, srv, "topic=audit", srv.URL)
		if err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed connection's place was not given back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestWebsocketQuotaRelease(t *testing.T) {
	t.Parallel()
	var q websocketQuota
	release, ok := q.acquire("addr:192.0.2.1")
	if !ok {
		t.Fatal("first connection refused")
	}
	release()
	release() // a second release must not give back a place it never took
	if len(q.open) != 0 {
		t.Errorf("open = %v after release; want empty", q.open)
	}
}

// TestQueuePushKeepsRedriveCountCurrent: the redrive panel's "N messages wait here now" comes
// with every depth push, so that it never disagrees with the Visible figure above it.
func TestQueuePushKeepsRedriveCountCurrent(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	key, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	q, err := pw.Views.Queue(ctx, key.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	if page.Find("#redrive-waiting").Length() != 1 {
		t.Fatal("the redrive panel has no #redrive-waiting count")
	}
	msg, err := pw.srv.hubRender(ctx, subscriptionOf(live.Queue(q.ID), templates.Nav{}, nil), live.Changes{events.QueuesChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	waiting := parsePush(t, msg).Find(`#redrive-waiting[hx-swap-oob="true"] strong`)
	if waiting.Length() != 1 || waiting.Text() != templates.Count(q.Visible) {
		t.Errorf("pushed waiting count = %q (%d elements), want %q", waiting.Text(), waiting.Length(), templates.Count(q.Visible))
	}
}

// TestQueuePushKeepsSamplingCurrent: a queue page's sampling account, its messages nearing
// maxReceiveCount and its collector errors come with every push, so that a new sample or a new
// error shows on a page left open, and the sampling card never disagrees with the sample above it.
func TestQueuePushKeepsSamplingCurrent(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := context.Background()
	key, err := pw.Views.ResolveQueue(ctx, "tool-calls.fifo")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := pw.page(t, request{path: "/queues/tool-calls.fifo"}, http.StatusOK)
	for _, id := range []string{ids.Peek(), ids.NearMax(), ids.CollectorErrors()} {
		if page.Find("#"+id).Length() != 1 {
			t.Fatalf("the queue page has no #%s for pushes to fill", id)
		}
	}
	if page.Find("#"+ids.NearMax()+" tr").Length() != 0 || page.Find("#"+ids.CollectorErrors()+" li").Length() != 0 {
		t.Fatal("the page lists near-max messages or errors before there are any")
	}

	// A new sample finds a message with one delivery left, and an attribute read fails.
	pw.Advance(time.Minute)
	now := pw.Now()
	near := store.SampledMessage{MessageID: "m-near", ReceiveCount: 1, NearMaxReceive: true, SentAt: now.Add(-time.Minute),
		Body: `{"toolName":"create_document"}`, BodySize: 30, ToolName: "create_document", GroupID: "sess_ok", Attributes: []store.MessageAttribute{}}
	if _, err := pw.Store.SaveSample(ctx, store.Sample{QueueID: key.ID, Kind: store.SampleSource, At: now,
		Seen: 7, ApproxVisible: 9, Receives: 1, MessagesTaken: 1}, []store.SampledMessage{near}, nil); err != nil {
		t.Fatal(err)
	}
	run, err := pw.Store.StartRun(ctx, store.RunAttributes, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := pw.Store.RecordError(ctx, store.CollectorError{RunID: run, QueueID: key.ID, Operation: "GetQueueAttributes",
		Code: "AccessDenied", Message: "not authorized to perform sqs:GetQueueAttributes", At: now}); err != nil {
		t.Fatal(err)
	}

	msg, err := pw.srv.hubRender(ctx, subscriptionOf(live.Queue(key.ID), templates.Nav{}, nil), live.Changes{events.SampleTaken: true})
	if err != nil {
		t.Fatal(err)
	}
	push := parsePush(t, msg)
	peek := push.Find(`#` + ids.Peek() + `[hx-swap-oob="true"]`)
	if !strings.Contains(strings.Join(strings.Fields(peek.Text()), " "), "7 of about 9 messages") {
		t.Errorf("the pushed sampling card does not count the new sample (7 of about 9):\n%s", clip(outer(peek)))
	}
	if n := push.Find(`#` + ids.NearMax() + `[hx-swap-oob="true"] tr`).FilterFunction(func(_ int, s *goquery.Selection) bool {
		return strings.Contains(s.Text(), "m-near")
	}).Length(); n != 1 {
		t.Errorf("the push lists m-near %d times among the messages nearing the DLQ, want once:\n%s", n, clip(pushText(msg)))
	}
	if errs := push.Find(`#` + ids.CollectorErrors() + `[hx-swap-oob="true"] li`); errs.Length() != 1 || !strings.Contains(errs.Text(), "AccessDenied") {
		t.Errorf("the push's collector errors = %q, want the AccessDenied", errs.Text())
	}
}

// TestJoiningPageKeepsItsPanel: a page that connects to a queue's pushes, and the pages already
// there, are not told to fetch their redrive panel: a confirmation one of them is reading stays
// on screen (the browser tests lost it when a connect did).
func TestJoiningPageKeepsItsPanel(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	srv := httptest.NewServer(pw.handler)
	t.Cleanup(srv.Close)
	dlq, err := pw.Views.ResolveQueue(context.Background(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	topic := "topic=queue:" + strconv.FormatInt(dlq.ID, 10)
	first, _, err := dial(t, srv, topic, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nextWith(t, first, "#queue-stats").Find("#redrive-refresh").Attr("hx-get"); ok {
		t.Error("a joining page is told to fetch its redrive panel")
	}
	second, _, err := dial(t, srv, topic, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	nextWith(t, second, "#queue-stats")
	if _, ok := nextWith(t, first, "#queue-stats").Find("#redrive-refresh").Attr("hx-get"); ok {
		t.Error("a page already there is told to fetch its redrive panel when another joins")
	}
}
