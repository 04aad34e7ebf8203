package collector

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// Peek limits that are rules rather than options.
const (
	// receiveBatch is the most messages one ReceiveMessage returns.
	receiveBatch = 10
	// peekWaitSeconds is the shortest wait a receive can ask for explicitly (see receivePass).
	peekWaitSeconds = 1
	// maxEmptyReceives ends a pass after this many empty answers in a row while the queue claims
	// more messages: short polling samples a subset of SQS's servers and may answer empty once.
	maxEmptyReceives = 2
	// releaseTimeout bounds the hand-back of a pass's messages once its context is cancelled.
	releaseTimeout = 10 * time.Second
	// blockedReceiveCount is the receive count (before the dashboard's own receive) from which a
	// FIFO group's head counts as failing: it was delivered at least twice and never deleted.
	blockedReceiveCount = 2
)

// PeekDue samples the messages of every queue whose peek is due: dead-letter queues every
// PeekDeadLetterInterval (and at once when one that was empty gets messages), opted-in source
// queues every PeekSourceInterval. It does nothing with Peek.Disabled. A dead-letter queue with a
// RUNNING or CANCELLING move task is skipped: messages held by a peek would dodge the move.
func (c *Collector) PeekDue(ctx context.Context) error {
	dlqs := c.deadLetterARNs()
	moving := make(map[int64]bool)
	if !c.opts.Peek.Disabled {
		running, err := c.store.RunningMoveTasks(ctx)
		if err != nil {
			// Without knowing which queues are being moved, peeking could hold messages back
			// from a move: skip this check rather than guess.
			c.warn(ctx, "collector: running move tasks", "err", err)
			return err
		}
		for _, t := range running {
			moving[t.QueueID] = true
		}
	}
	now := c.now()
	var due []*watchedQueue
	kinds := make(map[*watchedQueue]store.SampleKind)
	for _, q := range c.watched() {
		kind, ok := c.peekKind(q, dlqs[q.arn])
		if ok && kind == store.SampleSource && c.refuseSource(ctx, q) {
			ok = false
		}
		c.setPeekEnabled(ctx, q, ok)
		if !ok || moving[q.id] {
			continue
		}
		c.mu.Lock()
		last, lastVisible, visible := q.peekedAt, q.peekedVisible, q.visible
		c.mu.Unlock()
		filled := kind == store.SampleDeadLetter && lastVisible == 0 && visible > 0
		if dueAt(last, now, c.peekInterval(kind), peekDueCheck) || filled {
			due = append(due, q)
			kinds[q] = kind
		}
	}
	if len(due) == 0 {
		return nil
	}
	cy := c.startCycle(ctx, store.RunPeek)
	defer c.finish(ctx, cy)
	cy.queues.Store(int64(len(due)))
	c.each(ctx, cy, due, func(ctx context.Context, q *watchedQueue) {
		c.peek(ctx, cy, q, kinds[q])
	})
	c.updateCost(ctx)
	return ctx.Err()
}

// peekKind says whether q is sampled and why. Call it with or without c.mu: it reads only
// identity fields.
func (c *Collector) peekKind(q *watchedQueue, deadLetter bool) (store.SampleKind, bool) {
	switch {
	case c.opts.Peek.Disabled:
		return "", false
	case deadLetter:
		return store.SampleDeadLetter, true
	case c.optedIn(q.name):
		return store.SampleSource, true
	}
	return "", false
}

// optedIn reports whether the operator opted the source queue in: an exact name, or a prefix
// written with a trailing "*". A bare word is not a prefix, so that no queue is received from
// by accident.
func (c *Collector) optedIn(name string) bool {
	for _, s := range c.opts.Peek.Sources {
		if p, ok := strings.CutSuffix(s, "*"); ok {
			if strings.HasPrefix(name, p) {
				return true
			}
		} else if s == name {
			return true
		}
	}
	return false
}

func (c *Collector) peekInterval(kind store.SampleKind) time.Duration {
	if kind == store.SampleSource {
		return c.opts.PeekSourceInterval
	}
	return c.opts.PeekDeadLetterInterval
}

