package collector

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

func TestAttributeFaultsAreRecordedAndTheCycleGoesOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault sqsim.Fault
		code  string
	}{
		{"throttling", sqsim.Fault{ThrottleRate: 0.6}, "RequestThrottled"},
		{"internal errors", sqsim.Fault{ErrorRate: 0.6}, "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			const queues = 30
			for i := range queues {
				e.createQueue(fmt.Sprintf("q-%02d", i), nil)
			}
			c := e.collector(nil)
			must(t, c.Discover(e.ctx))
			before, err := e.store.LatestAttributeSamples(e.ctx)
			must(t, err)

			e.advance(15 * time.Second)
			e.sim.SetFault("GetQueueAttributes", tt.fault)
			must(t, c.CycleAttributes(e.ctx))
			e.sim.SetFault("GetQueueAttributes", sqsim.Fault{})

			after, err := e.store.LatestAttributeSamples(e.ctx)
			must(t, err)
			sampled := 0
			for id, s := range after {
				if s.At.After(before[id].At) {
					sampled++
				}
			}
			errs := e.errors(0)
			if len(errs) == 0 || sampled == 0 || sampled+len(errs) != queues {
				t.Fatalf("%d queues sampled and %d errors recorded, want some of each adding up to %d", sampled, len(errs), queues)
			}
			for _, ce := range errs {
				if ce.Code != tt.code || ce.Operation != "GetQueueAttributes" || ce.QueueID == 0 || ce.RunID == 0 {
					t.Errorf("recorded error = %+v, want %s on GetQueueAttributes of one queue", ce, tt.code)
				}
			}
			run, err := e.store.LatestRun(e.ctx, store.RunAttributes)
			must(t, err)
			// Each failed queue made three attempts (the retryer's); the run counts calls as
			// the collector made them, one per queue.
			if run.Errors != len(errs) || run.Calls != queues || run.Queues != queues {
				t.Errorf("run = %+v, want %d queues, %d calls, %d errors", run, queues, queues, len(errs))
			}
			if got := e.sim.CallCount("GetQueueAttributes"); got <= queues {
				t.Errorf("simulator saw %d GetQueueAttributes for %d queues: no retries", got, queues)
			}

			// The fault is over: the next cycle samples everything and records nothing new.
			e.advance(15 * time.Second)
			must(t, c.CycleAttributes(e.ctx))
			if got := len(e.errors(0)); got != len(errs) {
				t.Errorf("errors after recovery = %d, want %d", got, len(errs))
			}
			latest, err := e.store.LatestAttributeSamples(e.ctx)
			must(t, err)
			for id, s := range latest {
				if !s.At.Equal(e.clock.Now()) {
					t.Errorf("queue %d last sampled at %v, want now", id, s.At)
				}
			}
		})
	}
}

// panickySQS is the real client, except that reading one queue's attributes panics, as a bug
// tripped by hostile data would.
type panickySQS struct {
	*sqs.Client
	url string
}

func (p panickySQS) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	if aws.ToString(in.QueueUrl) == p.url {
		panic("boom")
	}
	return p.Client.GetQueueAttributes(ctx, in, optFns...)
}

func TestPanicInOneQueueIsRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("a", nil)
	badURL, _ := e.createQueue("b", nil)
	e.createQueue("c", nil)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	c.regions[0].SQS = panickySQS{Client: e.sqs, url: badURL}

	e.advance(15 * time.Second)
	must(t, c.CycleAttributes(e.ctx))
	latest, err := e.store.LatestAttributeSamples(e.ctx)
	must(t, err)
	for _, name := range []string{"a", "c"} {
		if s := latest[e.queueNamed(name).ID]; !s.At.Equal(e.clock.Now()) {
			t.Errorf("%s not sampled after another queue's panic", name)
		}
	}
	errs := e.errors(e.queueNamed("b").ID)
	if len(errs) != 1 || errs[0].Code != "panic" {
		t.Errorf("errors of b = %+v, want one panic", errs)
	}
}

