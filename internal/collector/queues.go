package collector

import (
	"context"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// watchedQueue is a queue the collector samples. Its identity is set once, before the queue is
// watched, and read freely. Everything else belongs to the queue and is reached only through
// its methods below, under its own mutex: every loop works on the same queue at once (the
// attribute cycle writes the depth while the peek reads it, a dead-letter queue's peek forgets
// messages of its sources), and one lock per queue keeps each read a consistent snapshot without
// making the loops wait for one another's queues. A mutex rather than an owner goroutine: the
// loops need a copy of a few fields at a time, which a channel round trip would only slow. The
// lock is held for a copy or an update only, never across an AWS call, a store write or
// Collector.mu.
//
// Because the queue holds all that is known of it, including the memories that grow (messages
// seen, move tasks, failures, skips), a queue that stops being watched takes them all with it:
// once markGone drops it from the collector's maps, nothing else refers to it.
type watchedQueue struct {
	id     int64
	region *region
	name   string
	url    string
	arn    string

	mu sync.Mutex
	st queueState
	// seen is what the peeks know of the messages they received, by message id.
	seen map[string]seenMessage
	// tasks are the move tasks as last stored, among the ten newest SQS lists: a poll writes
	// only what changed.
	tasks map[taskKey]store.MoveTask
	// failures are when each kind of failure of the queue was last stored (see errorRepeat).
	failures failureMemory
	// skips are the operations not to call on the queue before a time, by operation.
	skips skipMemory[string]
}

// queueState is what the loops learn about a queue as they go. A copy of it (watchedQueue.state)
// is one consistent snapshot.
type queueState struct {
	fifo         bool
	visible      int64 // ApproximateNumberOfMessages of the newest attribute sample
	inFlight     int64 // ApproximateNumberOfMessagesNotVisible, likewise
	delayed      int64
	attributesAt time.Time
	// read: this process has read the queue's attributes (attributesAt may come from the store,
	// from an earlier run).
	read bool
	// changedAt is when the depth (visible, in flight, delayed) was last read different from
	// the read before: a queue that is empty and unchanged for a while is read less often.
	changedAt time.Time
	// heldMessages: some attribute read since the last CloudWatch ask for the age of the oldest
	// message showed messages, so that age is worth asking.
	heldMessages bool
	// moveCheck: a dead-letter queue's depth fell without a move task toolq knows of (one
	// started from the console, say): its move tasks are polled at once.
	moveCheck           bool
	busyAt              time.Time // the newest attribute sample with messages in flight
	deadLetterTargetARN string
	maxReceiveCount     int
	// redrivePolicy is the queue's own RedrivePolicy attribute as read: a queue that has one is
	// a source whatever else it is (a tier of another queue's DLQ), and a look at it spends its
	// messages' receives. maxReceiveCount is 0 when it cannot be read.
	redrivePolicy     string
	visibilityTimeout time.Duration
	listedSources     int // what ListDeadLetterSourceQueues returned, when the endpoint has it
	backfilled        bool
	metricsAskedUntil time.Time // end of the last CloudWatch window of the age of the oldest message answered
	// countersAskedUntil is the end of the last CloudWatch window of the other metrics answered
	// (the counts, message size, FIFO groups in flight), which are asked less often.
	countersAskedUntil time.Time
	peekEnabled        bool
	peekedAt           time.Time // the newest sample's time, from the store on adoption
	peekedVisible      int64     // ApproxVisible of the newest sample
	peekPaused         string    // why sampling is paused, as stored
	// countless is why the queue is not sampled when its endpoint does not report receive
	// counts while it has a RedrivePolicy ("" otherwise).
	countless    string
	movePolledAt time.Time
	// peekReceives is what the newest pass spent in receives, for the cost estimate.
	peekReceives int
}

// newWatchedQueue returns a queue with what is known of it before it is watched: st and seen
// come from the store or from its first attributes.
func newWatchedQueue(r *region, id int64, name, url, arn string, st queueState, seen map[string]seenMessage) *watchedQueue {
	return &watchedQueue{id: id, region: r, name: name, url: url, arn: arn, st: st, seen: seen}
}

// state returns a snapshot of what the loops know of q.
func (q *watchedQueue) state() queueState {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.st
}

// setAttributes keeps what one GetQueueAttributes answer says of q (its depth in sample, its
// redrive policy already parsed) for the other loops.
func (q *watchedQueue) setAttributes(attrs map[string]string, policy redrivePolicy, sample store.AttributeSample, movesKnown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	first := q.st.attributesAt.IsZero()
	q.st.read = true
	if first || sample.Visible != q.st.visible || sample.InFlight != q.st.inFlight || sample.Delayed != q.st.delayed {
		q.st.changedAt = sample.At
	}
	if !first && sample.Visible < q.st.visible && !movesKnown {
		q.st.moveCheck = true
	}
	if sample.Visible+sample.InFlight > 0 {
		q.st.heldMessages = true
	}
	q.st.visible, q.st.inFlight, q.st.delayed = sample.Visible, sample.InFlight, sample.Delayed
	q.st.attributesAt = sample.At
	if sample.InFlight > 0 {
		q.st.busyAt = sample.At
	}
	q.st.deadLetterTargetARN = policy.DeadLetterTargetARN
	q.st.maxReceiveCount = policy.MaxReceiveCount
	q.st.redrivePolicy = attrs["RedrivePolicy"]
	if vt, ok := visibilityTimeout(attrs); ok {
		q.st.visibilityTimeout = vt
	}
	if v, ok := attrs["FifoQueue"]; ok {
		q.st.fifo = v == "true"
	}
}

// visibilityTimeout reads a queue's VisibilityTimeout attribute.
func visibilityTimeout(attrs map[string]string) (time.Duration, bool) {
	v, err := strconv.Atoi(attrs["VisibilityTimeout"])
	if err != nil || v < 0 {
		return 0, false
	}
	return time.Duration(v) * time.Second, true
}

// setListedSources keeps how many sources ListDeadLetterSourceQueues named for q.
func (q *watchedQueue) setListedSources(n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st.listedSources = n
}

// setMetricsAskedUntil keeps the end of the last CloudWatch window answered for q, of the age of
// the oldest message (age) or of the other metrics.
func (q *watchedQueue) setMetricsAskedUntil(end time.Time, age bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if age {
		q.st.metricsAskedUntil = end
		q.st.heldMessages = q.st.visible+q.st.inFlight > 0
	} else {
		q.st.countersAskedUntil = end
	}
}

// setBackfilled records that q's one-time CloudWatch backfill is stored.
func (q *watchedQueue) setBackfilled() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st.backfilled = true
}

