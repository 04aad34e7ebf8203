package collector

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"
	"weak"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/sqsim"
)

// memory is how much a queue remembers beyond its snapshot of attributes.
type memory struct{ seen, tasks, failures, skips int }

func (q *watchedQueue) memory() memory {
	q.mu.Lock()
	defer q.mu.Unlock()
	return memory{len(q.seen), len(q.tasks), len(q.failures), len(q.skips)}
}

// watchedByName returns weak pointers to c's watched queues and what each remembers, so that
// the test itself keeps none of them alive.
func watchedByName(c *Collector) (map[string]weak.Pointer[watchedQueue], map[string]memory) {
	ptrs := make(map[string]weak.Pointer[watchedQueue])
	mems := make(map[string]memory)
	for _, q := range c.watched() {
		ptrs[q.name] = weak.Make(q)
		mems[q.name] = q.memory()
	}
	return ptrs, mems
}

// TestGoneQueueLeavesNothingBehind fills everything a queue can make the collector remember
// (messages seen, a move task, a failure, a skip), deletes the queue in the simulator and lets
// discovery mark it gone: afterwards nothing the collector holds reaches the queue, so all of
// it is released, while a queue that stays keeps what it had.
func TestGoneQueueLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, dlqURL := e.createPair("web-search", "web-search-dlq", 1)
	e.createQueue("notifications", nil)
	e.deadLetter(srcURL, "web-search-dlq", 3)
	// Opting in a source with maxReceiveCount 1 gets it refused for good: a skip and a failure.
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"web-search"} })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	dlq := e.queueNamed("web-search-dlq")
	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)})
	must(t, err)
	must(t, c.PollMoveTasks(e.ctx))
	e.advance(DefaultAttributesInterval)
	e.sim.SetFault("ListMessageMoveTasks", sqsim.Fault{ErrorRate: 1})
	must(t, c.PollMoveTasks(e.ctx))
	e.sim.SetFault("ListMessageMoveTasks", sqsim.Fault{})

	queues, before := watchedByName(c)
	if m := before["web-search"]; m.skips == 0 || m.failures == 0 {
		t.Fatalf("web-search remembers %+v before it goes, want a skip and a failure", m)
	}
	if m := before["web-search-dlq"]; m.seen == 0 || m.tasks == 0 || m.failures == 0 {
		t.Fatalf("web-search-dlq remembers %+v before it goes, want messages seen, a task and a failure", m)
	}

	for _, u := range []string{srcURL, dlqURL} {
		_, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		must(t, err)
	}
	e.advance(time.Minute)
	must(t, c.Discover(e.ctx))
	for _, name := range []string{"web-search", "web-search-dlq"} {
		if q := e.queueNamed(name); !q.Gone() {
			t.Fatalf("%s not marked gone: %+v", name, q)
		}
	}

	c.mu.Lock()
	held := map[string]int{"queues": len(c.queues), "urls": len(c.urls), "skipped": len(c.skipped), "recorded": len(c.recorded)}
	c.mu.Unlock()
	if want := map[string]int{"queues": 1, "urls": 1, "skipped": 0, "recorded": 0}; !maps.Equal(held, want) {
		t.Errorf("collector maps hold %v after two of three queues went, want %v", held, want)
	}
	// Nothing refers to the gone queues any more, so they are collected with all they
	// remembered; the queue that stays is not.
	runtime.GC()
	for name, want := range map[string]bool{"web-search": false, "web-search-dlq": false, "notifications": true} {
		if alive := queues[name].Value() != nil; alive != want {
			t.Errorf("%s still reachable = %v after a collection, want %v", name, alive, want)
		}
	}
	runtime.KeepAlive(c)
}

// TestMoveTaskCacheKeepsSQSsTen starts one move task after another on a dead-letter queue: the
// cache follows ListMessageMoveTasks, which lists the ten newest, so a task that drops out of
// the list leaves the cache, while the store keeps every task.
func TestMoveTaskCacheKeepsSQSsTen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createPair("web-search", "web-search-dlq", 3)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	dlq := e.queueNamed("web-search-dlq")
	q := c.byURL(c.regions[0], dlq.URL)

	const started = 12
	var keys []taskKey
	for i := range started {
		// An empty dead-letter queue's task completes at once, so the next may start.
		_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)})
		must(t, err)
		keys = append(keys, taskKey{sourceARN: dlq.ARN, startedAt: e.clock.Now().UnixMilli()})
		must(t, c.PollMoveTasks(e.ctx))
		if got, want := q.memory().tasks, min(i+1, 10); got != want {
			t.Fatalf("after task %d: %d tasks cached, want %d", i+1, got, want)
		}
		e.advance(DefaultAttributesInterval)
	}
	for i, k := range keys {
		_, cached := q.task(k)
		if want := i >= started-10; cached != want {
			t.Errorf("task %d (started %d) cached = %v, want %v", i+1, k.startedAt, cached, want)
		}
	}
	stored, err := e.store.ListMoveTasks(e.ctx, dlq.ID, 0)
	must(t, err)
	if len(stored) != started {
		t.Errorf("%d tasks stored, want all %d", len(stored), started)
	}
}

