package collector

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/store"
)

// createTier creates source → tier → final: the tier is the source's dead-letter queue and has a
// RedrivePolicy of its own, as SQS allows.
func (e *env) createTier(source, tier, final string, sourceMax, tierMax int) (sourceURL, tierURL, finalURL string) {
	e.t.Helper()
	finalURL, finalARN := e.createQueue(final, nil)
	tierURL, tierARN := e.createQueue(tier, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, finalARN, tierMax),
	})
	sourceURL, _ = e.createQueue(source, map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, tierARN, sourceMax),
	})
	return sourceURL, tierURL, finalURL
}

// TestNoLookMovesATiersMessages: a dead-letter queue with a RedrivePolicy of its own is a source.
// By default it is not received from at all; opted in, its receives stop while one more would
// leave a message no delivery, so that over many passes nothing moves on to the final DLQ.
func TestNoLookMovesATiersMessages(t *testing.T) {
	t.Parallel()
	for _, optIn := range []bool{false, true} {
		t.Run(fmt.Sprintf("opted in %v", optIn), func(t *testing.T) {
			e := newEnv(t)
			srcURL, _, _ := e.createTier("tool-calls", "tool-calls-dlq", "tool-calls-dlq2", 2, 5)
			e.deadLetter(srcURL, "tool-calls-dlq", 2)
			c := e.collector(func(o *Options) {
				if optIn {
					o.Peek.Sources = []string{"tool-calls-dlq"}
				}
			})
			must(t, c.Discover(e.ctx))
			e.sim.ResetCallCounts()
			for range 20 {
				must(t, c.CycleAttributes(e.ctx))
				must(t, c.PeekDue(e.ctx))
				e.advance(5 * time.Minute)
			}
			if n, n2 := len(e.snapshot("tool-calls-dlq")), len(e.snapshot("tool-calls-dlq2")); n != 2 || n2 != 0 {
				t.Fatalf("after 20 peek cycles: tier holds %d, final DLQ %d; want 2 and 0", n, n2)
			}
			tier := e.queueNamed("tool-calls-dlq")
			if !tier.IsDeadLetterQueue() {
				t.Errorf("the tier is not shown as a dead-letter queue")
			}
			if !optIn {
				if n := e.sim.CallCount("ReceiveMessage"); n != 0 {
					t.Errorf("%d receives from a tier nobody opted in", n)
				}
				if tier.PeekEnabled {
					t.Errorf("PeekEnabled on a tier nobody opted in")
				}
				return
			}
			// The messages arrived with 2 receives; toolq's took them to 4 of 5, then paused.
			for _, m := range e.snapshot("tool-calls-dlq") {
				if m.ReceiveCount != 4 {
					t.Errorf("message %s received %d times, want 4: one delivery left", m.MessageID, m.ReceiveCount)
				}
			}
			if !strings.HasPrefix(tier.PeekPaused, "paused: message") {
				t.Errorf("PeekPaused = %q, want the message it protects", tier.PeekPaused)
			}
			_, msgs := e.latestMessages("tool-calls-dlq")
			for _, m := range msgs {
				if m.ReceiveCount != 2 || m.OwnReceives != 2 {
					t.Errorf("sampled %s: receive count %d, own %d; want 2 by consumers and 2 by toolq", m.MessageID, m.ReceiveCount, m.OwnReceives)
				}
			}
		})
	}
}

// TestReceiveGuardSurvivesARestart: what the peeks know of a source's messages comes back from
// the store, so a new process does not receive a message the old one had paused for.
func TestReceiveGuardSurvivesARestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("orders", "orders-dlq", 3)
	e.send(srcURL, toolCallBody("pay", 1, "s"))
	opt := func(o *Options) { o.Peek.Sources = []string{"orders"} }
	c := e.collector(opt)
	must(t, c.Discover(e.ctx))
	for range 3 {
		must(t, c.PeekDue(e.ctx))
		e.advance(5 * time.Minute)
	}
	if got := e.snapshot("orders")[0].ReceiveCount; got != 1 {
		t.Fatalf("receive count = %d, want 1 (one pass: toolq's limit under maxReceiveCount 3, then paused)", got)
	}
	restarted := e.collector(opt)
	must(t, restarted.Discover(e.ctx))
	e.sim.ResetCallCounts()
	must(t, restarted.PeekDue(e.ctx))
	if n := e.sim.CallCount("ReceiveMessage"); n != 0 {
		t.Errorf("after a restart: %d receives of a queue whose message had toolq's every receive", n)
	}
	if e.queueNamed("orders").PeekPaused == "" {
		t.Errorf("after a restart: not paused")
	}
	// A consumer deletes it: the empty queue ends the pause.
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL)})
	must(t, err)
	_, err = e.sqs.DeleteMessage(e.ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(srcURL), ReceiptHandle: out.Messages[0].ReceiptHandle})
	must(t, err)
	must(t, restarted.CycleAttributes(e.ctx))
	must(t, restarted.PeekDue(e.ctx))
	if p := e.queueNamed("orders").PeekPaused; p != "" {
		t.Errorf("an empty queue is still paused: %q", p)
	}
}

