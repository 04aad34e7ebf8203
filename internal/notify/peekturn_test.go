package notify_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// releaseGate holds back the simulator's answer to the peek's release
// (ChangeMessageVisibilityBatch) while it is armed, as a slow pass over a real DLQ keeps its
// messages in flight for seconds, so that the other loops run in the meantime.
type releaseGate struct {
	held    chan struct{} // a release arrived and waits
	release chan struct{} // let it through
}

func newReleaseGate() *releaseGate {
	return &releaseGate{held: make(chan struct{}), release: make(chan struct{})}
}

func (g *releaseGate) front(next http.Handler) http.Handler {
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "AmazonSQS.ChangeMessageVisibilityBatch" {
			g.held <- struct{}{}
			<-g.release
		}
		next.ServeHTTP(rw, r)
	})
}

// TestPeekAtTheMinuteIsNoRecovery: a DLQ that holds messages is never ok. The collector's peek
// of a DLQ, due once a minute, receives its messages and holds them in flight until its pass
// ends; an attribute read meanwhile sees them all in flight and none visible. The collector's
// loops run on the simulator's clock second by second over three minute turns, the peek's
// release held back while the other loops go on, until a depth sample shows the messages in
// flight: every second the DLQ stays warning, and the webhook is told it became warning once,
// never that it is ok again.
func TestPeekAtTheMinuteIsNoRecovery(t *testing.T) {
	t.Parallel()
	gate := newReleaseGate()
	w := newWorldBehind(t, gate.front)
	w.deadLetter(w.pair("calls", "calls-dlq"), "docs", 5)
	n := w.notifier([]notify.Target{w.target(t, "webhook", "/hook", "name=bot&secret="+webhookSecret())}, nil)
	w.advance(t0.Add(time.Minute).Sub(w.clock.Now())) // the loops start on a minute's turn

	health := func() (views.QueueSummary, bool) {
		snap, err := w.views.Snapshot(w.ctx)
		w.must(err)
		for _, q := range snap.Overview.Queues {
			if q.Name == "calls-dlq" {
				return q, true
			}
		}
		return views.QueueSummary{}, false
	}
	var peeking chan error // the peek's cycle, while its release is held back
	var heldSince time.Duration
	sawInFlight, peeks := 0, 0
	for at := time.Duration(0); at < 3*time.Minute+30*time.Second; at += time.Second {
		for _, l := range w.coll.Loops() {
			if at%l.Every != 0 || (l.Name == "peek" && peeking != nil) {
				continue // Run's loop waits for its cycle to end
			}
			if l.Name != "peek" {
				w.must(l.Cycle(w.ctx))
				continue
			}
			done := make(chan error, 1)
			go func() { done <- l.Cycle(w.ctx) }()
			select {
			case err := <-done:
				w.must(err)
			case <-gate.held:
				peeking, heldSince = done, at
				peeks++
			}
		}
		_, err := n.Check(w.ctx)
		w.must(err)
		w.must(n.Dispatch(w.ctx))
		q, ok := health()
		if ok && q.InFlight > 0 && q.Visible == 0 {
			sawInFlight++
		}
		if ok && q.SampledAt != nil && q.Health.Status != views.HealthWarning {
			t.Errorf("%s (%s): calls-dlq holds %d visible, %d in flight and is %s: %v", at, w.clock.Now().Format(time.TimeOnly),
				q.Visible, q.InFlight, q.Health.Status, q.Health.Reasons)
		}
		// The pass lets its messages go once the attribute loop read them in flight (or before
		// its visibility timeout would).
		if peeking != nil && (q.InFlight > 0 && q.Visible == 0 || at-heldSince >= collector.DefaultPeekVisibilityTimeout-time.Second) {
			gate.release <- struct{}{}
			w.must(<-peeking)
			peeking = nil
		}
		w.advance(time.Second)
	}
	if peeks < 3 || sawInFlight < 3 {
		t.Fatalf("%d peeks held, %d seconds with the messages in flight and none visible: the minute's turns did not happen as meant", peeks, sawInFlight)
	}
	var said []string
	for _, b := range w.webhookMessages("/hook") {
		for _, a := range b.Alerts {
			if a.Kind == views.AlertHealthChanged && a.Queue == "calls-dlq" {
				said = append(said, fmt.Sprintf("%s→%s", a.Health.From, a.Health.To))
			}
		}
	}
	if len(said) != 1 || said[0] != "ok→warning" {
		t.Errorf("the webhook heard calls-dlq's health change %q; want [ok→warning] alone", said)
	}
}
