package collector

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// Bounds on what is kept of hostile message content besides the body.
const (
	maxAttributeValue = 4 << 10 // bytes of one message attribute value
	maxToolField      = 256     // bytes of a parsed tool name, call id or session id
	maxIDField        = 256     // bytes of a message id, group id, dedup id
	// maxParsedBody is the largest body parsed for tool fields. Bodies are bounded by the
	// queue's MaximumMessageSize, which AWS has raised before; past this size the tool fields
	// stay empty rather than the collector decoding megabytes per message.
	maxParsedBody = 4 << 20
)

// ReadMessage reads a received message of a queue as a sample keeps it: its ids, attributes,
// tool fields and dimensions, its body up to the body cap. The selection engine decides with it
// which messages a selection holds, so that the pages' groups and its matches agree.
func (c *Collector) ReadMessage(queueID int64, m types.Message) store.SampledMessage {
	return c.sampledMessage(queueID, m, 1, 0)
}

// sampledMessage converts one received message. ownReceives is how many of its receives the
// dashboard made since it arrived in the queue (this pass included); nearMax is the queue's maxReceiveCount when the queue is
// a source (0 otherwise).
func (c *Collector) sampledMessage(queueID int64, m types.Message, ownReceives, nearMax int) store.SampledMessage {
	sys := m.Attributes
	body := aws.ToString(m.Body)
	sm := store.SampledMessage{
		QueueID:             queueID,
		MessageID:           safetext.Store(aws.ToString(m.MessageId), maxIDField),
		GroupID:             safetext.Store(sys[string(types.MessageSystemAttributeNameMessageGroupId)], maxIDField),
		DeduplicationID:     safetext.Store(sys[string(types.MessageSystemAttributeNameMessageDeduplicationId)], maxIDField),
		SequenceNumber:      safetext.Store(sys[string(types.MessageSystemAttributeNameSequenceNumber)], maxIDField),
		DeadLetterSourceARN: safetext.Store(sys[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)], maxIDField),
		TraceHeader:         safetext.Store(sys[string(types.MessageSystemAttributeNameAWSTraceHeader)], maxIDField),
		SentAt:              epochMillis(sys[string(types.MessageSystemAttributeNameSentTimestamp)]),
		Attributes:          messageAttributes(m.MessageAttributes),
		BodySize:            len(body),
		BodyHash:            bodyHash(body),
	}
	// ApproximateReceiveCount includes every receive the dashboard made since the message
	// arrived in the queue; the page shows what the consumers did.
	received, _ := strconv.Atoi(sys[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	sm.OwnReceives = max(ownReceives, 1)
	sm.ReceiveCount = max(received-sm.OwnReceives, 0)
	if sm.ReceiveCount > 0 {
		// With no receive but the dashboard's, the first receive was the dashboard's own.
		sm.FirstReceivedAt = epochMillis(sys[string(types.MessageSystemAttributeNameApproximateFirstReceiveTimestamp)])
	}
	stored := strings.ToValidUTF8(body, "\uFFFD")
	sm.BodyTruncated = len(stored) > c.opts.Peek.BodyCap
	sm.Body = safetext.Truncate(stored, c.opts.Peek.BodyCap)
	var parsed messageBody
	if len(body) <= maxParsedBody {
		parsed = parseBody(body)
	}
	f := c.opts.ToolFields
	sm.ToolName, sm.ToolCallID, sm.SessionID = parsed.field(f.ToolName), parsed.field(f.ToolCallID), parsed.field(f.SessionID)
	sm.Dimensions = dimensionValues(c.opts.Dimensions, m.MessageAttributes, parsed)
	// Near: at most one delivery left, whoever made the receives so far (the consumers or the
	// dashboard): one more failed delivery sends the message on to the dead-letter queue.
	sm.NearMaxReceive = nearMax > 0 && sm.ReceiveCount+sm.OwnReceives >= nearMax-1
	return sm
}

// bodyHash is the hex SHA-256 of a whole body, before any truncation: SQS keeps a body through
// a redrive while it gives the message a new id, so the hash is how a message that comes back
// after a redrive is recognised (store.RememberRedrive), without keeping the body twice.
func bodyHash(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// dimensionValues returns a message's dimensions by name, those it has no value for left out.
// An attribute dimension of an EventBridge event, which carries no attribute of its producer's,
// reads the detail's field of the attribute's name: a tool call's mcpServer attribute, published
// as an event, is its detail's mcpServer.
func dimensionValues(dims []Dimension, attrs map[string]types.MessageAttributeValue, body messageBody) map[string]string {
	out := make(map[string]string, len(dims))
	for _, d := range dims {
		var v string
		switch d.Source {
		case FromAttribute:
			if v = safetext.Store(attributeValue(attrs, d.Path), maxToolField); v == "" {
				v = body.detailField(d.Path)
			}
		case FromJSON:
			v = body.field(d.Path)
		}
		if v != "" {
			out[d.Name] = v
		}
	}
	return out
}

// epochMillis reads an SQS timestamp attribute (Unix milliseconds); malformed reads zero.
func epochMillis(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// messageAttributes converts message attributes, ordered by name; binary values are base64.
func messageAttributes(attrs map[string]types.MessageAttributeValue) []store.MessageAttribute {
	out := make([]store.MessageAttribute, 0, len(attrs))
	for name, v := range attrs {
		value := aws.ToString(v.StringValue)
		if v.BinaryValue != nil {
			value = base64.StdEncoding.EncodeToString(v.BinaryValue)
		}
		out = append(out, store.MessageAttribute{
			Name:     safetext.Store(name, maxIDField),
			DataType: safetext.Store(aws.ToString(v.DataType), maxIDField),
			Value:    safetext.Store(value, maxAttributeValue),
		})
	}
	slices.SortFunc(out, func(a, b store.MessageAttribute) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// toolFields reads the values at dotted JSON paths of a body (messageBody.field).
func toolFields(body string, paths ...string) []string {
	parsed := parseBody(body)
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = parsed.field(p)
	}
	return out
}

// messageBody is a body parsed once for the fields toolq reads in it: the JSON document and,
// when it is an EventBridge event, its detail. EventBridge delivers the whole event to an SQS
// target and to a target's dead-letter queue, so a tool call published as an event has its
// toolName, toolCallId and the rest in detail, not at the top.
type messageBody struct {
	doc    any
	detail map[string]any // nil unless the body is an EventBridge event
}

// parseBody parses a body, tolerant of anything: a body that is not JSON, a path that is missing
// or not a scalar, all read as "". A body that is a JSON string holding a JSON object
// (double-encoded by some producers) is decoded once more.
func parseBody(body string) messageBody {
	trimmed := bytes.TrimSpace([]byte(body))
	if len(trimmed) == 0 || (trimmed[0] != '{' && trimmed[0] != '"') {
		return messageBody{}
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return messageBody{}
	}
	if s, ok := doc.(string); ok {
		inner := json.NewDecoder(strings.NewReader(s))
		inner.UseNumber()
		if err := inner.Decode(&doc); err != nil {
			return messageBody{}
		}
	}
	return messageBody{doc: doc, detail: eventDetail(doc)}
}

// eventDetail returns the detail of an EventBridge event (an object with a detail-type, a
// source and a detail object), nil for any other document.
func eventDetail(doc any) map[string]any {
	event, ok := doc.(map[string]any)
	if !ok {
		return nil
	}
	_, typed := event["detail-type"].(string)
	_, sourced := event["source"].(string)
	detail, ok := event["detail"].(map[string]any)
	if !typed || !sourced || !ok {
		return nil
	}
	return detail
}

// field returns the scalar at a dotted path of the body or, when the body has none there and is
// an EventBridge event, at that path of its detail; made safe to store.
func (b messageBody) field(path string) string {
	if v := safetext.Store(lookupPath(b.doc, path), maxToolField); v != "" {
		return v
	}
	return b.detailField(path)
}

// detailField returns the scalar at a dotted path of an EventBridge event's detail; "" for any
// other body.
func (b messageBody) detailField(path string) string {
	if b.detail == nil {
		return ""
	}
	return safetext.Store(lookupPath(b.detail, path), maxToolField)
}

// lookupPath walks a dotted path through JSON objects and returns the scalar at its end.
func lookupPath(doc any, path string) string {
	if path == "" {
		return ""
	}
	cur := doc
	for key := range strings.SplitSeq(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		if cur, ok = obj[key]; !ok {
			return ""
		}
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

// groupBacklog summarises the messages a pass saw of each FIFO message group. The head of a
// group is its message with the lowest sequence number (the oldest sent when the endpoint gives
// none). A group is Blocked when its head was delivered at least blockedReceiveCount times
// without being deleted while messages wait behind it: the consumer keeps failing it, and FIFO
// holds the whole session back until it succeeds or moves to the DLQ. Only source queues can be
// blocked: nobody consumes a dead-letter queue, so its groups merely wait.
func groupBacklog(queueID int64, msgs []store.SampledMessage, source bool) []store.GroupBacklog {
	byGroup := make(map[string][]store.SampledMessage)
	var order []string
	for _, m := range msgs {
		if m.GroupID == "" {
			continue
		}
		if _, ok := byGroup[m.GroupID]; !ok {
			order = append(order, m.GroupID)
		}
		byGroup[m.GroupID] = append(byGroup[m.GroupID], m)
	}
	groups := make([]store.GroupBacklog, 0, len(order))
	for _, id := range order {
		ms := byGroup[id]
		head := slices.MinFunc(ms, headOrder)
		g := store.GroupBacklog{
			QueueID:          queueID,
			GroupID:          id,
			Messages:         len(ms),
			HeadMessageID:    head.MessageID,
			HeadReceiveCount: head.ReceiveCount,
		}
		for _, m := range ms {
			if !m.SentAt.IsZero() && (g.OldestSentAt.IsZero() || m.SentAt.Before(g.OldestSentAt)) {
				g.OldestSentAt = m.SentAt
			}
		}
		g.Blocked = source && head.ReceiveCount >= blockedReceiveCount && len(ms) > 1
		groups = append(groups, g)
	}
	return groups
}

// headOrder orders the messages of one group: by sequence number (decimal strings of up to
// 128 bits, so compared by length first), then by send time.
func headOrder(a, b store.SampledMessage) int {
	if a.SequenceNumber != "" && b.SequenceNumber != "" {
		if c := cmp.Compare(len(a.SequenceNumber), len(b.SequenceNumber)); c != 0 {
			return c
		}
		if c := strings.Compare(a.SequenceNumber, b.SequenceNumber); c != 0 {
			return c
		}
	}
	return a.SentAt.Compare(b.SentAt)
}