// TestOwnReceivesCountOnlySinceArrival: a DLQ message sampled three times, redriven, failed
// again by its consumer and back in the DLQ shows the consumer's receives since its return, not
// those minus toolq's receives of its earlier stay.
func TestOwnReceivesCountOnlySinceArrival(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 2)
	e.deadLetter(srcURL, "web-search-dlq", 1)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	for range 3 {
		must(t, c.PeekDue(e.ctx))
		e.advance(time.Minute)
	}
	if _, msgs := e.latestMessages("web-search-dlq"); len(msgs) != 1 || msgs[0].OwnReceives != 3 {
		t.Fatalf("before the redrive: %+v, want one message with 3 own receives", msgs)
	}
	// Between two passes: redrive it, and let the consumer fail it twice more.
	dlq := e.queueNamed("web-search-dlq")
	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN)})
	must(t, err)
	for range 20 {
		e.advance(time.Second)
		if len(e.snapshot("web-search-dlq")) == 0 {
			break
		}
	}
	must(t, c.PollMoveTasks(e.ctx))
	for range 100 {
		if len(e.snapshot("web-search-dlq")) == 1 {
			break
		}
		e.consume(srcURL)
	}
	simCount := e.snapshot("web-search-dlq")[0].ReceiveCount
	must(t, c.PeekDue(e.ctx))
	_, msgs := e.latestMessages("web-search-dlq")
	if len(msgs) != 1 {
		t.Fatalf("after the return: %d messages", len(msgs))
	}
	if m := msgs[0]; m.OwnReceives != 1 || m.ReceiveCount != simCount {
		t.Errorf("after the return: receive count %d (own %d), want %d (the simulator's count before toolq's receive), own 1",
			m.ReceiveCount, m.OwnReceives, simCount)
	}
}

// failMoveTaskWrites makes the store's writes of move tasks fail until the returned function is
// called: a real SQLite trigger on the real file, as a full disk or a locked file would.
func (e *env) failMoveTaskWrites() (restore func()) {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.db+"?_pragma=busy_timeout(5000)")
	must(e.t, err)
	exec := func(q string) {
		if _, err := db.ExecContext(context.Background(), q); err != nil {
			e.t.Fatal(err)
		}
	}
	exec(`CREATE TRIGGER fail_move_task_update BEFORE UPDATE ON move_tasks BEGIN SELECT RAISE(ABORT, 'injected write failure'); END`)
	return func() {
		exec(`DROP TRIGGER fail_move_task_update`)
		db.Close()
	}
}

// TestMoveTaskCachedOnlyOnceStored: a write that fails once must not leave the task RUNNING in
// the store: the next poll writes what SQS says.
func TestMoveTaskCachedOnlyOnceStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 1)
	e.deadLetter(srcURL, "web-search-dlq", 30)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	dlq := e.queueNamed("web-search-dlq")
	_, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	must(t, err)
	must(t, c.PollMoveTasks(e.ctx))
	running, err := e.store.RunningMoveTasks(e.ctx)
	must(t, err)
	if len(running) != 1 {
		t.Fatalf("running tasks = %+v, want 1", running)
	}
	e.advance(time.Minute) // 30 messages at 1 a second: done
	restore := e.failMoveTaskWrites()
	must(t, c.PollMoveTasks(e.ctx))
	restore()
	e.advance(2 * time.Second)
	must(t, c.PollMoveTasks(e.ctx))
	tasks, err := e.store.ListMoveTasks(e.ctx, dlq.ID, 5)
	must(t, err)
	if len(tasks) != 1 || tasks[0].Status != store.MoveTaskCompleted || tasks[0].Moved != 30 {
		t.Errorf("stored tasks after a failed write and a poll = %+v, want one COMPLETED with 30 moved", tasks)
	}
}

