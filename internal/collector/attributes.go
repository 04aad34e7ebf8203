package collector

import (
	"context"

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
	cy := c.startCycle(ctx, store.RunAttributes)
	defer c.finish(ctx, cy)
	queues := c.watched()
	cy.queues.Store(int64(len(queues)))
	for _, r := range c.regions {
		cy.cover(r.Name, 0)
	}
	for _, q := range queues {
		cy.cover(q.region.Name, 1)
	}
	c.each(ctx, cy, queues, func(ctx context.Context, q *watchedQueue) {
		attrs, err := c.readAttributes(ctx, cy, q, types.QueueAttributeNameAll)
		if err != nil {
			cy.queueFailed(q.region.Name)
			return
		}
		c.applyAttributes(ctx, cy, q, attrs, c.now())
	})
	c.updateCost(ctx)
	c.pub.Publish(events.Event{Kind: events.QueuesChanged, At: c.now()})
	return ctx.Err()
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
