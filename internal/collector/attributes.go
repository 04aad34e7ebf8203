package collector

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// CycleAttributes reads every watched queue's attributes (GetQueueAttributes All, Options.
// Concurrency at a time) and stores them with a depth sample. A queue that no longer exists is
// marked gone; any other failure is recorded for that queue and the cycle goes on.
func (c *Collector) CycleAttributes(ctx context.Context) error {
	return c.cycleAttributes(ctx, c.watched())
}

// cycleAttributes reads the attributes of queues in one recorded cycle.
func (c *Collector) cycleAttributes(ctx context.Context, queues []*watchedQueue) error {
	cy := c.startCycle(ctx, store.RunAttributes)
	defer c.finish(ctx, cy)
	cy.queues.Store(int64(len(queues)))
	for _, r := range c.regions {
		cy.cover(r.key, 0)
	}
	for _, q := range queues {
		cy.cover(q.region.key, 1)
	}
	c.each(ctx, cy, queues, func(ctx context.Context, q *watchedQueue) {
		attrs, err := c.readAttributes(ctx, cy, q, types.QueueAttributeNameAll)
		if err != nil {
			cy.queueFailed(q.region.key)
			return
		}
		c.applyAttributes(ctx, cy, q, attrs, c.now())
	})
	c.updateCost(ctx)
	c.pub.Publish(events.Event{Kind: events.QueuesChanged, At: c.now()})
	return ctx.Err()
}

// AttributesDue reads the attributes of the queues that are due (Run's attribute loop): every
// AttributesInterval a queue that holds messages or whose depth changed within
// QuietAttributesInterval, every QuietAttributesInterval an empty queue whose depth has not
// changed for as long, every QuietDeadLetterInterval a dead-letter queue whose depth has not
// changed for as long; and at once a queue this process has not read yet. Each check is a
// recorded cycle, also when no queue was due: the data is then as fresh as the cadences promise.
func (c *Collector) AttributesDue(ctx context.Context) error {
	cad := c.cadence()
	now := c.now()
	dlqs := c.sampledDeadLetterARNs()
	var due []*watchedQueue
	for _, q := range c.watched() {
		st := q.state()
		// A queue resumed from the store is read at once: a restart's first cycle is a full one.
		if !st.read || dueAt(st.attributesAt, now, attributesEvery(st, now, cad, dlqs[q.arn]), c.opts.AttributesInterval) {
			due = append(due, q)
		}
	}
	return c.cycleAttributes(ctx, due)
}

// attributesEvery is how often a queue in state st is read at now; deadLetter says it is a
// dead-letter queue (of a redrive policy or an EventBridge target).
func attributesEvery(st queueState, now time.Time, cad store.Cadences, deadLetter bool) time.Duration {
	switch {
	case !quiet(st, now, cad, deadLetter):
		return cad.Attributes
	case deadLetter:
		return cad.QuietDeadLetter
	}
	return cad.QuietAttributes
}

// quiet reports whether a queue is read at its quiet cadence: its depth has not changed for
// QuietAttributes, and it is empty or a dead-letter queue. What a dead-letter queue holds
// matters less than that it grows: a quiet one is read as often as its next message must be
// seen, full or empty.
func quiet(st queueState, now time.Time, cad store.Cadences, deadLetter bool) bool {
	return now.Sub(st.changedAt) >= cad.QuietAttributes && (deadLetter || st.visible+st.inFlight+st.delayed == 0)
}

// readAttributes calls GetQueueAttributes for q and marks the queue gone when SQS says it does
// not exist.
func (c *Collector) readAttributes(ctx context.Context, cy *cycle, q *watchedQueue, names ...types.QueueAttributeName) (map[string]string, error) {
	var out *sqs.GetQueueAttributesOutput
	err := c.call(ctx, cy, q.region, opGetQueueAttributes, q, func(ctx context.Context) error {
		var err error
		out, err = q.region.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl:       aws.String(q.url),
			AttributeNames: names,
		})
		return err
	})
	if err != nil {
		if awscalls.QueueMissing(err) {
			c.markGone(ctx, q)
		}
		return nil, err
	}
	return out.Attributes, nil
}