// setMovePolledAt records when q's move tasks were last asked for.
func (q *watchedQueue) setMovePolledAt(at time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st.movePolledAt = at
	q.st.moveCheck = false
}

// setPeekEnabled records whether q is sampled and reports whether that changed.
func (q *watchedQueue) setPeekEnabled(enabled bool) (changed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	changed = q.st.peekEnabled != enabled
	q.st.peekEnabled = enabled
	return changed
}

// setPeekPaused records why sampling q is paused ("" when it is not), and reports whether the
// reason changed.
func (q *watchedQueue) setPeekPaused(reason string) (changed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	changed = q.st.peekPaused != reason
	q.st.peekPaused = reason
	return changed
}

// setPeeked records the time, the depth read and the receives of q's newest pass.
func (q *watchedQueue) setPeeked(at time.Time, visible int64, receives int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.st.peekedAt, q.st.peekedVisible, q.st.peekReceives = at, visible, receives
}

// mostReceived returns the message the peeks know of with the highest receive count (the
// lowest id among equals, so that the same message is named every time), or receives -1 when
// they know of none.
func (q *watchedQueue) mostReceived() (id string, receives int) {
	return q.most(func(m seenMessage) int { return m.receives })
}

// ownReceivesOf is how often toolq received the message id since it arrived, of what the
// peeks know (0 for a message they do not).
func (q *watchedQueue) ownReceivesOf(id string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.seen[id].own
}

