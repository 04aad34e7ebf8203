package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/store"
)

// The trace contexts of the trace-link tests: a W3C traceparent, X-Ray's header, and hostile
// values of both that must show as text and link nowhere.
const (
	goodTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	goodTraceLink   = "https://grafana.example/explore?traceId=4bf92f3577b34da6a3ce929d0e0e4736"
	goodXRay        = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	goodXRayLink    = "https://grafana.example/explore?traceId=1-5759e988-bd862e3fe1be46a994272793"
	badTraceparent  = `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"><a href="https://evil.example">x</a>`
	badXRay         = "Root=1-https://evil.example/;Sampled=1"
)

// saveTracedSample makes a queue's newest sample two messages with trace contexts: m-traced
// (a good traceparent and X-Ray header) and m-untraceable (malformed ones).
func saveTracedSample(t *testing.T, st *store.Store, queueID int64, now time.Time) {
	t.Helper()
	if _, err := st.SaveSample(context.Background(), store.Sample{QueueID: queueID, Kind: store.SampleDeadLetter, At: now.Add(time.Second), Seen: 2, ApproxVisible: 2},
		[]store.SampledMessage{
			{QueueID: queueID, MessageID: "m-traced", ReceiveCount: 1, SentAt: now.Add(-time.Minute), Body: "{}", BodySize: 2, TraceHeader: goodXRay,
				Attributes: []store.MessageAttribute{{Name: "traceparent", DataType: "String", Value: goodTraceparent}}},
			{QueueID: queueID, MessageID: "m-untraceable", ReceiveCount: 1, SentAt: now.Add(-time.Minute), Body: "{}", BodySize: 2, TraceHeader: badXRay,
				Attributes: []store.MessageAttribute{{Name: "traceparent", DataType: "String", Value: badTraceparent}}},
		}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestMessagePageTraceLinks: under --trace-url a message's page links its traceparent and its
// AWSTraceHeader to the tracing system, with the parsed ids alone; a malformed value shows as
// text, links nowhere, and the page answers 200.
func TestMessagePageTraceLinks(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	dlq, err := pw.Views.ResolveQueue(context.Background(), "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	saveTracedSample(t, pw.Store, dlq.ID, pw.Now())

	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages/m-traced"}, http.StatusOK)
	var links []string
	doc.Find(".trace a").Each(func(_ int, a *goquery.Selection) {
		href, _ := a.Attr("href")
		links = append(links, href)
	})
	if want := []string{goodTraceLink, goodXRayLink}; !slices.Equal(links, want) {
		t.Errorf("trace links = %q; want %q", links, want)
	}

	doc, _ = pw.page(t, request{path: "/queues/web-search-dlq/messages/m-untraceable"}, http.StatusOK)
	if n := doc.Find(".trace a").Length(); n != 0 {
		t.Errorf("%d trace links for malformed headers; want none", n)
	}
	if n := doc.Find(`a[href^="https://evil.example"]`).Length(); n != 0 {
		t.Errorf("the hostile traceparent made %d links", n)
	}
	var shown []string
	doc.Find(".trace code").Each(func(_ int, c *goquery.Selection) { shown = append(shown, c.Text()) })
	if want := []string{badTraceparent, badXRay}; !slices.Equal(shown, want) {
		t.Errorf("malformed values shown as %q; want them as text, %q", shown, want)
	}

	rec := pw.do(t, request{path: "/api/v1/queues/web-search-dlq/messages/m-traced"})
	var m struct {
		Traces []struct{ Header, Value, TraceID, URL string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || len(m.Traces) != 2 || m.Traces[0].URL != goodTraceLink ||
		m.Traces[1].URL != goodXRayLink || m.Traces[1].TraceID != "1-5759e988-bd862e3fe1be46a994272793" {
		t.Errorf("API traces = %+v, %v", m.Traces, err)
	}
}

// TestMCPGetMessageTraceLinks: get_message carries a message's traces, the good one linked,
// the malformed one as text alone.
func TestMCPGetMessageTraceLinks(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	dlq, err := h.w.Store.GetQueueByARN(context.Background(), h.w.ARN("orders-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	saveTracedSample(t, h.w.Store, dlq.ID, h.w.Now())
	cs := h.mcpSession(t, h.mcpURL(t), h.operator)
	tools := toolNames(t, cs)
	for _, tt := range []struct {
		id   string
		want []string // the traces' urls
	}{
		{"m-traced", []string{goodTraceLink, goodXRayLink}},
		{"m-untraceable", []string{"", ""}},
	} {
		raw, _ := call(t, cs, tools, "get_message", map[string]any{"queue": "orders-dlq", "messageId": tt.id})
		var m struct {
			Traces []struct{ Value, URL string }
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var urls []string
		for _, tr := range m.Traces {
			urls = append(urls, tr.URL)
		}
		if !slices.Equal(urls, tt.want) {
			t.Errorf("get_message %s: trace urls %q; want %q", tt.id, urls, tt.want)
		}
	}
}
