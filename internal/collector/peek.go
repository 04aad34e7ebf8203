package collector

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
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
	// blockedReceiveCount: see store.BlockedReceiveCount.
	blockedReceiveCount = store.BlockedReceiveCount
)

// PeekDue samples the messages of every queue whose peek is due: dead-letter queues (those of
// SQS redrive policies and those of EventBridge targets alike) every PeekDeadLetterInterval,
// opted-in source queues every PeekSourceInterval, and either at once when its last sample
// found it empty and it has messages now. It does nothing with Peek.Disabled. A dead-letter
// queue with a RUNNING or CANCELLING move task or selective redrive is skipped: messages held by
// a peek would dodge the move. A queue whose receive could cost a message its last delivery is
// paused (see receiveGuard).
func (c *Collector) PeekDue(ctx context.Context) error {
	dlqs := c.sampledDeadLetterARNs()
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
		// A selective redrive holds the messages it does not move until its scan ends: a sample
		// would see a part of the queue, and its receives would race the job's.
		jobs, err := c.store.RunnableSelectionJobs(ctx)
		if err != nil {
			c.warn(ctx, "collector: running selection jobs", "err", err)
			return err
		}
		for _, j := range jobs {
			moving[j.QueueID] = true
		}
	}
	now := c.now()
	var due []*watchedQueue
	kinds := make(map[*watchedQueue]store.SampleKind)
	for _, q := range c.watched() {
		kind, ok := c.peekKind(q, dlqs[q.arn])
		paused, never := "", false
		if ok {
			paused, never = c.receiveGuard(q)
		}
		if never {
			c.refuse(ctx, q, paused)
		}
		c.setPeekEnabled(ctx, q, ok && !never)
		c.setPeekPaused(ctx, q, paused)
		if !ok || paused != "" || moving[q.id] {
			continue
		}
		st := q.state()
		// A queue whose last sample found it empty is sampled as soon as the attribute loop
		// sees messages in it, not a whole interval later: for a DLQ, so that the alert about
		// its first failures can name them; for an opted-in source, so that its first sample
		// after a quiet spell shows what came. It costs one sample more at most per
		// interval: the sample after it, which finds messages, comes at the interval.
		filled := !st.peekedAt.IsZero() && st.peekedVisible == 0 && st.visible > 0
		if dueAt(st.peekedAt, now, c.peekInterval(kind), peekDueCheck) || filled {
			due = append(due, q)
			kinds[q] = kind
		}
	}
	c.loopIdle(store.RunPeek, due)
	if len(due) == 0 {
		return nil
	}
	c.runCycle(ctx, store.RunPeek, due, func(ctx context.Context, cy *cycle, q *watchedQueue) {
		c.peek(ctx, cy, q, kinds[q])
	})
	c.updateCost(ctx)
	return ctx.Err()
}

// peekKind says whether q is sampled and why. A queue with a RedrivePolicy of its own is a source
// even when it is also another queue's dead-letter queue (a tier): SQS moves its messages on
// after maxReceiveCount receives, toolq's included, so it is sampled only when opted in. A queue
// whose attributes were never read is not sampled: nothing tells a tier from a final DLQ yet.
func (c *Collector) peekKind(q *watchedQueue, deadLetter bool) (store.SampleKind, bool) {
	st := q.state()
	switch {
	case c.opts.Peek.Disabled || st.attributesAt.IsZero():
		return "", false
	case st.redrivePolicy != "":
		if c.optedIn(q.name) {
			return store.SampleSource, true
		}
		return "", false
	case deadLetter:
		return store.SampleDeadLetter, true
	case c.optedIn(q.name):
		return store.SampleSource, true
	}
	return "", false
}

// OptedIn reports whether the operator opted the source queue in (--peek-source): an exact
// name, or a prefix written with a trailing "*". A bare word is not a prefix, so that no queue
// is received from by accident. The actions ask it too: a selective redrive receives from a
// tier dead-letter queue only where sampling may.
func (c *Collector) OptedIn(name string) bool { return c.optedIn(name) }

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
	cad := c.cadence()
	if kind == store.SampleSource {
		return cad.PeekSource
	}
	return cad.PeekDeadLetter
}

// seenMessage is what the peeks know of one message they received.
type seenMessage struct {
	receives     int       // its ApproximateReceiveCount when last received, that receive included
	own          int       // of those, the dashboard's own since the message arrived in this queue
	firstReceive int64     // its ApproximateFirstReceiveTimestamp then, in Unix milliseconds
	at           time.Time // when it was last received
}

