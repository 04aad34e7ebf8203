package collector

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

func TestMoveTaskPolling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 20)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	dlq := e.queueNamed("web-search-dlq")

	// Nothing to see yet: one poll per MoveTasksInterval, for the dead-letter queue only.
	e.sim.ResetCallCounts()
	must(t, c.PollMoveTasks(e.ctx))
	e.advance(5 * time.Second)
	must(t, c.PollMoveTasks(e.ctx))
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != 1 {
		t.Errorf("idle polls within the interval = %d, want 1", n)
	}

	// The task starts just as the next idle poll falls due.
	e.advance(DefaultAttributesInterval - 5*time.Second)
	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlq.ARN), MaxNumberOfMessagesPerSecond: aws.Int32(2),
	})
	must(t, err)

	steps := []struct {
		after      time.Duration
		wantStatus store.MoveTaskStatus
		wantMoved  int64
	}{
		{0, store.MoveTaskRunning, 0},
		{2 * time.Second, store.MoveTaskRunning, 4},
		{4 * time.Second, store.MoveTaskRunning, 12},
		{10 * time.Second, store.MoveTaskCompleted, 20},
	}
	e.sim.ResetCallCounts()
	for i, step := range steps {
		e.advance(step.after)
		must(t, c.PollMoveTasks(e.ctx))
		tasks, err := e.store.ListMoveTasks(e.ctx, dlq.ID, 0)
		must(t, err)
		if len(tasks) != 1 {
			t.Fatalf("step %d: %d tasks stored, want 1", i, len(tasks))
		}
		got := tasks[0]
		if got.Status != step.wantStatus || got.Moved != step.wantMoved || got.ToMove != 20 || got.SourceARN != dlq.ARN || got.MaxPerSecond != 2 {
			t.Errorf("step %d: task = %+v, want %s with %d of 20 moved", i, got, step.wantStatus, step.wantMoved)
		}
	}
	// The first step was the idle poll that found the task; the others followed it at the
	// running cadence.
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != len(steps) {
		t.Errorf("polls = %d, want %d", n, len(steps))
	}
	if n := e.bus.count(events.MoveTasksChanged, dlq.ID); n != 4 {
		t.Errorf("MoveTasksChanged events = %d, want 4 (start, two progress steps, completion)", n)
	}
	// Done: back to the idle cadence.
	e.sim.ResetCallCounts()
	e.advance(2 * time.Second)
	must(t, c.PollMoveTasks(e.ctx))
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != 0 {
		t.Errorf("polled %d times 2 s after completion, want 0", n)
	}
	if got := len(e.snapshot("web-search")); got != 20 {
		t.Errorf("%d messages back in the source, want 20", got)
	}
}

// TestMoveTaskFoundWhenDepthFalls: a move task started outside toolq (from the console) is found
// at the first attribute read that sees the dead-letter queue's depth fall, not at the next idle
// poll minutes later.
func TestMoveTaskFoundWhenDepthFalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 20)
	c := e.collector(func(o *Options) { o.MoveTasksInterval = 0 }) // the default: the discovery interval
	must(t, c.Discover(e.ctx))
	must(t, c.CycleAttributes(e.ctx))
	must(t, c.PollMoveTasks(e.ctx)) // the idle poll: nothing
	dlq := e.queueNamed("web-search-dlq")

	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{
		SourceArn: aws.String(dlq.ARN), MaxNumberOfMessagesPerSecond: aws.Int32(1),
	})
	must(t, err)
	e.advance(DefaultAttributesInterval)
	e.sim.ResetCallCounts()
	must(t, c.PollMoveTasks(e.ctx))
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != 0 {
		t.Fatalf("polled %d times before the depth fell, want 0 (the idle poll is minutes away)", n)
	}
	must(t, c.AttributesDue(e.ctx)) // the depth has fallen by the 15 messages moved
	must(t, c.PollMoveTasks(e.ctx))
	tasks, err := e.store.ListMoveTasks(e.ctx, dlq.ID, 0)
	must(t, err)
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != 1 || len(tasks) != 1 || tasks[0].Status != store.MoveTaskRunning {
		t.Errorf("after the depth fell: %d polls, tasks %+v; want 1 poll finding the running task", n, tasks)
	}
}

// TestDueAtTickSlack pins the cadence of the loops that check for due work at a tick: work
// stamped a few milliseconds after a tick must be due at the tick that ends its interval, not
// one tick later, and never more than half a tick early.
func TestDueAtTickSlack(t *testing.T) {
	t.Parallel()
	last := t0.Add(3 * time.Millisecond) // the work ran just after the tick at t0
	tests := []struct {
		name        string
		every, tick time.Duration
		after       time.Duration // since t0
		want        bool
	}{
		{"running move task at the next tick", 2 * time.Second, 2 * time.Second, 2 * time.Second, true},
		{"idle move tasks one tick short", 15 * time.Second, 2 * time.Second, 14 * time.Second, false},
		{"idle move tasks at the tick after 15 s", 15 * time.Second, 2 * time.Second, 16 * time.Second, true},
		{"DLQ peek at 60 s", time.Minute, peekDueCheck, time.Minute, true},
		{"DLQ peek at 50 s", time.Minute, peekDueCheck, 50 * time.Second, false},
		{"never done", time.Hour, time.Second, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := last
			if tt.name == "never done" {
				l = time.Time{}
			}
			if got := dueAt(l, t0.Add(tt.after), tt.every, tt.tick); got != tt.want {
				t.Errorf("dueAt(+%v) = %v, want %v", tt.after, got, tt.want)
			}
		})
	}
}