// mostOwnReceived returns the message the peeks know of that toolq itself received most often
// since it arrived, as mostReceived does.
func (q *watchedQueue) mostOwnReceived() (id string, receives int) {
	return q.most(func(m seenMessage) int { return m.own })
}

// most returns the known message with the highest count, the lowest id among equals, or -1.
func (q *watchedQueue) most(count func(seenMessage) int) (id string, n int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n = -1
	for mid, m := range q.seen {
		if c := count(m); c > n || c == n && mid < id {
			id, n = mid, c
		}
	}
	return id, n
}

// forgetSeen drops what the peeks know of q's messages: none of them needs protecting any more.
func (q *watchedQueue) forgetSeen() {
	q.mu.Lock()
	defer q.mu.Unlock()
	clear(q.seen)
}

// forgetMessage drops one message from what the peeks know of q: it left the queue (a
// dead-letter queue's sample found it there).
func (q *watchedQueue) forgetMessage(id string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.seen, id)
}

// noteSeen records the messages a pass received in q.seen and returns, by message id, how many
// of each one's receives are the dashboard's own since it arrived in the queue (this pass's
// included). A message arrived anew when its receive count went down since toolq last saw it or
// its first-receive time changed: whatever toolq spent on it before belongs to an earlier stay
// and is not subtracted. A redrive is no such sign: SQS gives the messages it moves new ids, so
// one seen again under its id after a redrive is one the task left in place (a cancelled task,
// say), and toolq's earlier receives of it still count. A complete pass over a queue with nothing in flight (inFlight, read before it)
// forgets the messages it did not see that toolq last saw more than a visibility timeout ago:
// they would have been visible again, so they are gone; one in a consumer's hands is not. At
// most limit messages are kept, the newest seen.
func (q *watchedQueue) noteSeen(pass peekPass, at time.Time, approx, inFlight int64, limit int) map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.seen == nil {
		q.seen = make(map[string]seenMessage)
	}
	if pass.countless {
		q.st.countless = pass.stopped
	}
	own := make(map[string]int, len(pass.messages))
	for _, m := range pass.messages {
		id := aws.ToString(m.MessageId)
		receives, _ := receiveCount(m)
		first := attrInt(m.Attributes, string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp))
		prev, known := q.seen[id]
		anew := !known || receives < prev.receives+1 ||
			(first != 0 && prev.firstReceive != 0 && first != prev.firstReceive)
		n := 1
		if !anew {
			n = prev.own + 1
		}
		if receives > 0 {
			n = min(n, receives)
		}
		q.seen[id] = seenMessage{receives: receives, own: n, firstReceive: first, at: at}
		own[id] = n
	}
	if pass.complete(approx) && inFlight == 0 {
		for id, m := range q.seen {
			if _, inPass := own[id]; !inPass && at.Sub(m.at) > q.st.visibilityTimeout {
				delete(q.seen, id)
			}
		}
	}
	if len(q.seen) > limit {
		ids := slices.SortedFunc(maps.Keys(q.seen), func(a, b string) int { return q.seen[a].at.Compare(q.seen[b].at) })
		for _, id := range ids[:len(ids)-limit] {
			delete(q.seen, id)
		}
	}
	return own
}

// task returns the move task k of q as last stored, if it is cached.
func (q *watchedQueue) task(k taskKey) (store.MoveTask, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	t, ok := q.tasks[k]
	return t, ok
}

// keepTask caches the move task k of q as just stored.
func (q *watchedQueue) keepTask(k taskKey, t store.MoveTask) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tasks == nil {
		q.tasks = make(map[taskKey]store.MoveTask)
	}
	q.tasks[k] = t
}