// refuseSource reports whether an opted-in source queue must not be peeked anyway: with
// maxReceiveCount 1 the dashboard's receive would use up each message's only delivery and send
// it to the dead-letter queue on its consumer's first try. The refusal is recorded once.
func (c *Collector) refuseSource(ctx context.Context, q *watchedQueue) bool {
	c.mu.Lock()
	maxRC := q.maxReceiveCount
	c.mu.Unlock()
	if maxRC != 1 {
		return false
	}
	k := skipKey{op: "PeekRefused", queueID: q.id}
	if !c.skipping(k) {
		c.mu.Lock()
		c.skipped[k] = forever
		c.mu.Unlock()
		cy := &cycle{kind: store.RunPeek}
		c.recordError(ctx, cy, opReceiveMessage, q, "PeekRefused",
			"not sampled: maxReceiveCount is 1, so one receive by the dashboard would send every message to the dead-letter queue")
	}
	return true
}

// setPeekEnabled records in the store whether q is sampled, when that changed.
func (c *Collector) setPeekEnabled(ctx context.Context, q *watchedQueue, enabled bool) {
	c.mu.Lock()
	same := q.peekEnabled == enabled
	q.peekEnabled = enabled
	c.mu.Unlock()
	if same {
		return
	}
	if err := c.store.SetPeekEnabled(ctx, q.id, enabled); err != nil {
		c.warn(ctx, "collector: set peek enabled", "queue", q.name, "err", err)
	}
}

// peekPass is what one pass over a queue took.
type peekPass struct {
	messages      []types.Message // distinct, in the order first received
	receives      int
	messagesTaken int
	capped        bool
	err           error
}

// peek runs one pass over q and stores it as a Sample.
func (c *Collector) peek(ctx context.Context, cy *cycle, q *watchedQueue, kind store.SampleKind) {
	attrs, err := c.readAttributes(ctx, cy, q, types.QueueAttributeNameApproximateNumberOfMessages)
	if err != nil {
		return
	}
	approx := attrInt(attrs, "ApproximateNumberOfMessages")
	sample := store.Sample{QueueID: q.id, Kind: kind, At: c.now(), ApproxVisible: approx}
	var pass peekPass
	// An empty queue is recorded as such without a receive: the read above costs less and
	// touches no message.
	if approx > 0 {
		pass = c.receivePass(ctx, cy, q, approx)
	}
	sample.Seen = len(pass.messages)
	// Messages that arrived between the read and the pass make Seen exceed the count read:
	// the queue held at least what was seen, and "4 of about 1" would read as nonsense.
	sample.ApproxVisible = max(approx, int64(sample.Seen))
	sample.Receives = pass.receives
	sample.MessagesTaken = pass.messagesTaken
	sample.Capped = pass.capped
	if pass.err != nil {
		sample.Error = safeMessage(pass.err)
	}
	c.tel.peekReceives.WithLabelValues(q.name).Add(float64(pass.receives))

	c.mu.Lock()
	fifo, maxRC := q.fifo, q.maxReceiveCount
	previous := q.ownReceives
	q.ownReceives = make(map[string]int, len(pass.messages))
	for _, m := range pass.messages {
		id := aws.ToString(m.MessageId)
		q.ownReceives[id] = previous[id] + 1
	}
	own := q.ownReceives
	c.peekReceives[q.id] = pass.receives
	q.peekedAt, q.peekedVisible = sample.At, approx
	c.mu.Unlock()

	nearMax := 0
	if kind == store.SampleSource {
		nearMax = maxRC
	}
	msgs := make([]store.SampledMessage, 0, len(pass.messages))
	for _, m := range pass.messages {
		msgs = append(msgs, c.sampledMessage(q, m, own[aws.ToString(m.MessageId)], nearMax))
	}
	var groups []store.GroupBacklog
	if fifo {
		groups = groupBacklog(q.id, msgs, kind == store.SampleSource)
	}
	if _, err := c.store.SaveSample(ctx, sample, msgs, groups); err != nil {
		c.storeFailed(ctx, cy, "SaveSample", q, err)
		return
	}
	c.pub.Publish(events.Event{Kind: events.SampleTaken, QueueID: q.id, At: c.now()})
}

