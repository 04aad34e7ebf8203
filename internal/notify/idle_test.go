package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/server"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// BenchmarkIdleDispatch measures the notifier's idle tick (one Dispatch, which runs every
// second) at 1,000 queues with one Slack and one webhook target, after hours of history: each
// hour every queue raised a DLQ arrival that both targets were sent, and then every queue raised
// a repeat, which waits for the interval. Nothing is sent during the ticks: each finds 2,000
// groups with waiting alerts that are not news. The tick's cost should not grow with the hours.
// Its time per op at one tick a second is the share of a core the idle notifier costs.
func BenchmarkIdleDispatch(b *testing.B) {
	for _, hours := range []int{1, 24} {
		b.Run(fmt.Sprintf("queues=1000/hours=%d", hours), func(b *testing.B) {
			benchmarkIdleDispatch(b, 1000, hours)
		})
	}
}

func benchmarkIdleDispatch(b *testing.B, queues, hours int) {
	ctx := context.Background()
	n, st, clock := idleNotifier(b, queues, hours)
	b.ResetTimer()
	for b.Loop() {
		if err := n.Dispatch(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	due, err := st.DueMessages(ctx, clock.Now(), 1)
	if err != nil || len(due) != 0 {
		b.Fatalf("the idle ticks made messages: %d, %v", len(due), err)
	}
}

// TestIdleTickReadsNoGroup: once a tick has held every group's repeats, the next ticks read no
// group's alerts nor what it was told (only the router's cursor, the new alerts and the due
// messages), until the interval since the groups' last messages has passed; then the repeats go
// out, summarised.
func TestIdleTickReadsNoGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	n, st, clock := idleNotifier(t, 20, 2)
	var methods []string
	st.Trace(func(s store.Statement) { methods = append(methods, s.Methods[0]) })
	if err := n.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	st.Trace(nil)
	if want := []string{"KV", "AlertsAfter", "DueMessages"}; !slices.Equal(methods, want) {
		t.Errorf("an idle tick ran %v; want %v", methods, want)
	}

	clock.Advance(notify.DefaultInterval - 2*time.Minute) // the last messages' interval is over
	if err := n.Dispatch(ctx); err != nil {
		t.Fatal(err)
	}
	stats, err := st.NotifyTargetStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"oncall", "bot"} {
		if got := stats[name].Sent; got != 3*20 {
			t.Errorf("%s was sent %d messages; want 60 (a day's two hours and the repeats)", name, got)
		}
	}
}

// idleNotifier returns a notifier with one Slack and one webhook target over a store holding
// hours of history at queues queues (see BenchmarkIdleDispatch), after its first tick has held
// every group's repeat, and the clock that drives it.
func idleNotifier(tb testing.TB, queues, hours int) (*notify.Service, *store.Store, *sqsim.ManualClock) {
	tb.Helper()
	ctx := context.Background()
	st := storetest.Open(tb)
	start := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	clock := sqsim.NewManualClock(start)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	tb.Cleanup(recv.Close)
	var targets []notify.Target
	for _, spec := range []string{"slack:" + recv.URL + "/slack#name=oncall", "webhook:" + recv.URL + "/hook#name=bot"} {
		t, err := notify.ParseTarget(spec)
		if err != nil {
			tb.Fatal(err)
		}
		targets = append(targets, t)
	}
	n, err := notify.New(notify.Options{Views: views.New(views.Options{Store: st, Now: clock.Now}), Store: st,
		Targets: targets, ChatSafe: server.ChatSafe, Now: clock.Now})
	if err != nil {
		tb.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		tb.Fatal(err)
	}

	// raise appends one DLQ arrival a queue and routes it to both targets, as the router does.
	var cursor int64
	raise := func(at time.Time) []store.Alert {
		var alerts []store.Alert
		for q := range queues {
			body, err := json.Marshal(views.Alert{At: at, Kind: views.AlertDLQArrival, Severity: views.SeverityWarning,
				Queue: fmt.Sprintf("q-%04d-dlq", q), Title: "messages arrived", Path: "/queues/x",
				Arrival: &views.AlertArrival{New: 1, Depth: 1}})
			if err != nil {
				tb.Fatal(err)
			}
			alerts = append(alerts, store.Alert{At: at, Kind: string(views.AlertDLQArrival), GroupKey: fmt.Sprintf("queue:%d", q+1), Body: string(body)})
		}
		alerts, err := st.AppendAlerts(ctx, alerts, "bench.detector", "")
		if err != nil {
			tb.Fatal(err)
		}
		var entries []store.OutboxEntry
		for _, a := range alerts {
			for _, t := range targets {
				entries = append(entries, store.OutboxEntry{AlertID: a.ID, Target: t.Name, GroupKey: a.GroupKey, CreatedAt: at})
			}
			cursor = a.ID
		}
		if err := st.RouteAlerts(ctx, entries, cursor); err != nil {
			tb.Fatal(err)
		}
		return alerts
	}
	// The history: each hour's alerts went out at once, one message a queue a target, sent.
	for h := range hours {
		at := start.Add(time.Duration(h) * time.Hour)
		for _, a := range raise(at) {
			for _, t := range targets {
				id, err := st.CreateMessage(ctx, store.NotifyMessage{Target: t.Name, GroupKey: a.GroupKey, CreatedAt: at,
					Title: "messages arrived", Payload: "{}", NextAttemptAt: at}, []int64{a.ID})
				if err != nil {
					tb.Fatal(err)
				}
				m := store.NotifyMessage{ID: id, Status: store.MessageSent, Attempts: 1, SentAt: at}
				if err := st.RecordDelivery(ctx, store.NotifyDelivery{MessageID: id, Target: t.Name, At: at, Attempt: 1,
					Outcome: store.DeliverySent, HTTPStatus: 200}, m); err != nil {
					tb.Fatal(err)
				}
			}
		}
	}
	// A repeat a minute after the last hour's messages: it waits for the interval.
	last := start.Add(time.Duration(hours-1) * time.Hour)
	raise(last.Add(time.Minute))
	clock.Set(last.Add(2 * time.Minute))
	if err := n.Dispatch(ctx); err != nil { // the first tick after the repeats were routed
		tb.Fatal(err)
	}
	return n, st, clock
}