// runningTask reports whether a move task of q was RUNNING or CANCELLING when last stored.
func (q *watchedQueue) runningTask() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, t := range q.tasks {
		if t.Running() {
			return true
		}
	}
	return false
}

// keepListedTasks forgets the cached move tasks of q that are not in listed, the newest poll:
// out of SQS's ten, nothing more will change about them.
func (q *watchedQueue) keepListedTasks(listed map[taskKey]bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	maps.DeleteFunc(q.tasks, func(k taskKey, _ store.MoveTask) bool { return !listed[k] })
}

// failedAgain reports whether a failure of kind k at `at` repeats one of q stored less than
// errorRepeat before, and remembers it as stored otherwise (failureMemory.repeat).
func (q *watchedQueue) failedAgain(k errorKey, at time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.failures == nil {
		q.failures = make(failureMemory)
	}
	return q.failures.repeat(k, at)
}

// skipping reports whether op is not to be called on q at now.
func (q *watchedQueue) skipping(op string, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.skips.active(op, now)
}

// claimSkip marks op as not to be called on q before until, and reports whether it was not
// marked at now already.
func (q *watchedQueue) claimSkip(op string, until, now time.Time) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.skips == nil {
		q.skips = make(skipMemory[string])
	}
	return q.skips.claim(op, until, now)
}

// skip marks op as not to be called on q before until.
func (q *watchedQueue) skip(op string, until time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.skips == nil {
		q.skips = make(skipMemory[string])
	}
	q.skips[op] = until
}

// forgetExpired drops q's failures and skips that no longer change anything at now.
func (q *watchedQueue) forgetExpired(now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.failures.expire(now)
	q.skips.expire(now)
}

// watched returns the watched queues ordered by region and name, so that every cycle visits
// them in the same order.
func (c *Collector) watched() []*watchedQueue {
	c.mu.Lock()
	qs := make([]*watchedQueue, 0, len(c.queues))
	for _, q := range c.queues {
		qs = append(qs, q)
	}
	c.mu.Unlock()
	slices.SortFunc(qs, func(a, b *watchedQueue) int {
		if a.region.key != b.region.key {
			return strings.Compare(a.region.key, b.region.key)
		}
		return strings.Compare(a.name, b.name)
	})
	return qs
}

// deadLetterARNs returns the ARNs of the watched queues that are dead-letter queues: named by a
// watched queue's RedrivePolicy, or given sources by ListDeadLetterSourceQueues.
func (c *Collector) deadLetterARNs() map[string]bool {
	dlqs := make(map[string]bool)
	for _, q := range c.watched() {
		st := q.state()
		if st.deadLetterTargetARN != "" {
			dlqs[st.deadLetterTargetARN] = true
		}
		if st.listedSources > 0 {
			dlqs[q.arn] = true
		}
	}
	return dlqs
}

// urlKey finds a watched queue by region and URL.
type urlKey struct{ region, url string }

// markGone records that a watched queue no longer exists and stops watching it; its history
// stays in the store, and what the collector knew of it goes with the queue (watchedQueue).
// Two loops may find out at once: only the first records it.
func (c *Collector) markGone(ctx context.Context, q *watchedQueue) {
	c.mu.Lock()
	_, watched := c.queues[q.arn]
	delete(c.queues, q.arn)
	delete(c.urls, urlKey{q.region.key, q.url})
	c.mu.Unlock()
	if watched {
		c.storeGone(ctx, q)
		// Its series would otherwise stay in /metrics for as long as the process runs.
		c.tel.peekReceives.DeleteLabelValues(q.name, q.region.key)
	}
}

// storeGone records in the store that q disappeared.
func (c *Collector) storeGone(ctx context.Context, q *watchedQueue) {
	if err := c.store.MarkQueueGone(ctx, q.id, c.now()); err != nil {
		c.warn(ctx, "collector: mark queue gone", "queue", q.name, "err", err)
	}
	c.log.Info("collector: queue gone", "queue", q.name, "region", q.region.key)
	c.pub.Publish(events.Event{Kind: events.QueuesChanged, QueueID: q.id, At: c.now()})
}