// receivePass receives from q until it is empty, the cap is reached, or a receive returns only
// messages already seen, then hands every message it took back at once (visibility 0). It never
// deletes. The hand-back runs even when ctx is cancelled or the pass panics.
func (c *Collector) receivePass(ctx context.Context, cy *cycle, q *watchedQueue, approx int64) (pass peekPass) {
	handles := make(map[string]string) // message id → newest receipt handle
	var order []string
	defer func() { c.release(ctx, cy, q, order, handles) }()

	seen := make(map[string]bool)
	maxMessages := c.opts.Peek.MaxMessages
	visibility := int32(c.opts.Peek.VisibilityTimeout / time.Second)
	// Past half the visibility timeout (slow or throttled calls), the first messages would soon
	// come back and be received twice: stop and hand back what was taken.
	stopAt := c.now().Add(c.opts.Peek.VisibilityTimeout / 2)
	empties := 0
	for pass.messagesTaken < maxMessages && ctx.Err() == nil && c.now().Before(stopAt) {
		var out *sqs.ReceiveMessageOutput
		err := c.call(ctx, cy, opReceiveMessage, q, func(ctx context.Context) error {
			var err error
			out, err = q.region.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:            aws.String(q.url),
				MaxNumberOfMessages: int32(min(receiveBatch, maxMessages-pass.messagesTaken)),
				VisibilityTimeout:   visibility,
				// Not 0: the SDK omits a zero, and SQS then applies the queue's
				// ReceiveMessageWaitTimeSeconds (often 20 s), a long poll that would hold what
				// the pass already took in flight, then hand the same messages back again.
				WaitTimeSeconds:             peekWaitSeconds,
				MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
				MessageAttributeNames:       []string{"All"},
			})
			return err
		})
		pass.receives++
		if err != nil {
			pass.err = err
			return pass
		}
		if len(out.Messages) == 0 {
			empties++
			if empties >= maxEmptyReceives || int64(len(seen)) >= approx {
				return pass
			}
			continue
		}
		empties = 0
		fresh := 0
		for _, m := range out.Messages {
			id := aws.ToString(m.MessageId)
			pass.messagesTaken++
			if _, held := handles[id]; !held {
				order = append(order, id)
			}
			handles[id] = aws.ToString(m.ReceiptHandle)
			if !seen[id] {
				seen[id] = true
				fresh++
				pass.messages = append(pass.messages, m)
			}
		}
		if fresh == 0 {
			// Only repeats: the visibility timeout ran out under us, or the endpoint ignores it.
			return pass
		}
		if int64(len(seen)) >= approx {
			// Every message the queue held has been seen: one more receive would only cost a
			// call and, on a busy queue, take a newcomer for nothing.
			break
		}
	}
	pass.capped = pass.messagesTaken >= maxMessages
	return pass
}

// release makes every message a pass took visible again, ten per ChangeMessageVisibilityBatch.
// It outlives the pass's cancellation briefly: a message left in flight would be delayed for a
// consumer, or in a FIFO queue would hold its whole group.
func (c *Collector) release(ctx context.Context, cy *cycle, q *watchedQueue, order []string, handles map[string]string) {
	if len(order) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for i := 0; i < len(order); i += receiveBatch {
		ids := order[i:min(i+receiveBatch, len(order))]
		entries := make([]types.ChangeMessageVisibilityBatchRequestEntry, 0, len(ids))
		for j, id := range ids {
			entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{
				Id:                aws.String("m" + strconv.Itoa(j)),
				ReceiptHandle:     aws.String(handles[id]),
				VisibilityTimeout: 0,
			})
		}
		var out *sqs.ChangeMessageVisibilityBatchOutput
		err := c.call(ctx, cy, opChangeMessageVisibilityBatch, q, func(ctx context.Context) error {
			var err error
			out, err = q.region.SQS.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{
				QueueUrl: aws.String(q.url),
				Entries:  entries,
			})
			return err
		})
		if err != nil {
			continue
		}
		for _, f := range out.Failed {
			c.recordError(ctx, cy, opChangeMessageVisibilityBatch, q, safeText(aws.ToString(f.Code), 100),
				safeText("message not released: "+aws.ToString(f.Message), maxErrorMessage))
		}
	}
}