// TestFailureMemoriesExpire records failures of the whole region and of each queue, then lets
// Prune run: within errorRepeat they are kept, since they decide what is stored again; after it
// they are forgotten, while a queue's refusal for good stays with the queue.
func TestFailureMemoriesExpire(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createPair("web-search", "web-search-dlq", 1)
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"web-search"} })
	must(t, c.Discover(e.ctx))
	e.sim.SetFault("ListQueues", sqsim.Fault{ErrorRate: 1})
	must(t, c.Discover(e.ctx))
	e.sim.SetFault("ListQueues", sqsim.Fault{})
	e.sim.SetFault("GetQueueAttributes", sqsim.Fault{ErrorRate: 1})
	must(t, c.CycleAttributes(e.ctx))
	e.sim.SetFault("GetQueueAttributes", sqsim.Fault{})
	must(t, c.PeekDue(e.ctx)) // web-search: maxReceiveCount 1, refused for good

	held := func() (recorded, skipped int, queues map[string]memory) {
		c.mu.Lock()
		recorded, skipped = len(c.recorded), len(c.skipped)
		c.mu.Unlock()
		_, queues = watchedByName(c)
		return recorded, skipped, queues
	}
	steps := []struct {
		name            string
		after           time.Duration
		wantRecorded    int
		wantSourceFails int // web-search's: GetQueueAttributes and PeekRefused
		wantDLQFails    int
	}{
		{"within errorRepeat", errorRepeat - time.Second, 1, 2, 1},
		{"at errorRepeat", time.Second, 0, 0, 0},
	}
	for _, step := range steps {
		e.advance(step.after)
		must(t, c.Prune(e.ctx))
		recorded, skipped, queues := held()
		src, dlq := queues["web-search"], queues["web-search-dlq"]
		if recorded != step.wantRecorded || src.failures != step.wantSourceFails || dlq.failures != step.wantDLQFails {
			t.Errorf("%s: failures remembered: %d of the region, %d of web-search, %d of web-search-dlq; want %d, %d, %d",
				step.name, recorded, src.failures, dlq.failures, step.wantRecorded, step.wantSourceFails, step.wantDLQFails)
		}
		if src.skips != 1 || skipped != 0 {
			t.Errorf("%s: skips: %d of web-search, %d of the region; want its refusal only", step.name, src.skips, skipped)
		}
	}
}

// TestMissingOperationSkipsExpire runs against kumo, which lacks ListDeadLetterSourceQueues and
// ListMessageMoveTasks: each is skipped in the region for a discovery interval, and Prune
// forgets the skips once that has passed. The collector's clock is manual; kumo's is not, and
// does not need to be.
func TestMissingOperationSkipsExpire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	clients, err := awsconf.Load(ctx, awsconf.Options{
		Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond,
	})
	must(t, err)
	st := storetest.Open(t)
	// kumo's queues are shared by every server of the process: name them apart.
	run := "s" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-"
	dlq, err := clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(run + "web-search-dlq")})
	must(t, err)
	dlqAttrs, err := clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	must(t, err)
	_, err = clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(run + "web-search"), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, dlqAttrs.Attributes["QueueArn"]),
	}})
	must(t, err)

	clock := sqsim.NewManualClock(t0)
	c, err := New(Options{Regions: []Region{{Name: "us-east-1", SQS: clients.SQS}}, Store: st, Now: clock.Now, QueuePrefixes: []string{run}})
	must(t, err)
	must(t, c.Discover(ctx))
	must(t, c.PollMoveTasks(ctx))
	skipped := func() []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		var ops []string
		for k := range c.skipped {
			ops = append(ops, k.op)
		}
		slices.Sort(ops)
		return ops
	}
	want := []string{"unsupported " + opListDeadLetterSourceQueues, "unsupported " + opListMessageMoveTasks}
	if got := skipped(); !slices.Equal(got, want) {
		t.Fatalf("region skips = %v, want %v", got, want)
	}
	clock.Advance(DefaultDiscoveryInterval - time.Second)
	must(t, c.Prune(ctx))
	if got := skipped(); !slices.Equal(got, want) {
		t.Errorf("region skips before the discovery interval ended = %v, want %v", got, want)
	}
	clock.Advance(time.Second)
	must(t, c.Prune(ctx))
	if got := skipped(); len(got) != 0 {
		t.Errorf("region skips once the discovery interval ended = %v, want none", got)
	}
}
