package collector

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// taskKey identifies a move task: SQS gives the handle only while the task runs.
type taskKey struct {
	sourceARN string
	startedAt int64 // Unix milliseconds
}

// PollMoveTasks lists the move tasks of every dead-letter queue that is due: every
// MoveTasksInterval, at once when its depth fell without a task toolq knows of (one started from
// the console, say), and every MoveTasksRunningInterval while one of its tasks is RUNNING or
// CANCELLING (per the store, which also holds the tasks the actions just started). Each task is
// stored; a change of status or counts publishes MoveTasksChanged. An endpoint without the
// operation is backed off, and a denial recorded once per queue and left alone for a while.
func (c *Collector) PollMoveTasks(ctx context.Context) error {
	running, err := c.store.RunningMoveTasks(ctx)
	if err != nil {
		return err
	}
	hot := make(map[int64]bool)
	for _, t := range running {
		hot[t.QueueID] = true
	}
	dlqs := c.deadLetterARNs()
	now := c.now()
	idle := c.cadence().MoveTasks
	var due []*watchedQueue
	for _, q := range c.watched() {
		if !dlqs[q.arn] && !hot[q.id] {
			continue
		}
		if c.skipping(skipKey{region: q.region.key, op: opListMessageMoveTasks, queue: q}) {
			continue
		}
		st := q.state()
		every := idle
		if hot[q.id] {
			every = c.opts.MoveTasksRunningInterval
		}
		if st.moveCheck || dueAt(st.movePolledAt, now, every, c.opts.MoveTasksRunningInterval) {
			due = append(due, q)
		}
	}
	c.loopIdle(store.RunMoveTasks, due)
	if len(due) == 0 {
		return nil
	}
	c.runCycle(ctx, store.RunMoveTasks, due, c.pollMoveTasks)
	return ctx.Err()
}

func (c *Collector) pollMoveTasks(ctx context.Context, cy *cycle, q *watchedQueue) {
	q.setMovePolledAt(c.now())
	k := skipKey{region: q.region.key, op: opListMessageMoveTasks, queue: q}
	var out *sqs.ListMessageMoveTasksOutput
	err := c.call(ctx, cy, q.region, opListMessageMoveTasks, q, func(ctx context.Context) error {
		var err error
		out, err = q.region.SQS.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{
			SourceArn:  aws.String(q.arn),
			MaxResults: aws.Int32(10),
		})
		return err
	}, c.recordOnce(k))
	if err != nil {
		cy.queueFailed(q.region.key)
		if awscalls.QueueMissing(err) {
			c.markGone(ctx, q)
		}
		return
	}
	changed := false
	now := c.now()
	listed := make(map[taskKey]bool, len(out.Results))
	for _, e := range out.Results {
		t := awscalls.MoveTask(q.id, q.arn, e, now)
		key := taskKey{sourceARN: t.SourceARN, startedAt: e.StartedTimestamp}
		listed[key] = true
		prev, known := q.task(key)
		if known && prev.Status == t.Status && prev.Moved == t.Moved && prev.ToMove == t.ToMove && prev.FailureReason == t.FailureReason {
			continue
		}
		id, err := c.store.UpsertMoveTask(ctx, t)
		if err != nil {
			// Not cached: the next poll writes it again, so that the store never keeps a task
			// RUNNING that SQS says has ended.
			c.storeFailed(ctx, cy, "UpsertMoveTask", q, err)
			continue
		}
		if !known {
			// A task toolq has not seen before (started from the console, say, or before a
			// restart): remember what it moves, if the actions have not already.
			if _, err := c.store.RememberRedrive(ctx, id, now); err != nil {
				c.storeFailed(ctx, cy, "RememberRedrive", q, err)
			}
		}
		q.keepTask(key, t)
		changed = true
	}
	q.keepListedTasks(listed)
	if changed {
		c.pub.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: q.id, At: now})
	}
}
