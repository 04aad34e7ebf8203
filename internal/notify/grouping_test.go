package notify_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// webhookMessages decodes what a webhook target got at path, in order.
func (w *world) webhookMessages(path string) []webhookBody {
	w.t.Helper()
	var out []webhookBody
	for _, r := range w.recv.requests(path) {
		var b webhookBody
		if err := json.Unmarshal(r.body, &b); err != nil {
			w.t.Fatalf("webhook body: %v: %s", err, r.body)
		}
		out = append(out, b)
	}
	return out
}

// kindsSent lists the kinds of a message's alerts.
func (b webhookBody) kinds() []views.AlertKind { return kindsOf(b.Alerts) }

// step runs a check and a delivery, as the notifier's loops do after a change.
func (w *world) step(n *notify.Service) {
	w.t.Helper()
	_, err := n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
}

// TestNewsIsNeverHeld: within one queue's interval, an alert of a kind its messages did not
// carry, or more severe than all of theirs, goes out at once; what only repeats waits for the
// interval, then comes summarised.
func TestNewsIsNeverHeld(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.pair("tool-calls", "tool-calls-dlq")
	n := w.notifier([]notify.Target{w.target(t, "webhook", "/hook", "name=bot")}, nil)
	w.collect(true)
	w.step(n)

	sent := func(want int, what string) webhookBody {
		t.Helper()
		got := w.webhookMessages("/hook")
		if len(got) != want {
			var kinds [][]views.AlertKind
			for _, b := range got {
				kinds = append(kinds, b.kinds())
			}
			t.Fatalf("%s: %d messages %v; want %d", what, len(got), kinds, want)
		}
		return got[want-1]
	}

	// The first arrival, with the DLQ's health change it brings: one message.
	w.send("tool-calls-dlq", "docs-legacy", 3)
	w.advance(time.Second)
	w.collect(true)
	w.step(n)
	if m := sent(1, "the first arrival"); !slices.Equal(m.kinds(), []views.AlertKind{views.AlertDLQArrival, views.AlertHealthChanged}) {
		t.Fatalf("first message: %v", m.kinds())
	}

	// A minute later the DLQ passes 100 messages: critical, more severe than anything told.
	w.advance(time.Minute)
	w.send("tool-calls-dlq", "docs-legacy", 100)
	w.collect(true)
	w.step(n)
	if m := sent(2, "the DLQ going critical"); m.Alerts[0].Severity != views.SeverityCritical {
		t.Fatalf("second message: %+v", m.Alerts)
	}

	// An operator redrives it (to the source: the messages were sent to the DLQ, so SQS would
	// not know their source): a kind not told yet, at once; and its end, at once too.
	act := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{"us-east-1": w.sqs}, Store: w.store, Publisher: w.bus, Now: w.clock.Now})
	if _, err := act.StartRedrive(w.ctx, actions.Actor{Name: "alice", Kind: auth.KindToken, Role: auth.RoleOperator},
		actions.StartRedriveRequest{Queue: "tool-calls-dlq", Destination: "tool-calls"}); err != nil {
		t.Fatal(err)
	}
	w.must(w.coll.PollMoveTasks(w.ctx))
	w.step(n)
	if m := sent(3, "the redrive's start"); !slices.Contains(m.kinds(), views.AlertRedriveStarted) {
		t.Fatalf("third message: %v", m.kinds())
	}
	w.advance(5 * time.Second) // 103 messages at 100 a second
	w.collect(false)
	w.must(w.coll.PollMoveTasks(w.ctx))
	w.step(n)
	if m := sent(4, "the redrive's end"); !slices.Contains(m.kinds(), views.AlertRedriveCompleted) {
		t.Fatalf("fourth message: %v", m.kinds())
	}

	// A second arrival of the same severity repeats what was told 2 minutes ago: it waits.
	w.advance(time.Minute)
	w.send("tool-calls-dlq", "docs-legacy", 2)
	w.collect(true)
	w.step(n)
	sent(4, "a repeated arrival within the interval")
	first := w.webhookMessages("/hook")[0]
	w.advance(notify.DefaultInterval - 3*time.Minute)
	w.step(n)
	sent(4, "before the interval since the last arrival message passed")
	w.advance(notify.DefaultInterval)
	w.step(n)
	if m := sent(5, "once the interval passed"); !slices.Contains(m.kinds(), views.AlertDLQArrival) || m.ID == first.ID {
		t.Fatalf("fifth message: %v", m.kinds())
	}
}

// TestAdviceDoesNotSpendTheQueuesMessage: the advice a DLQ gets at start-up (it keeps messages no
// longer than its source) goes out, marked as configuration, and its first arrival 41 s later
// goes out as soon as its sample names it, not an interval later.
func TestAdviceDoesNotSpendTheQueuesMessage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.pairWith("exports", "exports-dlq", nil) // both keep messages the default 4 days
	n := w.notifier([]notify.Target{w.target(t, "webhook", "/hook", "name=bot")}, nil)
	w.collect(true)
	w.step(n)
	got := w.webhookMessages("/hook")
	if len(got) != 1 || len(got[0].Alerts) != 1 {
		t.Fatalf("start-up: %d messages; want the advice", len(got))
	}
	if a := got[0].Alerts[0]; a.Kind != views.AlertHealthChanged || a.Health == nil || !a.Health.Configuration || a.Queue != "exports-dlq" {
		t.Fatalf("start-up alert: %+v", a)
	}

	w.advance(41 * time.Second)
	w.send("exports-dlq", "docs-legacy", 1)
	w.collect(false)
	w.step(n) // held for its sample
	w.advance(time.Second)
	w.must(w.coll.PeekDue(w.ctx))
	w.step(n)
	got = w.webhookMessages("/hook")
	if len(got) != 2 || !slices.Contains(got[1].kinds(), views.AlertDLQArrival) {
		t.Fatalf("after the first arrival: %d messages; want the arrival at once", len(got))
	}
	if a := got[1].Alerts[0]; a.Arrival == nil || !a.Arrival.SampleCovers {
		t.Errorf("the arrival: %+v", a)
	}
}