// TestIdleMessagesKeepTheirTries is the hostile evaluation's case: 50 idle messages (nobody
// consumes them) in an opted-in source, sampled every 20 s for 50 passes. toolq receives each at
// most maxReceiveCount − 2 times, so none reaches the dead-letter queue, each keeps a try and a
// retry for its consumers, and the queue shows why it is paused; at maxReceiveCount 2 or less it
// is never received from at all.
func TestIdleMessagesKeepTheirTries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		maxRC     int
		wantOwn   int // toolq's receives of each message
		wantPause string
	}{
		{2, 0, "not sampled: maxReceiveCount is 2"},
		{3, 1, "paused: toolq's receives of message"},
		{4, 2, "paused: toolq's receives of message"},
		{5, 3, "paused: toolq's receives of message"},
		{10, 8, "paused: toolq's receives of message"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("maxReceiveCount %d", tt.maxRC), func(t *testing.T) {
			e := newEnv(t)
			srcURL, _ := e.createPair("tool-calls", "tool-calls-dlq", tt.maxRC)
			for i := range 50 {
				e.send(srcURL, toolCallBody("create_document", i, fmt.Sprintf("sess_%d", i%7)))
			}
			c := e.collector(func(o *Options) {
				o.Peek.Sources = []string{"tool-calls"}
				o.PeekSourceInterval = 20 * time.Second
			})
			must(t, c.Discover(e.ctx))
			for range 50 {
				must(t, c.CycleAttributes(e.ctx))
				must(t, c.PeekDue(e.ctx))
				e.advance(20 * time.Second)
			}
			if n := len(e.snapshot("tool-calls-dlq")); n != 0 {
				t.Fatalf("%d of 50 idle messages moved to the DLQ by toolq's looks", n)
			}
			for _, m := range e.snapshot("tool-calls") {
				if m.ReceiveCount != tt.wantOwn {
					t.Errorf("message %s received %d times by toolq; want %d (maxReceiveCount %d − 2)", m.MessageID, m.ReceiveCount, tt.wantOwn, tt.maxRC)
				}
			}
			q := e.queueNamed("tool-calls")
			if !strings.HasPrefix(q.PeekPaused, tt.wantPause) && !strings.Contains(e.refusal(q.ID), tt.wantPause) {
				t.Errorf("PeekPaused = %q (refusal %q); want %q", q.PeekPaused, e.refusal(q.ID), tt.wantPause)
			}
			if tt.wantOwn == 0 {
				return
			}
			_, msgs := e.latestMessages("tool-calls")
			if len(msgs) != 50 {
				t.Fatalf("the newest sample holds %d messages; want 50", len(msgs))
			}
			for _, m := range msgs {
				if m.OwnReceives != tt.wantOwn || m.ReceiveCount != 0 {
					t.Errorf("sampled %s: own %d, consumers' %d; want %d and 0", m.MessageID, m.OwnReceives, m.ReceiveCount, tt.wantOwn)
				}
			}
		})
	}
}

// refusal returns the PeekRefused error recorded for a queue, if any.
func (e *env) refusal(queueID int64) string {
	e.t.Helper()
	for _, ce := range e.errors(queueID) {
		if ce.Code == "PeekRefused" {
			return ce.Message
		}
	}
	return ""
}

// TestBlockedGroupKeepsItsPile: a FIFO session whose head fails again and again keeps messages
// waiting behind it while the queue is busy (the head is in a consumer's hands most of the
// time). Being busy is no sign that the pile is gone: over many passes toolq receives no waiting
// message more than maxReceiveCount − 2 times, during the block and after the head has gone.
func TestBlockedGroupKeepsItsPile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("orders.fifo", "orders-dlq.fifo", 5)
	for i := range 5 {
		e.send(srcURL, toolCallBody("create_document", i, "sess_a"), inGroup("sess_a", fmt.Sprintf("a%d", i)))
		e.advance(time.Second)
	}
	head := e.snapshot("orders.fifo")[0].MessageID
	c := e.collector(func(o *Options) {
		o.Peek.Sources = []string{"orders.fifo"}
		o.PeekSourceInterval = 20 * time.Second
	})
	must(t, c.Discover(e.ctx))
	consuming := true
	consumed := map[string]int{} // receives by the consumer of messages other than the head
	for range 25 {
		// The consumer takes the head (FIFO gives it first) and fails it, while its
		// visibility timeout holds the whole session back; then toolq may look. Once SQS has
		// moved the head on, the consumer is gone too: what waited behind it is idle.
		if consuming {
			out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 1, VisibilityTimeout: 10})
			must(t, err)
			consuming = len(out.Messages) == 1 && aws.ToString(out.Messages[0].MessageId) == head
			if len(out.Messages) == 1 && !consuming {
				consumed[aws.ToString(out.Messages[0].MessageId)]++
			}
		}
		must(t, c.CycleAttributes(e.ctx))
		must(t, c.PeekDue(e.ctx))
		e.advance(20 * time.Second)
	}
	for _, m := range e.snapshot("orders.fifo") {
		if own := m.ReceiveCount - consumed[m.MessageID]; m.MessageID != head && own > 3 {
			t.Errorf("waiting message %s received %d times by toolq; want at most 3 (maxReceiveCount 5 − 2)", m.MessageID, own)
		}
	}
	if n := len(e.snapshot("orders-dlq.fifo")); n > 1 {
		t.Errorf("%d messages in the DLQ; want the failing head at most", n)
	}
}
