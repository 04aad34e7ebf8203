package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Hostile text, as LLM-made tool arguments and odd AWS data bring it.
const (
	xssBody  = `{"toolCallId":"tc_x","toolName":"<script>alert('tool')</script>","toolArgs":{"html":"<img src=x onerror=alert(1)>"},"sessionId":"sess_x"}`
	xssGroup = `"><img src=x onerror=alert('group')>`
	xssAttr  = `</code><script>alert('attr')</script>`
	xssQueue = `<script>alert('queue')</script>`
)

// bodyHash is a body's hash as the collector stores it (hex SHA-256 of the whole body).
func bodyHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// pageWorld is the real server over the actions' test world: the simulator behind the stock SQS
// client, a real store filled through its methods, the views and the actions.
type pageWorld struct {
	*actionstest.World
	srv     *Server
	bus     *events.Bus
	viewer  string // a viewer's API token (token mode only)
	handler http.Handler
}

type pageWorldOptions struct {
	ReadOnly  bool
	TokenAuth bool // token mode with a viewer token, instead of auth none (a local operator)
	// Notifier builds the notifier over the world's store and views; nil: none.
	Notifier func(w *actionstest.World) Notifier
	// Snapshots: the views follow the world's bus, as app.New wires them, and one snapshot
	// serves every read until an event says the store changed (every read after one waits for
	// the snapshot that has it). Otherwise every read builds its own.
	Snapshots bool
	// SnapshotLag is the views' Lag with Snapshots (0: none): a read may be served a snapshot
	// that misses a change younger than it, as in the product (where it is unbounded).
	SnapshotLag time.Duration
}

// newPageWorld builds the standard world: web-search (standard) with web-search-dlq holding three
// dead-lettered messages and a hostile sample; tool-calls.fifo with tool-calls-dlq.fifo and a
// hostile group backlog; notifications without a DLQ; and a queue with a hostile name in the store.
func newPageWorld(t testing.TB, o pageWorldOptions) *pageWorld {
	t.Helper()
	w := actionstest.New(t)
	w.Views = views.New(views.Options{Store: w.Store, Now: w.Clock.Now, Dimensions: harnessDimensions, ErrorDimension: "error",
		TraceURL: harnessTraceURL(t)})
	w.CreateQueue(t, "web-search-dlq", "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.CreateQueue(t, "web-search", "web-search-dlq", map[string]string{"VisibilityTimeout": "30"})
	w.CreateQueue(t, "tool-calls-dlq.fifo", "", nil)
	w.CreateQueue(t, "tool-calls.fifo", "tool-calls-dlq.fifo", nil)
	w.CreateQueue(t, "notifications", "", nil)
	w.DeadLetter(t, "web-search", 3)
	w.Watch(t, "web-search-dlq", "web-search", "tool-calls-dlq.fifo", "tool-calls.fifo", "notifications")
	ctx := context.Background()
	now := w.Now()
	if _, err := w.Store.UpsertQueue(ctx, store.Queue{Region: "eu-west-1", Name: xssQueue,
		ARN: "arn:aws:sqs:eu-west-1:000000000000:odd", URL: "https://sqs/odd", FirstSeen: now, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	dlq, err := w.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []store.SampledMessage{
		{MessageID: "m-xss", ReceiveCount: 1, SentAt: now.Add(-time.Hour), Body: xssBody, BodySize: len(xssBody), BodyHash: bodyHash(xssBody),
			ToolName: "<script>alert('tool')</script>", ToolCallID: "tc_x", SessionID: "sess_x",
			DeadLetterSourceARN: w.ARN("web-search"),
			Attributes:          []store.MessageAttribute{{Name: "note", DataType: "String", Value: xssAttr}},
			Dimensions:          map[string]string{"mcpServer": xssAttr, "error": xssGroup}},
		{MessageID: "m-formula", ReceiveCount: 2, SentAt: now.Add(-2 * time.Hour), Body: `=HYPERLINK("http://evil","x")`,
			BodySize: 29, ToolName: "web_search", Attributes: []store.MessageAttribute{},
			Dimensions: map[string]string{"mcpServer": "docs-legacy", "error": "connection_refused"}},
		{MessageID: "m-plain", ReceiveCount: 1, SentAt: now.Add(-3 * time.Hour), Body: `{"toolName":"web_search","toolArgs":{"q":"golang"}}`,
			BodySize: 51, ToolName: "web_search", Attributes: []store.MessageAttribute{}, Dimensions: map[string]string{"mcpServer": "docs-legacy"}},
	}
	if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: now,
		Seen: 3, ApproxVisible: 3, Receives: 1, MessagesTaken: 3}, msgs, nil); err != nil {
		t.Fatal(err)
	}
	fifo, err := w.Views.ResolveQueue(ctx, "tool-calls.fifo")
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Store.SetPeekEnabled(ctx, fifo.ID, true); err != nil {
		t.Fatal(err)
	}
	groups := []store.GroupBacklog{
		{GroupID: xssGroup, Messages: 4, OldestSentAt: now.Add(-40 * time.Minute), HeadMessageID: "head-1", HeadReceiveCount: 3, Blocked: true},
		{GroupID: "sess_ok", Messages: 1, OldestSentAt: now.Add(-time.Minute), HeadMessageID: "head-2", HeadReceiveCount: 0},
	}
	if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: fifo.ID, Kind: store.SampleSource, At: now,
		Seen: 5, ApproxVisible: 10, Receives: 1, MessagesTaken: 5}, nil, groups); err != nil {
		t.Fatal(err)
	}

	src, err := w.Views.ResolveQueue(ctx, "web-search")
	if err != nil {
		t.Fatal(err)
	}
	var points []store.MetricPoint
	for i := 1; i <= 30; i++ {
		points = append(points, store.MetricPoint{QueueID: src.ID, Metric: "NumberOfMessagesSent",
			At: now.Add(-time.Duration(i) * time.Minute), Period: 60, Value: float64(i)})
	}
	if err := w.Store.UpsertMetricPoints(ctx, points); err != nil {
		t.Fatal(err)
	}

	pw := &pageWorld{World: w, bus: events.NewBus()}
	if o.Snapshots {
		w.Views = views.New(views.Options{Store: w.Store, Now: w.Clock.Now, Dimensions: harnessDimensions, ErrorDimension: "error",
			Changes: pw.bus, Lag: cmp.Or(o.SnapshotLag, -1), TraceURL: harnessTraceURL(t)})
	}
	mode := auth.ModeNone
	if o.TokenAuth {
		mode = auth.ModeToken
	}
	// One authenticator signs the confirmations too (MCP's start_redrive preview), as app.New
	// wires it.
	a, err := auth.New(auth.Config{Mode: mode, Store: w.Store, Now: w.Now})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{
		Views: w.Views, Actions: w.Actions(actions.Options{ReadOnly: o.ReadOnly, Dimensions: harnessDimensions, ErrorDimension: "error", Confirmations: a}),
		Bus: pw.bus, Auth: a, ReadOnly: o.ReadOnly, Now: w.Now,
	}
	if o.Notifier != nil {
		opts.Notifier = o.Notifier(w)
	}
	if o.TokenAuth {
		if pw.viewer, err = auth.CreateToken(ctx, w.Store, "viewer-bot", auth.RoleViewer); err != nil {
			t.Fatal(err)
		}
	}
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close(context.Background()) })
	pw.srv, pw.handler = srv, srv.Handler()
	return pw
}

