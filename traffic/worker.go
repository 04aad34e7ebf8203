package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// worker is one consumer loop of a queue: it long-polls, runs the simulated tool of each
// message and deletes the message when the tool succeeds. A failed message is left alone, so
// it comes back after the visibility timeout and, past maxReceiveCount, goes to the DLQ.
type worker struct {
	g     *Generator
	queue Queue
	spec  queueSpec
	log   *slog.Logger
}

func (w *worker) run(ctx context.Context) {
	if w.spec.pollEvery > 0 {
		w.poll(ctx)
		return
	}
	// Up to batch calls run at once. The worker receives again as soon as one finishes
	// rather than after the whole batch, so one slow export does not hold back the others.
	slots := make(chan struct{}, w.spec.batch)
	release := func(n int) {
		for range n {
			<-slots
		}
	}
	var running sync.WaitGroup
	defer running.Wait()
	failures := 0
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		// Take every other free slot too; only this loop fills slots, so this cannot block.
		free := 1
		for len(slots) < cap(slots) {
			slots <- struct{}{}
			free++
		}
		out, err := w.receive(ctx, free, w.g.opts.WaitTime)
		if err != nil {
			release(free)
			if canceled(ctx, err) {
				return
			}
			failures++
			w.log.Warn("receive tool calls", "err", err)
			sleep(ctx, backoff(failures))
			continue
		}
		failures = 0
		release(free - len(out.Messages))
		for _, m := range out.Messages {
			running.Go(func() {
				defer release(1)
				w.handle(ctx, m)
			})
		}
	}
}

// receive asks for up to n tool calls, waiting up to wait, with what the worker reads of them.
func (w *worker) receive(ctx context.Context, n int, wait time.Duration) (*sqs.ReceiveMessageOutput, error) {
	return w.g.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:              aws.String(w.queue.URL),
		MaxNumberOfMessages:   int32(n),
		WaitTimeSeconds:       int32(wait / time.Second),
		MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
		},
	})
}

// poll is the loop of a worker on a schedule (queueSpec.pollEvery): at each tick it receives
// and runs calls one batch at a time until the queue answers empty, then waits for the next.
func (w *worker) poll(ctx context.Context) {
	// Every worker of the queue draws the same schedule, so they poll together; its jitter keeps
	// the polls from falling in step with anything that runs at a round period (the dashboard's
	// samples, say).
	h := fnv.New64a()
	h.Write([]byte(w.spec.name))
	r := rand.New(rand.NewPCG(uint64(w.g.opts.Seed), h.Sum64()))
	next := time.Now()
	failures := 0
	for {
		for {
			out, err := w.receive(ctx, w.spec.batch, time.Second)
			if err != nil {
				if canceled(ctx, err) {
					return
				}
				failures++
				w.log.Warn("receive tool calls", "err", err)
				sleep(ctx, backoff(failures))
				break
			}
			failures = 0
			if len(out.Messages) == 0 {
				break
			}
			var running sync.WaitGroup
			for _, m := range out.Messages {
				running.Go(func() { w.handle(ctx, m) })
			}
			running.Wait()
		}
		next = next.Add(w.spec.pollEvery*2/3 + time.Duration(r.Int64N(int64(w.spec.pollEvery*2/3)+1)))
		if !sleep(ctx, time.Until(next)) {
			return
		}
	}
}

