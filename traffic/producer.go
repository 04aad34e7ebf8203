package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// maxBatchBytes keeps a SendMessageBatch under SQS's 256 KiB limit on the sum of its bodies
// (attributes count too, hence the margin).
const maxBatchBytes = 200 << 10

// produce carries out the planner's steps until ctx ends.
func (g *Generator) produce(ctx context.Context, topo Topology) {
	p := newPlanner(g.opts.Seed, g.planConfig())
	failures := 0
	for {
		st := p.next()
		if !sleep(ctx, st.Wait) {
			return
		}
		if err := g.sendAll(ctx, topo, st.Sends); err != nil {
			if canceled(ctx, err) {
				return
			}
			failures++
			g.stats.sendErrors.Add(1)
			g.log.Warn("send tool calls", "err", err, "calls", len(st.Sends))
			if !sleep(ctx, backoff(failures)) {
				return
			}
			continue
		}
		failures = 0
	}
}

// sendAll sends the calls of one step, batching consecutive calls to one queue.
func (g *Generator) sendAll(ctx context.Context, topo Topology, sends []send) error {
	now := time.Now().UnixMilli()
	for start := 0; start < len(sends); {
		q, ok := topo.Queue(sends[start].Queue)
		if !ok {
			return fmt.Errorf("traffic: no queue %s in the topology", sends[start].Queue)
		}
		var batch []types.SendMessageBatchRequestEntry
		size := 0
		end := start
		for ; end < len(sends) && sends[end].Queue == q.Name && len(batch) < 10; end++ {
			sends[end].Call.SentAt = now
			body, err := json.Marshal(sends[end].Call)
			if err != nil {
				return fmt.Errorf("traffic: encode tool call: %w", err)
			}
			if len(batch) > 0 && size+len(body) > maxBatchBytes {
				break
			}
			size += len(body)
			batch = append(batch, entry(q, strconv.Itoa(len(batch)), sends[end], string(body)))
		}
		if err := g.sendBatch(ctx, q, batch); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// entry builds the request for one call: on FIFO queues the session is the message group
// and the stable tool-call id the deduplication id.
func entry(q Queue, id string, s send, body string) types.SendMessageBatchRequestEntry {
	e := types.SendMessageBatchRequestEntry{
		Id:          aws.String(id),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"mcpServer":   {DataType: aws.String("String"), StringValue: aws.String(s.MCPServer)},
			"toolName":    {DataType: aws.String("String"), StringValue: aws.String(s.Call.ToolName)},
			"traceparent": {DataType: aws.String("String"), StringValue: aws.String(s.Traceparent)},
		},
	}
	if q.FIFO {
		e.MessageGroupId = aws.String(s.Call.SessionID)
		e.MessageDeduplicationId = aws.String(s.Call.ToolCallID)
	}
	return e
}

// sendBatch sends one message with SendMessage, several with SendMessageBatch, as a real MCP
// server does for a single call and for a fan-out.
func (g *Generator) sendBatch(ctx context.Context, q Queue, batch []types.SendMessageBatchRequestEntry) error {
	if len(batch) == 1 {
		e := batch[0]
		_, err := g.client.SendMessage(ctx, &sqs.SendMessageInput{
			QueueUrl:               aws.String(q.URL),
			MessageBody:            e.MessageBody,
			MessageAttributes:      e.MessageAttributes,
			MessageGroupId:         e.MessageGroupId,
			MessageDeduplicationId: e.MessageDeduplicationId,
		})
		if err != nil {
			return fmt.Errorf("traffic: send to %s: %w", q.Name, err)
		}
		g.stats.sent.Add(1)
		return nil
	}
	out, err := g.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.URL), Entries: batch})
	if err != nil {
		return fmt.Errorf("traffic: send batch to %s: %w", q.Name, err)
	}
	g.stats.sent.Add(int64(len(out.Successful)))
	for _, f := range out.Failed {
		g.stats.sendErrors.Add(1)
		g.log.Warn("send tool call in batch", "queue", q.Name, "code", aws.ToString(f.Code), "message", aws.ToString(f.Message))
	}
	return nil
}
