package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

// TestNotifyOutboxAndDeliveries follows alerts through the notifier's tables on both engines:
// targets, routing, a message taking its alerts, delivery attempts, and what the status page
// sums per target.
func TestNotifyOutboxAndDeliveries(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		targets := []NotifyTarget{
			{Name: "ops", Kind: "slack", Endpoint: "https://hooks.slack.com", Filter: "all", SeenAt: t0},
			{Name: "bot", Kind: "webhook", Endpoint: "https://bot.example", Filter: "dlq", SeenAt: t0.Add(-time.Hour)},
		}
		if err := s.SaveNotifyTargets(ctx, targets); err != nil {
			t.Fatal(err)
		}
		targets[1].SeenAt = t0
		targets[1].Filter = "dlq, health"
		if err := s.SaveNotifyTargets(ctx, targets[1:]); err != nil {
			t.Fatal(err)
		}
		got, err := s.NotifyTargets(ctx, t0)
		if err != nil || len(got) != 2 || got[0].Name != "bot" || got[0].Filter != "dlq, health" || got[1].Kind != "slack" {
			t.Fatalf("NotifyTargets = %+v, %v; want bot (updated) and ops, by name", got, err)
		}

		alerts, err := s.AppendAlerts(ctx, []Alert{
			{At: t0, Kind: "dlq_arrival", GroupKey: "queue:1", Body: `{"n":1}`},
			{At: t0, Kind: "dlq_arrival", GroupKey: "queue:1", Body: `{"n":2}`},
			{At: t0, Kind: "health", GroupKey: "queue:2", Body: `{"n":3}`},
		}, AlertDetectorKey, "m")
		if err != nil {
			t.Fatal(err)
		}
		var entries []OutboxEntry
		for _, a := range alerts {
			entries = append(entries, OutboxEntry{AlertID: a.ID, Target: "ops", GroupKey: a.GroupKey, CreatedAt: a.At})
		}
		if err := s.RouteAlerts(ctx, entries, alerts[2].ID); err != nil {
			t.Fatal(err)
		}
		// Routing again (a restart before the cursor moved) adds nothing.
		if err := s.RouteAlerts(ctx, entries[:1], alerts[2].ID); err != nil {
			t.Fatal(err)
		}
		if cursor, err := s.KV(ctx, AlertRouterKey); err != nil || cursor == "" {
			t.Errorf("router cursor = %q, %v", cursor, err)
		}
		waiting, err := s.WaitingOutbox(ctx)
		if err != nil || len(waiting) != 3 || waiting[0].AlertID != alerts[0].ID || !waiting[0].CreatedAt.Equal(t0) {
			t.Fatalf("WaitingOutbox = %+v, %v; want the three alerts, oldest first", waiting, err)
		}

		if told, err := s.ToldAfter(ctx, "ops", "queue:1", t0); err != nil || len(told.AlertIDs) != 0 || !told.Oldest.IsZero() {
			t.Errorf("ToldAfter before any message = %+v, %v; want none", told, err)
		}
		m := NotifyMessage{Target: "ops", GroupKey: "queue:1", CreatedAt: t0.Add(time.Second), Title: "2 arrivals", NextAttemptAt: t0.Add(time.Second)}
		id, err := s.CreateMessage(ctx, m, []int64{alerts[0].ID, alerts[1].ID})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.SetMessagePayload(ctx, id, `{"text":"2 arrivals"}`); err != nil {
			t.Fatal(err)
		}
		if err := s.SetMessagePayload(ctx, 404, "x"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SetMessagePayload(404) = %v; want ErrNotFound", err)
		}
		if told, err := s.ToldAfter(ctx, "ops", "queue:1", t0); err != nil || !slices.Equal(told.AlertIDs, []int64{alerts[0].ID, alerts[1].ID}) {
			t.Errorf("ToldAfter = %+v, %v; want the message's alerts", told, err)
		}
		if ids, err := s.MessageAlertIDs(ctx, id); err != nil || !slices.Equal(ids, []int64{alerts[0].ID, alerts[1].ID}) {
			t.Errorf("MessageAlertIDs = %v, %v", ids, err)
		}
		if waiting, err := s.WaitingOutbox(ctx); err != nil || len(waiting) != 1 || waiting[0].AlertID != alerts[2].ID {
			t.Errorf("WaitingOutbox after the message = %+v, %v; want the third alert alone", waiting, err)
		}
		other, err := s.CreateMessage(ctx, NotifyMessage{Target: "ops", GroupKey: "queue:2", CreatedAt: t0, NextAttemptAt: t0.Add(time.Hour)}, []int64{alerts[2].ID})
		if err != nil {
			t.Fatal(err)
		}

		due, err := s.DueMessages(ctx, t0.Add(time.Minute), 10)
		if err != nil || len(due) != 1 || due[0].ID != id || due[0].Payload != `{"text":"2 arrivals"}` || due[0].Alerts != 2 || due[0].Status != MessagePending {
			t.Fatalf("DueMessages = %+v, %v; want the first message alone", due, err)
		}

		// A failed attempt, a retry scheduled, then success.
		failed := due[0]
		failed.Attempts, failed.NextAttemptAt, failed.LastError = 1, t0.Add(2*time.Minute), "HTTP 500"
		if err := s.RecordDelivery(ctx, NotifyDelivery{MessageID: id, Target: "ops", At: t0.Add(time.Minute), Attempt: 1,
			Outcome: DeliveryRetry, HTTPStatus: 500, Error: "HTTP 500", Duration: 120 * time.Millisecond}, failed); err != nil {
			t.Fatal(err)
		}
		sent := failed
		sent.Status, sent.Attempts, sent.SentAt, sent.LastError = MessageSent, 2, t0.Add(2*time.Minute), ""
		if err := s.RecordDelivery(ctx, NotifyDelivery{MessageID: id, Target: "ops", At: t0.Add(2 * time.Minute), Attempt: 2,
			Outcome: DeliverySent, HTTPStatus: 200, Duration: 80 * time.Millisecond}, sent); err != nil {
			t.Fatal(err)
		}
		gave := NotifyMessage{ID: other, Target: "ops", Status: MessageFailed, Attempts: 5, LastError: "gone"}
		if err := s.RecordDelivery(ctx, NotifyDelivery{MessageID: other, Target: "ops", At: t0.Add(3 * time.Minute), Attempt: 5,
			Outcome: DeliveryFailed, HTTPStatus: 410, Error: "gone"}, gave); err != nil {
			t.Fatal(err)
		}
		if got, err := s.GetMessage(ctx, id); err != nil || got.Status != MessageSent || got.Attempts != 2 || !got.SentAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("GetMessage = %+v, %v; want sent after 2 attempts", got, err)
		}
		if _, err := s.GetMessage(ctx, 404); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetMessage(404) = %v; want ErrNotFound", err)
		}

		deliveries, err := s.RecentDeliveries(ctx, 2)
		if err != nil || len(deliveries) != 2 || deliveries[0].Outcome != DeliveryFailed || deliveries[1].Outcome != DeliverySent ||
			deliveries[1].Title != "2 arrivals" || deliveries[1].Duration != 80*time.Millisecond {
			t.Errorf("RecentDeliveries(2) = %+v, %v; want the failure, then the success with its message's title", deliveries, err)
		}

		stats, err := s.NotifyTargetStats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ops := stats["ops"]
		if len(stats) != 1 || ops.Sent != 1 || ops.Failed != 1 || ops.Pending != 0 || !ops.LastSentAt.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("NotifyTargetStats = %+v; want ops: 1 sent, 1 failed, none pending", stats)
		}
		if ops.LastFailure == nil || ops.LastFailure.Outcome != DeliveryFailed || ops.LastFailure.HTTPStatus != 410 {
			t.Errorf("ops' last failure = %+v; want the given-up attempt", ops.LastFailure)
		}

		// A group's messages go in order: a later one waits while an earlier one is retried.
		first, err := s.CreateMessage(ctx, NotifyMessage{Target: "ops", GroupKey: "queue:3", CreatedAt: t0, NextAttemptAt: t0.Add(time.Hour)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		second, err := s.CreateMessage(ctx, NotifyMessage{Target: "ops", GroupKey: "queue:3", CreatedAt: t0, NextAttemptAt: t0}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if due, err := s.DueMessages(ctx, t0.Add(time.Minute), 10); err != nil || len(due) != 0 {
			t.Errorf("DueMessages = %+v, %v; want none: the group's first message is retried in an hour", due, err)
		}
		if err := s.RecordDelivery(ctx, NotifyDelivery{MessageID: first, Target: "ops", At: t0.Add(time.Hour), Attempt: 1, Outcome: DeliverySent},
			NotifyMessage{ID: first, Target: "ops", Status: MessageSent, Attempts: 1, SentAt: t0.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if due, err := s.DueMessages(ctx, t0.Add(time.Hour), 10); err != nil || len(due) != 1 || due[0].ID != second {
			t.Errorf("DueMessages = %+v, %v; want the group's second message once the first went", due, err)
		}
	})
}

// TestToldAfter: what a target was told of a group is the alerts its messages of that group
// made after the time summarise; other targets', other groups' and older messages' are not, nor
// alerts still waiting for a message; Oldest is the oldest of those messages. On both engines.
func TestToldAfter(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		alerts, err := s.AppendAlerts(ctx, []Alert{
			{At: t0, Kind: "dlq.arrival", GroupKey: "queue:1", Body: "{}"},
			{At: t0, Kind: "health.changed", GroupKey: "queue:1", Body: "{}"},
			{At: t0, Kind: "dlq.arrival", GroupKey: "queue:1", Body: "{}"},
			{At: t0, Kind: "dlq.arrival", GroupKey: "queue:2", Body: "{}"},
			{At: t0, Kind: "dlq.arrival", GroupKey: "queue:1", Body: "{}"},
			{At: t0, Kind: "dlq.arrival", GroupKey: "queue:1", Body: "{}"},
		}, AlertDetectorKey, "{}")
		if err != nil {
			t.Fatal(err)
		}
		id := func(i int) int64 { return alerts[i].ID }
		var entries []OutboxEntry
		for i, a := range alerts {
			for _, target := range []string{"oncall", "bot"} {
				entries = append(entries, OutboxEntry{AlertID: a.ID, Target: target, GroupKey: []string{"queue:1", "queue:1", "queue:1", "queue:2", "queue:1", "queue:1"}[i], CreatedAt: t0})
			}
		}
		if err := s.RouteAlerts(ctx, entries, id(5)); err != nil {
			t.Fatal(err)
		}
		message := func(target, group string, at time.Time, ids ...int64) {
			t.Helper()
			if _, err := s.CreateMessage(ctx, NotifyMessage{Target: target, GroupKey: group, CreatedAt: at, NextAttemptAt: at}, ids); err != nil {
				t.Fatal(err)
			}
		}
		message("oncall", "queue:1", t0, id(0))                               // before the window
		message("oncall", "queue:1", t0.Add(4*time.Minute), id(5))            // within it
		message("oncall", "queue:1", t0.Add(2*time.Minute), id(1), id(2))     // within it, the oldest
		message("bot", "queue:1", t0.Add(3*time.Minute), id(0), id(1), id(2)) // another target's
		message("oncall", "queue:2", t0.Add(3*time.Minute), id(3))            // another group's
		// id(4) waits for oncall: routed, in no message yet.
		got, err := s.ToldAfter(ctx, "oncall", "queue:1", t0.Add(time.Minute))
		if want := []int64{id(1), id(2), id(5)}; err != nil || !slices.Equal(got.AlertIDs, want) || !got.Oldest.Equal(t0.Add(2*time.Minute)) {
			t.Errorf("ToldAfter = %+v, %v; want %v, the oldest message at t0+2m", got, err, want)
		}
		if got, err := s.ToldAfter(ctx, "oncall", "queue:1", t0.Add(4*time.Minute)); err != nil || len(got.AlertIDs) != 0 || !got.Oldest.IsZero() {
			t.Errorf("ToldAfter the newest message = %+v, %v; want none (the bound is exclusive)", got, err)
		}
	})
}