// handle runs one delivery of a tool call.
func (w *worker) handle(ctx context.Context, m types.Message) {
	if w.spec.auditLog {
		// An audit logger writes the event down and is done: nothing in it can fail.
		w.delete(ctx, w.log, m.ReceiptHandle)
		return
	}
	receiveCount, _ := strconv.Atoi(m.Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	server := ""
	if v, ok := m.MessageAttributes["mcpServer"]; ok {
		server = aws.ToString(v.StringValue)
	}
	var call ToolCall
	var res attempt
	if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &call); err != nil {
		res = attempt{Duration: 5 * time.Millisecond, Err: fmt.Errorf("decode tool call: %w", err), Permanent: true}
	} else if server == serverCrawler && sentBefore(m, w.g.crawlerBack) {
		res = crawlerDown()
	} else {
		res = simulateAttempt(w.g.opts.Seed, server, call, receiveCount)
	}

	stopHeartbeat := func() {}
	if w.spec.extendVisibility && res.Duration > w.queue.VisibilityTimeout/2 {
		hbCtx, cancel := context.WithCancel(ctx)
		var hb sync.WaitGroup
		hb.Go(func() { w.heartbeat(hbCtx, m.ReceiptHandle) })
		stopHeartbeat = func() { cancel(); hb.Wait() }
	}
	finished := sleep(ctx, res.Duration)
	stopHeartbeat()
	if !finished {
		return
	}

	log := w.log.With("tool_call_id", call.ToolCallID, "tool", call.ToolName, "receive_count", receiveCount)
	switch {
	case res.Err == nil:
		w.g.stats.succeeded.Add(1)
		w.delete(ctx, log, m.ReceiptHandle)
		w.g.publishCompleted(ctx, server, call, res.Duration)
	case w.spec.giveUpAfter > 0 && receiveCount >= w.spec.giveUpAfter:
		// Without a DLQ the worker is the last line: it drops the call and the data is gone.
		// That is the scenario the demo stages for the notifications queue, not a fault of the
		// demo, so it is logged as information.
		w.g.stats.dropped.Add(1)
		log.Info("tool call dropped after repeated failures: the queue has no DLQ", "err", res.Err)
		w.delete(ctx, log, m.ReceiptHandle)
	case res.Permanent && w.spec.recordFailures && call.Error == nil && call.ToolCallID != "":
		w.g.stats.failed.Add(1)
		w.recordFailure(ctx, log, m, call, res.Err)
	default:
		w.g.stats.failed.Add(1)
		log.Debug("tool call failed; leaving it for redelivery", "err", res.Err, "permanent", res.Permanent)
	}
}

// recordFailure writes why the tool rejected a call into the call, as job runners do with a
// failed job's payload: SQS cannot change a message, so the worker sends the call again, with the
// same attributes and the error, and deletes the delivery it failed. The copy fails again (the
// rejection is for good) and reaches the DLQ by the queue's redrive policy like any poison pill,
// now saying why. A send that fails leaves the delivery alone, to come back as it is.
func (w *worker) recordFailure(ctx context.Context, log *slog.Logger, m types.Message, call ToolCall, cause error) {
	call.Error = &CallError{Code: errorCode(cause), Message: cause.Error(), At: time.Now().UnixMilli()}
	body, err := json.Marshal(call)
	if err != nil {
		log.Warn("encode failed tool call", "err", err)
		return
	}
	_, err = w.g.client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(w.queue.URL),
		MessageBody:       aws.String(string(body)),
		MessageAttributes: m.MessageAttributes,
	})
	if err != nil {
		if !canceled(ctx, err) {
			log.Debug("record tool call failure", "err", err)
		}
		return
	}
	w.delete(ctx, log, m.ReceiptHandle)
}

func (w *worker) delete(ctx context.Context, log *slog.Logger, receiptHandle *string) {
	_, err := w.g.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(w.queue.URL), ReceiptHandle: receiptHandle})
	if err != nil && !canceled(ctx, err) {
		// Expected now and then: a call that outran its visibility timeout was delivered
		// again, and the old receipt handle may no longer be valid.
		log.Debug("delete tool call", "err", err)
	}
}

// heartbeat extends the message's visibility every half timeout while the tool runs.
func (w *worker) heartbeat(ctx context.Context, receiptHandle *string) {
	every := w.queue.VisibilityTimeout / 2
	for sleep(ctx, every) {
		_, err := w.g.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
			QueueUrl:          aws.String(w.queue.URL),
			ReceiptHandle:     receiptHandle,
			VisibilityTimeout: int32(w.queue.VisibilityTimeout / time.Second),
		})
		if err != nil && !canceled(ctx, err) {
			w.log.Debug("extend visibility", "err", err)
		}
	}
}

// sentBefore reports whether SQS says m was sent before t: a redriven copy is sent anew.
func sentBefore(m types.Message, t time.Time) bool {
	ms, err := strconv.ParseInt(m.Attributes[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	return err == nil && time.UnixMilli(ms).Before(t)
}