func TestMetricFaultsAreRecorded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("web-search", nil)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	e.sim.SetFault("GetMetricData", sqsim.Fault{ErrorRate: 1})
	must(t, c.CycleMetrics(e.ctx))
	errs := e.errors(0)
	if len(errs) != 1 || errs[0].Operation != "GetMetricData" || errs[0].Code != "InternalServiceError" {
		t.Errorf("errors = %+v, want one GetMetricData InternalServiceError", errs)
	}
}

func TestRepeatedFailuresAreStoredOncePerMinuteAndBackedOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("a", nil)
	c := e.collector(nil) // attribute interval 15 s, discovery interval 5 min
	must(t, c.Discover(e.ctx))
	e.sim.SetFault("GetQueueAttributes", sqsim.Fault{ErrorRate: 1})
	// Every 15 s: failures 1 and 2 are tried again at the next cycle; the third (30 s) backs the
	// operation off for 15 s, the fourth (45 s) for 30 s, the fifth (75 s) for 60 s, the sixth
	// (135 s) for 120 s.
	wantCalls := []int{1, 1, 1, 1, 0, 1, 0, 0, 0, 1}
	for i, want := range wantCalls {
		e.sim.ResetCallCounts()
		must(t, c.CycleAttributes(e.ctx))
		if got := e.sim.CallCount("GetQueueAttributes"); got != want*3 { // the SDK makes 3 attempts
			t.Errorf("cycle at %d s: %d attempts, want %d", 15*i, got, want*3)
		}
		calls, errs := e.newestRun(store.RunAttributes)
		if calls != want || errs != 1 {
			t.Errorf("cycle at %d s: run calls, errors = %d, %d; want %d, 1: a skipped read still counts as failed", 15*i, calls, errs, want)
		}
		// A run that collected nothing does not make the data look fresh.
		if _, err := e.store.LatestRun(e.ctx, store.RunAttributes); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("LatestRun after failed runs only = %v, want ErrNotFound", err)
		}
		e.advance(15 * time.Second)
	}
	if got := len(e.errors(0)); got != 3 {
		t.Errorf("stored errors = %d, want 3 (at 0, 75 and 135 s)", got)
	}
	// Once the endpoint answers again, the first call after the backoff (at most the discovery
	// interval) succeeds and ends it.
	e.sim.SetFault("GetQueueAttributes", sqsim.Fault{})
	e.advance(2 * time.Minute)
	must(t, c.CycleAttributes(e.ctx))
	if calls, errs := e.newestRun(store.RunAttributes); calls != 1 || errs != 0 {
		t.Errorf("after recovery: calls, errors = %d, %d; want 1, 0", calls, errs)
	}
	statuses, err := e.store.OperationStatuses(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range statuses {
		if st.Operation == "GetQueueAttributes" && (st.Failing() || !st.BackoffUntil.IsZero() || st.FailureCode != "InternalError" || st.FailureStatus != 500) {
			t.Errorf("status after recovery = %+v", st)
		}
	}
}

// TestMoveTaskPollsBackOffOnServerErrors: an endpoint that answers 500 to every
// ListMessageMoveTasks is asked less and less often (up to the discovery interval), not every
// cycle with the SDK's retries each time, which drained the retry quota an operator's redrive
// shared.
func TestMoveTaskPollsBackOffOnServerErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createPair("a", "a-dlq", 3)
	e.createPair("b", "b-dlq", 3)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	e.sim.SetFault("ListMessageMoveTasks", sqsim.Fault{ErrorRate: 1})
	e.sim.ResetCallCounts()
	for range 150 { // 5 minutes, at the running-task cadence
		must(t, c.PollMoveTasks(e.ctx))
		e.advance(2 * time.Second)
	}
	// Without a backoff: 20 polls of 2 queues, 3 attempts each, 120 in all.
	attempts := e.sim.CallCount("ListMessageMoveTasks")
	if attempts > 40 {
		t.Errorf("%d ListMessageMoveTasks attempts in 5 minutes, want at most 40", attempts)
	}
	statuses, err := e.store.OperationStatuses(e.ctx)
	must(t, err)
	for _, st := range statuses {
		if st.Operation != "ListMessageMoveTasks" {
			continue
		}
		if !st.Failing() || st.FailureStatus != 500 || st.BackoffUntil.Before(e.clock.Now()) {
			t.Errorf("status = %+v, want failing with HTTP 500 and backed off", st)
		}
	}
}