// request is one browser request of a test.
type request struct {
	method string
	path   string
	form   url.Values
	htmx   bool
	header http.Header
}

// do sends a request through the real router, and checks an API answer against the OpenAPI document.
func (pw *pageWorld) do(t testing.TB, r request) *httptest.ResponseRecorder {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	var req *http.Request
	if r.form != nil {
		req = httptest.NewRequest(r.method, r.path, strings.NewReader(r.form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req = httptest.NewRequest(r.method, r.path, nil)
	}
	for k, vs := range r.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if r.htmx {
		req.Header.Set("HX-Request", "true")
	}
	if pw.viewer != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+pw.viewer)
	}
	rec := httptest.NewRecorder()
	pw.handler.ServeHTTP(rec, req)
	checkContract(t, req, rec)
	return rec
}

// page sends a request and parses the answer, failing on an unexpected status.
func (pw *pageWorld) page(t *testing.T, r request, status int) (*goquery.Document, *httptest.ResponseRecorder) {
	t.Helper()
	rec := pw.do(t, r)
	if rec.Code != status {
		t.Fatalf("%s %s: status %d, want %d; body:\n%s", r.method, r.path, rec.Code, status, clip(rec.Body.String()))
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	return doc, rec
}

// csrf returns a CSRF cookie and the token the pages put in their forms, as a browser has them
// after loading a page.
func (pw *pageWorld) csrf(t *testing.T) (http.Header, string) {
	t.Helper()
	doc, rec := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	token, _ := doc.Find(`input[name="_csrf"]`).First().Attr("value")
	if token == "" {
		t.Fatal("the page has no CSRF field")
	}
	h := http.Header{}
	for _, c := range rec.Result().Cookies() {
		h.Add("Cookie", c.Name+"="+c.Value)
	}
	return h, token
}

// assertSafe fails when the parsed DOM holds an element or attribute that hostile text could
// have made: a script outside the vendored assets, an inline event handler, an inline style.
func assertSafe(t *testing.T, doc *goquery.Document) {
	t.Helper()
	doc.Find("script").Each(func(_ int, s *goquery.Selection) {
		if src, _ := s.Attr("src"); !strings.HasPrefix(src, "/static/") {
			t.Errorf("a script element that is not a vendored asset: %s", outer(s))
		}
	})
	doc.Find("*").Each(func(_ int, s *goquery.Selection) {
		for _, a := range s.Nodes[0].Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" {
				t.Errorf("attribute %s on <%s>", a.Key, goquery.NodeName(s))
			}
		}
	})
	doc.Find("img").Each(func(_ int, s *goquery.Selection) { t.Errorf("an img element: %s", outer(s)) })
}

func outer(s *goquery.Selection) string {
	h, _ := goquery.OuterHtml(s)
	return clip(h)
}

func clip(s string) string {
	if len(s) > 3000 {
		return s[:3000] + "…"
	}
	return s
}
