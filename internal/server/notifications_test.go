package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// TestStatusPageNotifications: the status page lists each target with what it was sent, an
// operator's "send test notification" reaches a real receiver through the outbox, and the API
// says the same; viewers see the button off and are refused.
func TestStatusPageNotifications(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hits.Add(1)
	}))
	t.Cleanup(recv.Close)
	var n *notify.Service
	build := func(w *actionstest.World) Notifier {
		target, err := notify.ParseTarget("slack:" + recv.URL + "/services/T/B/SECRET#name=oncall&min-severity=warning")
		if err != nil {
			t.Fatal(err)
		}
		n, err = notify.New(notify.Options{Views: w.Views, Store: w.Store, Targets: []notify.Target{target}, ChatSafe: ChatSafe, Now: w.Now})
		if err != nil {
			t.Fatal(err)
		}
		if err := n.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		return n
	}
	pw := newPageWorld(t, pageWorldOptions{Notifier: build})
	doc, _ := pw.page(t, request{path: "/status"}, http.StatusOK)
	assertSafe(t, doc)
	row := doc.Find(`#notifications tr[data-target="oncall"]`)
	if row.Length() != 1 || !strings.Contains(row.Text(), "warning and worse") || strings.Contains(doc.Text(), "SECRET") {
		t.Fatalf("target row %q (the URL's secret path must not show)", row.Text())
	}
	if _, off := row.Find("button").Attr("disabled"); off {
		t.Error("the local operator's test button is off")
	}

	cookies, token := pw.csrf(t)
	rec := pw.do(t, request{method: http.MethodPost, path: "/status/notifications/test", header: cookies,
		form: url.Values{"_csrf": {token}, "target": {"oncall"}}})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/status?done=notify-test#notifications" {
		t.Fatalf("test form: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	if err := n.Dispatch(context.Background()); err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 1 {
		t.Fatalf("the receiver got %d requests; want the test message", hits.Load())
	}
	doc, _ = pw.page(t, request{path: "/status?done=notify-test"}, http.StatusOK)
	if !strings.Contains(doc.Find("#flash").Text(), "Test notification queued") || doc.Find("table.notify-deliveries tr.outcome-sent").Length() != 1 {
		t.Errorf("after the test: flash %q, %d sent deliveries", doc.Find("#flash").Text(), doc.Find("table.notify-deliveries tr.outcome-sent").Length())
	}
	rec = pw.do(t, request{path: "/api/v1/notifications"})
	var ns views.Notifications
	if err := json.Unmarshal(rec.Body.Bytes(), &ns); err != nil || len(ns.Targets) != 1 || ns.Targets[0].Sent != 1 || len(ns.Deliveries) != 1 {
		t.Errorf("GET /api/v1/notifications = %s", rec.Body)
	}
	rec = pw.do(t, request{method: http.MethodPost, path: "/api/v1/notifications/test", header: http.Header{"Content-Type": {"application/json"}}})
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"queued":["oncall"]`) {
		t.Errorf("POST /api/v1/notifications/test: %d %s", rec.Code, rec.Body)
	}

	viewers := newPageWorld(t, pageWorldOptions{TokenAuth: true, Notifier: build})
	doc, _ = viewers.page(t, request{path: "/status"}, http.StatusOK)
	if _, off := doc.Find(`#notifications tr[data-target="oncall"] button`).Attr("disabled"); !off {
		t.Error("a viewer's test button is on")
	}
	rec = viewers.do(t, request{method: http.MethodPost, path: "/api/v1/notifications/test", header: http.Header{"Content-Type": {"application/json"}}})
	if rec.Code != http.StatusForbidden {
		t.Errorf("a viewer's test: %d", rec.Code)
	}
}