// receiveGuard says why q must not be received from now, or "" when it may be; never is true
// when that will not change while the queue's configuration stays. Only a queue with a
// RedrivePolicy can lose a message to a receive: SQS moves a message on once a receive would take
// its count past maxReceiveCount. toolq receives from such a queue only while every message it
// knows of
//
//   - keeps at least one delivery for its consumers after toolq's next receive (its count + 1 <
//     maxReceiveCount), and
//   - has had fewer than store.OwnReceiveLimit receives by toolq since it arrived: toolq's own
//     receives never bring a message within one receive of maxReceiveCount, so an idle message
//     is never moved on, nor left without a retry, by looks alone.
//
// Where it cannot know (the policy cannot be read, the endpoint does not report receive counts),
// or where maxReceiveCount is 2 or less (one receive would leave a message no retry), it does
// not receive at all.
//
// A pause ends only when the messages it protects are gone as far as toolq can tell: the queue
// is empty, or they showed up in the dead-letter queue. Consumers being busy is no such sign: a
// FIFO group blocked behind a failing head keeps the messages behind it, and a look after a
// guess would spend their tries. So a source that never empties is sampled until its messages
// have used toolq's limit, then shows its last sample with the reason it is paused.
func (c *Collector) receiveGuard(q *watchedQueue) (reason string, never bool) {
	st := q.state()
	if st.redrivePolicy == "" {
		return "", false
	}
	switch limit := store.OwnReceiveLimit(st.maxReceiveCount); {
	case st.maxReceiveCount == 0:
		return "not sampled: its RedrivePolicy cannot be read, so toolq cannot tell how many receives its messages have left", true
	case st.maxReceiveCount == 1:
		return "not sampled: maxReceiveCount is 1, so one receive by the dashboard would send every message to the dead-letter queue", true
	case limit == 0:
		return fmt.Sprintf("not sampled: maxReceiveCount is %d, so one receive by the dashboard would leave a message a single delivery, with no retry for its consumers", st.maxReceiveCount), true
	}
	if st.countless != "" {
		return st.countless, true
	}
	if !st.attributesAt.IsZero() && st.visible+st.inFlight+st.delayed == 0 {
		q.forgetSeen()
		return "", false
	}
	if id, worst := q.mostReceived(); worst+1 >= st.maxReceiveCount {
		own := q.ownReceivesOf(id)
		return fmt.Sprintf("paused: message %s has been received %d of %d times (consumers %d, toolq %d); another receive by toolq would leave it no delivery for its consumers",
			safetext.Line(id, 64), worst, st.maxReceiveCount, worst-own, own), false
	}
	limit := store.OwnReceiveLimit(st.maxReceiveCount)
	if id, own := q.mostOwnReceived(); own >= limit {
		return fmt.Sprintf("paused: toolq's receives of message %s since it arrived are %d, its limit (maxReceiveCount %d less two); another look would bring it within one receive of maxReceiveCount by toolq's receives alone. Sampling resumes when the queue is empty or its messages reach the dead-letter queue",
			safetext.Line(id, 64), own, st.maxReceiveCount), false
	}
	return "", false
}

// refuse records, once per queue, that an opted-in queue will not be sampled.
func (c *Collector) refuse(ctx context.Context, q *watchedQueue, reason string) {
	if !c.claimSkip(skipKey{op: "PeekRefused", queue: q}, forever) {
		return
	}
	cy := &cycle{kind: store.RunPeek}
	c.recordError(ctx, cy, opReceiveMessage, q, "PeekRefused", reason)
}

// setPeekEnabled records in the store whether q is sampled, when that changed.
func (c *Collector) setPeekEnabled(ctx context.Context, q *watchedQueue, enabled bool) {
	if !q.setPeekEnabled(enabled) {
		return
	}
	if err := c.store.SetPeekEnabled(ctx, q.id, enabled); err != nil {
		c.warn(ctx, "collector: set peek enabled", "queue", q.name, "err", err)
	}
}

// setPeekPaused records why sampling q is paused ("" when it is not), when that changed.
func (c *Collector) setPeekPaused(ctx context.Context, q *watchedQueue, reason string) {
	if !q.setPeekPaused(reason) {
		return
	}
	if reason != "" {
		c.log.Info("collector: sampling paused", "queue", q.name, "reason", reason)
	}
	if err := c.store.SetPeekPaused(ctx, q.id, reason); err != nil {
		c.warn(ctx, "collector: set peek paused", "queue", q.name, "err", err)
	}
}

// peekPass is what one pass over a queue took.
type peekPass struct {
	messages      []types.Message // distinct, in the order first received
	receives      int
	messagesTaken int
	capped        bool
	err           error
	// stopped says why the pass stopped early to protect the queue's messages; countless that
	// it was because the endpoint does not report receive counts.
	stopped   string
	countless bool
}

// complete reports whether the pass saw every message the queue held (approx before it began).
func (p peekPass) complete(approx int64) bool {
	return !p.capped && p.err == nil && p.stopped == "" && int64(len(p.messages)) >= approx
}