// applyAttributes stores one GetQueueAttributes answer of q, with its redrive policy parsed and
// its depth sample, and keeps what the other loops need in memory.
func (c *Collector) applyAttributes(ctx context.Context, cy *cycle, q *watchedQueue, attrs map[string]string, at time.Time) {
	policy := parseRedrivePolicy(attrs["RedrivePolicy"])
	sample := store.AttributeSample{
		QueueID:  q.id,
		At:       at,
		Visible:  attrInt(attrs, "ApproximateNumberOfMessages"),
		InFlight: attrInt(attrs, "ApproximateNumberOfMessagesNotVisible"),
		Delayed:  attrInt(attrs, "ApproximateNumberOfMessagesDelayed"),
	}
	q.setAttributes(attrs, policy, sample, q.runningTask())
	if err := c.store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: q.id, At: at, Attributes: attrs, DeadLetterTargetARN: policy.DeadLetterTargetARN, MaxReceiveCount: policy.MaxReceiveCount, Depth: sample}); err != nil {
		c.storeFailed(ctx, cy, "SaveQueueAttributes", q, err)
	}
}

// attrInt reads a numeric attribute; a missing or malformed one reads 0.
func attrInt(attrs map[string]string, name string) int64 {
	n, err := strconv.ParseInt(attrs[name], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// redrivePolicy is a queue's RedrivePolicy attribute.
type redrivePolicy struct {
	DeadLetterTargetARN string
	MaxReceiveCount     int
}

// parseRedrivePolicy reads a RedrivePolicy, in which maxReceiveCount arrives as a number or a
// string depending on who set it. Anything unreadable reads as no policy: the attribute is
// stored verbatim anyway, so nothing is lost.
func parseRedrivePolicy(s string) redrivePolicy {
	if s == "" {
		return redrivePolicy{}
	}
	var raw struct {
		DeadLetterTargetARN string          `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return redrivePolicy{}
	}
	p := redrivePolicy{DeadLetterTargetARN: raw.DeadLetterTargetARN}
	var n json.Number
	var str string
	switch {
	case json.Unmarshal(raw.MaxReceiveCount, &n) == nil:
		if v, err := n.Int64(); err == nil && v > 0 && v <= 1000 {
			p.MaxReceiveCount = int(v)
		}
	case json.Unmarshal(raw.MaxReceiveCount, &str) == nil:
		if v, err := strconv.Atoi(strings.TrimSpace(str)); err == nil && v > 0 && v <= 1000 {
			p.MaxReceiveCount = v
		}
	}
	return p
}

// queueNameFromURL returns the last path segment of a queue URL.
func queueNameFromURL(u string) string {
	if parsed, err := url.Parse(u); err == nil && parsed.Path != "" {
		u = parsed.Path
	}
	u = strings.TrimRight(u, "/")
	if i := strings.LastIndexByte(u, '/'); i >= 0 {
		return u[i+1:]
	}
	return u
}

// accountFromURL returns the account segment of a queue URL (https://host/ACCOUNT/NAME).
func accountFromURL(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return ""
	}
	parts := strings.Split(strings.Trim(parsed.Path, "/"), "/")
	if len(parts) < 2 {
		return ""
	}
	return parts[len(parts)-2]
}

// sourceARNFromURL derives the ARN of a dead-letter source queue from its URL. Sources share
// the partition and region of their dead-letter queue (SQS requires it), so the DLQ's ARN
// supplies what the URL does not say.
func sourceARNFromURL(dlqARN, sourceURL string) string {
	a, err := arn.ParseQueue(dlqARN)
	if err != nil {
		return ""
	}
	a.Name = queueNameFromURL(sourceURL)
	if acct := accountFromURL(sourceURL); acct != "" {
		a.Account = acct
	}
	return a.String()
}
