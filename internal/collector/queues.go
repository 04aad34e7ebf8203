package collector

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// watchedQueue is a queue the collector samples. Identity fields are set once; the others are
// guarded by Collector.mu.
type watchedQueue struct {
	id     int64
	region *region
	name   string
	url    string
	arn    string

	fifo                bool
	visible             int64 // ApproximateNumberOfMessages of the newest attribute sample
	inFlight            int64 // ApproximateNumberOfMessagesNotVisible, likewise
	delayed             int64
	attributesAt        time.Time
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
	metricsAskedUntil time.Time // end of the last regular CloudWatch window answered
	peekEnabled       bool
	peekedAt          time.Time // the newest sample's time, from the store on adoption
	peekedVisible     int64     // ApproxVisible of the newest sample
	peekPaused        string    // why sampling is paused, as stored
	movePolledAt      time.Time
	pausedAt          time.Time // when the current pause began

	// peekMu guards seen: the queue's own peek writes it, and a DLQ's peek forgets the messages
	// it finds moved there from this queue.
	peekMu sync.Mutex
	// seen is what the peeks know of the messages they received, by message id.
	seen map[string]seenMessage
	// countless is why the queue is not sampled when its endpoint does not report receive
	// counts while it has a RedrivePolicy ("" otherwise).
	countless string
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
		if a.region.Name != b.region.Name {
			return strings.Compare(a.region.Name, b.region.Name)
		}
		return strings.Compare(a.name, b.name)
	})
	return qs
}

// deadLetterARNs returns the ARNs of the watched queues that are dead-letter queues: named by a
// watched queue's RedrivePolicy, or given sources by ListDeadLetterSourceQueues.
func (c *Collector) deadLetterARNs() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dlqs := make(map[string]bool)
	for _, q := range c.queues {
		if q.deadLetterTargetARN != "" {
			dlqs[q.deadLetterTargetARN] = true
		}
		if q.listedSources > 0 {
			dlqs[q.arn] = true
		}
	}
	return dlqs
}

// urlKey finds a watched queue by region and URL.
type urlKey struct{ region, url string }

// markGone records that a watched queue no longer exists and stops watching it; its history
// stays. Two loops may find out at once: only the first records it.
func (c *Collector) markGone(ctx context.Context, q *watchedQueue) {
	c.mu.Lock()
	_, watched := c.queues[q.arn]
	delete(c.queues, q.arn)
	delete(c.urls, urlKey{q.region.Name, q.url})
	c.mu.Unlock()
	if watched {
		c.storeGone(ctx, q)
	}
}

// storeGone records in the store that q disappeared.
func (c *Collector) storeGone(ctx context.Context, q *watchedQueue) {
	if err := c.store.MarkQueueGone(ctx, q.id, c.now()); err != nil {
		c.warn(ctx, "collector: mark queue gone", "queue", q.name, "err", err)
	}
	c.log.Info("collector: queue gone", "queue", q.name, "region", q.region.Name)
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
	c.mu.Lock()
	q.visible, q.inFlight, q.delayed = sample.Visible, sample.InFlight, sample.Delayed
	q.attributesAt = at
	if sample.InFlight > 0 {
		q.busyAt = at
	}
	q.deadLetterTargetARN = policy.DeadLetterTargetARN
	q.maxReceiveCount = policy.MaxReceiveCount
	q.redrivePolicy = attrs["RedrivePolicy"]
	if v, err := strconv.Atoi(attrs["VisibilityTimeout"]); err == nil && v >= 0 {
		q.visibilityTimeout = time.Duration(v) * time.Second
	}
	if v, ok := attrs["FifoQueue"]; ok {
		q.fifo = v == "true"
	}
	c.mu.Unlock()
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
