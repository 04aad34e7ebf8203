package notify_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// TestFirstFailureReachesAWebhookWithinAMinute measures, at the default settings, how long a
// DLQ quiet for ten minutes takes to reach a webhook with its first message: 20 tries, each a
// DLQ whose first message arrives 3 s later in the loops' cycle than the one before, so that
// the tries cover every phase of it. The collector's loops run as Run runs them (Loops, each at
// its own interval from the start), on the simulator's clock, second by second; the notifier
// checks once a second and delivers a second after, as its own loops do after a snapshot (the
// read side builds one within a second of a change). The 95th percentile must be a minute at
// most, and every alert must name its messages (its sample covers them).
func TestFirstFailureReachesAWebhookWithinAMinute(t *testing.T) {
	t.Parallel()
	const tries = 20
	w := newWorld(t)
	sources := make([]string, tries)
	for i := range tries {
		sources[i] = w.pair(fmt.Sprintf("calls-%02d", i), fmt.Sprintf("calls-%02d-dlq", i))
	}
	n := w.notifier([]notify.Target{w.target(t, "webhook", "/hook", "name=bot&secret="+webhookSecret())}, nil)
	loops := w.coll.Loops()
	quiet := 10 * time.Minute
	arrival := func(i int) time.Duration { return quiet + time.Duration(3*i)*time.Second }
	end := arrival(tries-1) + 3*time.Minute

	delivered := map[string]time.Duration{} // DLQ name → when its first arrival reached the webhook
	covers := map[string]bool{}
	seen := 0
	for at := time.Duration(0); at < end; at += time.Second {
		// Before the first send nothing happens between the loops' cycles: the seconds without
		// one pass without a check (the quiet ten minutes are 600 of the run's 840 steps).
		if at < arrival(0)-3*time.Second && !slices.ContainsFunc(loops, func(l collector.Loop) bool { return at%l.Every == 0 }) {
			w.advance(time.Second)
			continue
		}
		for i := range tries {
			switch at {
			case arrival(i) - 3*time.Second:
				// A consumer takes the call and fails: with maxReceiveCount 1, its next
				// receive, once the visibility timeout ran out, moves it to the DLQ.
				_, err := w.sqs.SendMessage(w.ctx, &sqs.SendMessageInput{QueueUrl: aws.String(sources[i]),
					MessageBody: aws.String(`{"toolCallId":"tc_1","toolName":"create_document","error":{"code":"connection_refused"}}`)})
				w.must(err)
				w.receive(sources[i])
			case arrival(i):
				w.receive(sources[i])
			}
		}
		w.must(n.Dispatch(w.ctx))
		for _, r := range w.recv.requests("/hook")[seen:] {
			var b webhookBody
			w.must(json.Unmarshal(r.body, &b))
			for _, a := range b.Alerts {
				if _, ok := delivered[a.Queue]; !ok && a.Kind == views.AlertDLQArrival {
					delivered[a.Queue], covers[a.Queue] = at, a.Arrival.SampleCovers
				}
			}
			if err := verifyStandardWebhook(r, webhookSecret(), w.clock.Now()); err != nil {
				t.Error(err)
			}
			seen++
		}
		_, err := n.Check(w.ctx)
		w.must(err)
		for _, l := range loops {
			if at%l.Every == 0 {
				w.must(l.Cycle(w.ctx))
			}
		}
		w.advance(time.Second)
	}

	var latencies []time.Duration
	for i := range tries {
		dlq := fmt.Sprintf("calls-%02d-dlq", i)
		got, ok := delivered[dlq]
		if !ok {
			t.Errorf("%s: its first message never reached the webhook", dlq)
			continue
		}
		if !covers[dlq] {
			t.Errorf("%s: the alert went out before a sample named its message", dlq)
		}
		latencies = append(latencies, got-arrival(i))
	}
	slices.Sort(latencies)
	if len(latencies) < tries {
		t.Fatalf("%d of %d arrivals delivered", len(latencies), tries)
	}
	p95 := latencies[(95*tries+99)/100-1]
	t.Logf("arrival to webhook over %d tries: p50 %v, p95 %v, max %v; all %v", tries, latencies[tries/2-1], p95, latencies[tries-1], latencies)
	if p95 > time.Minute {
		t.Errorf("p95 %v from a quiet DLQ's first message to the webhook; want a minute at most", p95)
	}
}
