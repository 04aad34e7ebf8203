package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// sseEvent is one event of a stream.
type sseEvent struct {
	id, kind, data string
}

// readEvents reads n events from a stream (comments and retry lines skipped), failing after 10 s.
func readEvents(t *testing.T, r *bufio.Reader, n int) []sseEvent {
	t.Helper()
	out := make(chan []sseEvent, 1)
	errs := make(chan error, 1)
	go func() {
		var got []sseEvent
		var ev sseEvent
		for len(got) < n {
			line, err := r.ReadString('\n')
			if err != nil {
				errs <- err
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.data != "" {
					got = append(got, ev)
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.kind = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
		out <- got
	}()
	select {
	case got := <-out:
		return got
	case err := <-errs:
		t.Fatalf("reading the stream: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatalf("no %d events within 10 s", n)
	}
	return nil
}

// appendAlerts stores alerts as the notifier does and tells the bus.
func appendAlerts(t *testing.T, h *apiHarness, alerts ...views.Alert) {
	t.Helper()
	var records []store.Alert
	for _, a := range alerts {
		r, err := views.AlertRecord(a)
		if err != nil {
			t.Fatal(err)
		}
		records = append(records, r)
	}
	if _, err := h.w.Store.AppendAlerts(context.Background(), records, store.AlertDetectorKey, "{}"); err != nil {
		t.Fatal(err)
	}
	h.bus.Publish(events.Event{Kind: events.AlertsRaised})
}

func testAlert(i int, kind views.AlertKind, queue string) views.Alert {
	return views.Alert{At: time.Date(2026, 3, 1, 12, 0, i, 0, time.UTC), Kind: kind, Severity: views.SeverityWarning,
		Queue: queue, Region: "us-east-1", Title: fmt.Sprintf("alert %d", i), Path: "/queues/" + queue, Group: "queue:1",
		Arrival: &views.AlertArrival{New: int64(i), Depth: int64(i), Triage: views.Triage{Tools: []views.ToolCount{}, Dimensions: []views.DimensionTop{}, Reasons: []views.ValueGroup{}}}}
}

// TestEventStreamResumes: GET /api/v1/events sends the alerts as Server-Sent Events in the
// documented shape, new ones as they come, resumes after Last-Event-ID, filters like a target,
// needs the API's credentials, and ends when the server shuts down.
func TestEventStreamResumes(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{publicURL: "https://toolq.example.com"})
	checker, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: checker.Transport(srv.Client().Transport)}
	appendAlerts(t, h, testAlert(1, views.AlertDLQArrival, "orders-dlq"), testAlert(2, views.AlertDLQArrival, "orders-dlq"), testAlert(3, views.AlertDLQArrival, "calls-dlq.fifo"))

	open := func(query, lastID string) (*http.Response, *bufio.Reader) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/events"+query, nil)
		req.Header.Set("Authorization", "Bearer "+h.viewer)
		if lastID != "" {
			req.Header.Set("Last-Event-ID", lastID)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		return resp, bufio.NewReader(resp.Body)
	}

	// Resuming after alert 1: alerts 2 and 3 at once, then 4 when it is raised.
	_, r := open("", "1")
	got := readEvents(t, r, 2)
	if got[0].id != "2" || got[1].id != "3" || got[0].kind != "dlq.arrival" {
		t.Fatalf("resumed events = %+v", got)
	}
	for _, ev := range got {
		if err := checker.Schema("Alert", []byte(ev.data)); err != nil {
			t.Errorf("event %s: %v", ev.id, err)
		}
		var a views.Alert
		json.Unmarshal([]byte(ev.data), &a)
		if a.URL != "https://toolq.example.com"+a.Path {
			t.Errorf("event %s: url %q", ev.id, a.URL)
		}
	}
	appendAlerts(t, h, testAlert(4, views.AlertHealthChanged, "orders"))
	if got := readEvents(t, r, 1); got[0].id != "4" || got[0].kind != "health.changed" {
		t.Errorf("live event = %+v", got)
	}

	// Without Last-Event-ID a stream starts with the next alert; a filter keeps what it names.
	_, fresh := open("?queuePrefix=calls&kinds=dlq", "")
	appendAlerts(t, h, testAlert(5, views.AlertDLQArrival, "orders-dlq"), testAlert(6, views.AlertDLQArrival, "calls-dlq.fifo"))
	if got := readEvents(t, fresh, 1); got[0].id != "6" {
		t.Errorf("filtered fresh stream: %+v; want only alert 6", got)
	}

	for _, tt := range []struct {
		name, query string
		header      map[string]string
		status      int
	}{
		{"no credentials", "", nil, 401},
		{"a bad Last-Event-ID", "", map[string]string{"Authorization": "Bearer " + h.viewer, "Last-Event-ID": "x"}, 400},
		{"an unknown kind", "?kinds=nope", map[string]string{"Authorization": "Bearer " + h.viewer}, 400},
	} {
		if rec := h.do(t, apiRequest{target: "/api/v1/events" + tt.query, header: tt.header}); rec.Code != tt.status {
			t.Errorf("%s: %d, want %d", tt.name, rec.Code, tt.status)
		}
	}

	// Shutting down ends the streams (http.Server.Shutdown would wait for them otherwise).
	done := make(chan error, 1)
	go func() { _, err := r.ReadString(0); done <- err }()
	h.srv.EndStreams()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the stream did not end after EndStreams")
	}
}

// TestEventStreamOutlivesReadTimeout: the dashboard's http.Server has a ReadTimeout (30 s), which
// would end a stream's context once it passed; the stream clears its deadlines and goes on.
func TestEventStreamOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	srv := httptest.NewUnstartedServer(h.srv.Handler())
	srv.Config.ReadTimeout = 100 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+h.viewer)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	// A real I/O deadline, not a clock the test could drive: let it pass.
	time.Sleep(400 * time.Millisecond)
	appendAlerts(t, h, testAlert(1, views.AlertDLQArrival, "orders-dlq"))
	if got := readEvents(t, r, 1); got[0].id != "1" {
		t.Errorf("after the read timeout: %+v", got)
	}
}

// TestEventStreamsShareTheConnectionQuota: event streams count with websockets against one
// identity's live connections; past the quota a stream is refused with 429 before it begins.
func TestEventStreamsShareTheConnectionQuota(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	srv := httptest.NewServer(h.srv.Handler())
	t.Cleanup(srv.Close)
	open := func() *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/api/v1/events", nil)
		req.Header.Set("Authorization", "Bearer "+h.viewer)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	for i := range maxWebsocketsPerIdentity {
		if resp := open(); resp.StatusCode != http.StatusOK {
			t.Fatalf("stream %d: status %d", i+1, resp.StatusCode)
		}
	}
	resp := open()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), "too_many_websockets") {
		t.Errorf("stream %d: %d %s; want 429 too_many_websockets", maxWebsocketsPerIdentity+1, resp.StatusCode, body)
	}
}