// peek runs one pass over q and stores it as a Sample.
func (c *Collector) peek(ctx context.Context, cy *cycle, q *watchedQueue, kind store.SampleKind) {
	st := q.state()
	fifo, maxRC, guarded := st.fifo, st.maxReceiveCount, st.redrivePolicy != ""
	approx, inFlight, err := c.peekDepth(ctx, cy, q, guarded, kind == store.SampleDeadLetter)
	if err != nil {
		cy.queueFailed(q.region.key)
		return
	}
	sample := store.Sample{QueueID: q.id, Kind: kind, At: c.now(), ApproxVisible: approx}
	var pass peekPass
	// An empty queue is recorded as such without a receive: it touches no message.
	if approx > 0 {
		pass = c.receivePass(ctx, cy, q, approx, maxRC, guarded)
	}
	sample.Seen = len(pass.messages)
	// Messages that arrived between the read and the pass make Seen exceed the count read:
	// the queue held at least what was seen, and "4 of about 1" would read as nonsense.
	sample.ApproxVisible = max(approx, int64(sample.Seen))
	sample.Receives = pass.receives
	sample.MessagesTaken = pass.messagesTaken
	sample.Capped = pass.capped
	switch {
	case pass.err != nil:
		sample.Error = safeMessage(pass.err)
		cy.queueFailed(q.region.key)
	case pass.stopped != "":
		sample.Error = pass.stopped
	}
	c.tel.peekReceives.WithLabelValues(q.name, q.region.key).Add(float64(pass.receives))

	own := q.noteSeen(pass, sample.At, approx, inFlight, maxSeen*c.opts.Peek.MaxMessages)
	q.setPeeked(sample.At, approx, pass.receives)
	if pass.stopped != "" {
		c.setPeekPaused(ctx, q, pass.stopped)
	}

	nearMax := 0
	if kind == store.SampleSource {
		nearMax = maxRC
	}
	msgs := make([]store.SampledMessage, 0, len(pass.messages))
	for _, m := range pass.messages {
		msgs = append(msgs, c.sampledMessage(q.id, m, own[aws.ToString(m.MessageId)], nearMax))
	}
	if kind == store.SampleDeadLetter {
		c.forgetMoved(msgs)
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

// peekDepth returns the messages q holds, visible and in flight, before a pass. A queue with a
// RedrivePolicy (guarded) is read now: the receive guard must know what is in flight at the
// pass. Any other queue's depth is the attribute loop's while that loop keeps to the queue's
// cadence: a final dead-letter queue loses nothing to a count some seconds old (the pass
// receives what is there, and the sample counts at least what it saw), and an empty one is
// sampled without a call. When the attribute loop has not read it lately, the pass reads it
// itself, and that read is the queue's attribute read, its depth sample stored.
func (c *Collector) peekDepth(ctx context.Context, cy *cycle, q *watchedQueue, guarded, deadLetter bool) (visible, inFlight int64, err error) {
	if guarded {
		attrs, err := c.readAttributes(ctx, cy, q, types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
		if err != nil {
			return 0, 0, err
		}
		return attrInt(attrs, "ApproximateNumberOfMessages"), attrInt(attrs, "ApproximateNumberOfMessagesNotVisible"), nil
	}
	st, now := q.state(), c.now()
	// The attribute loop reads a queue at the first of its ticks after the queue is due.
	if st.read && now.Sub(st.attributesAt) <= attributesEvery(st, now, c.cadence(), deadLetter)+c.opts.AttributesInterval {
		return st.visible, st.inFlight, nil
	}
	attrs, err := c.readAttributes(ctx, cy, q, types.QueueAttributeNameAll)
	if err != nil {
		return 0, 0, err
	}
	c.applyAttributes(ctx, cy, q, attrs, now)
	return attrInt(attrs, "ApproximateNumberOfMessages"), attrInt(attrs, "ApproximateNumberOfMessagesNotVisible"), nil
}

// maxSeen bounds what a queue's peeks remember (watchedQueue.noteSeen), in multiples of
// Peek.MaxMessages.
const maxSeen = 4

// forgetMoved drops the messages a dead-letter queue's sample found there from their sources'
// memory: they left the source, so a source paused to protect them may be sampled again.
func (c *Collector) forgetMoved(msgs []store.SampledMessage) {
	for _, m := range msgs {
		if m.DeadLetterSourceARN == "" {
			continue
		}
		c.mu.Lock()
		src := c.queues[m.DeadLetterSourceARN]
		c.mu.Unlock()
		if src != nil {
			src.forgetMessage(m.MessageID)
		}
	}
}

// resumeSeen rebuilds what the peeks knew of a queue's messages from its newest stored sample, so
// that a restart neither forgets a message it must protect nor counts old receives anew.
func (c *Collector) resumeSeen(ctx context.Context, queue string, sample store.Sample) map[string]seenMessage {
	msgs, err := c.store.SampleMessages(ctx, sample.ID, store.MessageFilter{})
	if err != nil {
		c.warn(ctx, "collector: load sampled messages", "queue", queue, "err", err)
		return nil
	}
	seen := make(map[string]seenMessage, len(msgs))
	for _, m := range msgs {
		seen[m.MessageID] = seenMessage{
			receives: m.ReceiveCount + m.OwnReceives, own: m.OwnReceives,
			firstReceive: m.FirstReceivedAt.UnixMilli(), at: sample.At,
		}
		if m.FirstReceivedAt.IsZero() {
			seen[m.MessageID] = seenMessage{receives: m.ReceiveCount + m.OwnReceives, own: m.OwnReceives, at: sample.At}
		}
	}
	return seen
}

// consumersFailed says whether a message just received shows receives that were not toolq's:
// its consumers received it and did not delete it. toolq's are those its earlier passes made of
// it (q's memory) and this one.
func consumersFailed(q *watchedQueue, m types.Message) bool {
	n, ok := receiveCount(m)
	return !ok || n > q.ownReceivesOf(aws.ToString(m.MessageId))+1
}

// receiveCount returns a received message's ApproximateReceiveCount, and whether the endpoint
// gave it.
func receiveCount(m types.Message) (int, bool) {
	v, ok := m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// receivePass receives from q until it is empty, the cap is reached, or a receive returns only
// messages already seen, then hands every message it took back at once (visibility 0). It never
// deletes. The hand-back runs even when ctx is cancelled or the pass panics. On a queue with a
// RedrivePolicy (guarded) it stops as soon as a receive shows a message left with no delivery
// for its consumers, or an endpoint that does not say how often messages were received: the
// next receive could move messages on, and toolq cannot tell which.
func (c *Collector) receivePass(ctx context.Context, cy *cycle, q *watchedQueue, approx int64, maxRC int, guarded bool) (pass peekPass) {
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
	// A guarded pass cannot know a message's receive count before it receives it, and a receive
	// of a message its consumers left one delivery short uses that delivery. So on a standard
	// queue it receives one message first and grows its batches (2, 4, 8, 10) only while what
	// it took shows no consumer failure; a message its consumers failed brings it back to one
	// at a time. The pass stops at the first message left with no delivery: it spends one such
	// at most. A FIFO queue keeps its batches of ten: only a group's head can have failed (the
	// messages behind it were never delivered), a batch is mostly one group's, and a smaller
	// first batch would lock its group and leave the rest of it unseen.
	cautious := guarded && !q.state().fifo
	batch := receiveBatch
	if cautious {
		batch = 1
	}
	for pass.messagesTaken < maxMessages && ctx.Err() == nil && c.now().Before(stopAt) {
		var out *sqs.ReceiveMessageOutput
		err := c.call(ctx, cy, q.region, opReceiveMessage, q, func(ctx context.Context) error {
			var err error
			out, err = q.region.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
				QueueUrl:            aws.String(q.url),
				MaxNumberOfMessages: int32(min(batch, maxMessages-pass.messagesTaken)),
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
		if cautious {
			batch = min(batch*2, receiveBatch)
			if slices.ContainsFunc(out.Messages, func(m types.Message) bool { return consumersFailed(q, m) }) {
				batch = 1
			}
		}
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
			if guarded && pass.stopped == "" {
				pass.stopped, pass.countless = exhausted(m, maxRC)
			}
		}
		if pass.stopped != "" {
			return pass
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

// exhausted says why a message just received from a queue with a RedrivePolicy ends the pass:
// the endpoint does not report its receive count, or this receive used its consumers' last
// delivery. "" when neither.
// countless is true for the first reason, which lasts as long as the process talks to that
// endpoint.
func exhausted(m types.Message, maxRC int) (reason string, countless bool) {
	n, ok := receiveCount(m)
	switch {
	case !ok:
		return "paused: the endpoint does not report ApproximateReceiveCount, so toolq cannot tell how many receives messages have left", true
	case n >= maxRC:
		return fmt.Sprintf("paused: message %s has been received %d of %d times, the last by toolq; sampling stopped so that no other message loses a delivery",
			safetext.Line(aws.ToString(m.MessageId), 64), n, maxRC), false
	}
	return "", false
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
		err := c.call(ctx, cy, q.region, opChangeMessageVisibilityBatch, q, func(ctx context.Context) error {
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
			c.recordError(ctx, cy, opChangeMessageVisibilityBatch, q, safetext.Store(aws.ToString(f.Code), 100),
				safetext.Store("message not released: "+aws.ToString(f.Message), awscalls.MaxMessage))
		}
	}
}
