package views

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/store"
)

// ErrUnknownDimension is returned for a group or a filter by a dimension that is not configured;
// the API answers it with 400.
var ErrUnknownDimension = errors.New("views: no such dimension")

// ErrBadCursor is returned for a messages cursor that this server did not hand out for that
// queue, or whose sample has since been pruned; the API answers it with 400.
var ErrBadCursor = errors.New("views: bad cursor")

// Message page sizes.
const (
	DefaultMessageLimit = 50
	MaxMessageLimit     = 500
)

// previewRunes is the length of a message's one-line preview; previewScanBytes how much of a
// body is read to make it.
const (
	previewRunes     = 200
	previewScanBytes = 8 << 10
)

// Groups returns the per-group backlog of a FIFO queue's newest sample.
func (s *Service) Groups(ctx context.Context, queueID int64) (Groups, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return Groups{}, err
	}
	out := Groups{Queue: q.Name, DeadLetterQueue: deadLetter(q), Groups: []Group{}}
	sample, err := s.store.LatestSample(ctx, q.ID)
	if errors.Is(err, store.ErrNotFound) {
		out.Next, err = s.sampleDue(ctx, q, nil)
		return out, err
	}
	if err != nil {
		return Groups{}, fmt.Errorf("views: groups of %s: %w", q.Name, err)
	}
	out.SampledAt, out.Seen, out.ApproxVisible, out.Coverage = timePtr(sample.At), sample.Seen, sample.ApproxVisible, sample.Coverage()
	if out.Next, err = s.sampleDue(ctx, q, &sample); err != nil {
		return Groups{}, err
	}
	groups, err := s.store.SampleGroups(ctx, sample.ID)
	if err != nil {
		return Groups{}, fmt.Errorf("views: groups of %s: %w", q.Name, err)
	}
	now := s.clock()
	for _, g := range groups {
		out.Groups = append(out.Groups, Group{
			GroupID:          g.GroupID,
			Messages:         g.Messages,
			OldestSentAt:     g.OldestSentAt.UTC(),
			OldestAgeSeconds: ageSeconds(now, g.OldestSentAt),
			HeadMessageID:    g.HeadMessageID,
			HeadReceives:     receivesOf(g.HeadReceiveCount, g.HeadOwnReceives, q.MaxReceiveCount),
			HeadReceiveCount: g.HeadReceiveCount,
			Blocked:          g.Blocked,
			State:            groupState(g, out.DeadLetterQueue),
		})
	}
	return out, nil
}

// Messages returns a page of a queue's newest sample. A cursor pins the sample it started on, so
// that a new sample arriving between pages does not shuffle them.
func (s *Service) Messages(ctx context.Context, queueID int64, mq MessageQuery) (MessagePage, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return MessagePage{}, err
	}
	groupBy, err := s.checkMessageQuery(mq)
	if err != nil {
		return MessagePage{}, err
	}
	out := MessagePage{Queue: q.Name, Tools: []ToolCount{}, Messages: []Message{}, Dimensions: s.Dimensions(), Groups: []ValueGroup{}}
	sample, after, found, err := s.pageSample(ctx, q, mq.Cursor)
	if err != nil || !found {
		return out, err
	}
	out.SampledAt, out.Seen, out.ApproxVisible, out.Coverage = timePtr(sample.At), sample.Seen, sample.ApproxVisible, sample.Coverage()
	if mq.Cursor == "" {
		// A page pinned to an older sample by its cursor is not followed by the next one.
		if out.Next, err = s.sampleDue(ctx, q, &sample); err != nil {
			return MessagePage{}, err
		}
	}
	filter := store.MessageFilter{ToolName: mq.ToolName, NearMaxOnly: mq.NearMaxOnly, Dimensions: mq.Dimensions, Search: mq.Search}
	if err := s.countSample(ctx, sample, filter, groupBy, &out); err != nil {
		return MessagePage{}, fmt.Errorf("views: messages of %s: %w", q.Name, err)
	}
	if groupBy != nil {
		out.GroupBy = mq.GroupBy
	}
	if err := s.pageMessages(ctx, q, sample, filter, after, messageLimit(mq.Limit), &out); err != nil {
		return MessagePage{}, fmt.Errorf("views: messages of %s: %w", q.Name, err)
	}
	return out, nil
}

// messageLimit is a page's size: the default for none, at most MaxMessageLimit.
func messageLimit(limit int) int {
	switch {
	case limit <= 0:
		return DefaultMessageLimit
	case limit > MaxMessageLimit:
		return MaxMessageLimit
	}
	return limit
}

// checkMessageQuery refuses a query naming a field or dimension that is not configured, and
// returns the field its groups are counted by (nil for none).
func (s *Service) checkMessageQuery(mq MessageQuery) (*store.Field, error) {
	groupBy, err := s.field(mq.GroupBy)
	if err != nil {
		return nil, err
	}
	for name := range mq.Dimensions {
		if !slices.Contains(s.dims, name) {
			return nil, choices.Wrap(fmt.Errorf("%w: %q", ErrUnknownDimension, name), name, s.Dimensions())
		}
	}
	return groupBy, nil
}

// pageSample is the sample a page reads: the cursor's, or the queue's newest (found false when
// it has none), and the id the page starts after.
func (s *Service) pageSample(ctx context.Context, q store.Queue, cursor string) (sample store.Sample, after int64, found bool, err error) {
	if cursor == "" {
		sample, err = s.store.LatestSample(ctx, q.ID)
		if errors.Is(err, store.ErrNotFound) {
			return store.Sample{}, 0, false, nil
		}
		if err != nil {
			return store.Sample{}, 0, false, fmt.Errorf("views: messages of %s: %w", q.Name, err)
		}
		return sample, 0, true, nil
	}
	c, err := decodeCursor(cursor)
	if err != nil || c.queueID != q.ID {
		return store.Sample{}, 0, false, fmt.Errorf("%w: not a cursor of queue %s", ErrBadCursor, q.Name)
	}
	sample, err = s.store.GetSample(ctx, c.sampleID)
	if errors.Is(err, store.ErrNotFound) || (err == nil && sample.QueueID != q.ID) {
		return store.Sample{}, 0, false, fmt.Errorf("%w: the sample it points into is gone; start again", ErrBadCursor)
	}
	if err != nil {
		return store.Sample{}, 0, false, fmt.Errorf("views: messages of %s: %w", q.Name, err)
	}
	return sample, c.afterID, true, nil
}

// countSample fills a page's counts: the sample's tools, the messages the filter matches and,
// with groupBy, their groups.
func (s *Service) countSample(ctx context.Context, sample store.Sample, filter store.MessageFilter, groupBy *store.Field, out *MessagePage) error {
	tools, err := s.store.SampleValueCounts(ctx, sample.ID, store.Field{Kind: store.FieldTool}, store.MessageFilter{})
	if err != nil {
		return err
	}
	for _, t := range tools {
		out.Tools = append(out.Tools, ToolCount{ToolName: t.Value, Count: t.Count})
	}
	if out.Matched, err = s.store.SampleMessageCount(ctx, sample.ID, filter); err != nil {
		return err
	}
	if groupBy != nil {
		counts, err := s.store.SampleValueCounts(ctx, sample.ID, *groupBy, filter)
		if err != nil {
			return err
		}
		out.Groups = valueGroups(counts)
	}
	return nil
}

// pageMessages fills a page's messages, those the filter matches after the id after, and the
// cursor of the next page when there is one.
func (s *Service) pageMessages(ctx context.Context, q store.Queue, sample store.Sample, filter store.MessageFilter, after int64, limit int, out *MessagePage) error {
	// One more than a page tells whether there is a next page without a count query.
	filter.AfterID, filter.Limit = after, limit+1
	msgs, err := s.store.SampleMessages(ctx, sample.ID, filter)
	if err != nil {
		return err
	}
	more := len(msgs) > limit
	if more {
		msgs = msgs[:limit]
	}
	names := s.queueNames(ctx)
	now := s.clock()
	for _, m := range msgs {
		out.Messages = append(out.Messages, s.messageOf(m, sample, now, names, q.MaxReceiveCount))
	}
	if more {
		out.NextCursor = out.Messages[len(out.Messages)-1].Cursor
	}
	return nil
}

// Message returns one sampled message, from the newest sample that holds it.
func (s *Service) Message(ctx context.Context, queueID int64, messageID string) (Message, error) {
	q, err := s.queue(ctx, queueID)
	if err != nil {
		return Message{}, err
	}
	m, err := s.store.SampledMessageByID(ctx, q.ID, messageID)
	if errors.Is(err, store.ErrNotFound) {
		return Message{}, fmt.Errorf("views: message of %s: %w", q.Name, ErrNotFound)
	}
	if err != nil {
		return Message{}, fmt.Errorf("views: message of %s: %w", q.Name, err)
	}
	sample, err := s.store.GetSample(ctx, m.SampleID)
	if err != nil {
		return Message{}, fmt.Errorf("views: message of %s: %w", q.Name, err)
	}
	return s.messageOf(m, sample, s.clock(), s.queueNames(ctx), q.MaxReceiveCount), nil
}

// queueNames maps ARNs to queue names, to name a message's dead-letter source. It is best
// effort: without it the view falls back to the ARN's last field, which is the same name.
func (s *Service) queueNames(ctx context.Context) map[string]string {
	qs, err := s.store.ListQueues(ctx, store.QueueFilter{IncludeGone: true})
	names := make(map[string]string, len(qs))
	if err != nil {
		return names
	}
	for _, q := range qs {
		names[q.ARN] = q.Name
	}
	return names
}

// ownReceiveLimit is how often toolq may receive each message of a queue with maxReceiveCount
// (store.OwnReceiveLimit), or nil when the queue has no RedrivePolicy (a final dead-letter queue), where toolq's receives cost
// nothing but the count.
func ownReceiveLimit(maxReceiveCount int) *int {
	if maxReceiveCount == 0 {
		return nil
	}
	limit := store.OwnReceiveLimit(maxReceiveCount)
	return &limit
}

// messageOf is one sampled message of a queue whose maxReceiveCount is maxReceiveCount (0
// without a RedrivePolicy).
func (s *Service) messageOf(m store.SampledMessage, sample store.Sample, now time.Time, names map[string]string, maxReceiveCount int) Message {
	out := Message{
		Receives:            receivesOf(m.ReceiveCount, m.OwnReceives, maxReceiveCount),
		OwnReceives:         m.OwnReceives,
		OwnReceiveLimit:     ownReceiveLimit(maxReceiveCount),
		Cursor:              encodeCursor(cursor{queueID: sample.QueueID, sampleID: sample.ID, afterID: m.ID}),
		MessageID:           m.MessageID,
		GroupID:             m.GroupID,
		DeduplicationID:     m.DeduplicationID,
		SequenceNumber:      m.SequenceNumber,
		ReceiveCount:        m.ReceiveCount,
		SentAt:              timePtr(m.SentAt),
		FirstReceivedAt:     timePtr(m.FirstReceivedAt),
		AgeSeconds:          ageSeconds(now, m.SentAt),
		DeadLetterSourceARN: m.DeadLetterSourceARN,
		ToolName:            m.ToolName,
		ToolCallID:          m.ToolCallID,
		SessionID:           m.SessionID,
		Dimensions:          map[string]string{},
		NearMaxReceive:      m.NearMaxReceive,
		Attributes:          make([]MessageAttribute, 0, len(m.Attributes)),
		BodyPreview:         bodyPreview(m.Body),
		Body:                m.Body,
		BodySize:            m.BodySize,
		BodyTruncated:       m.BodyTruncated,
		SampledAt:           sample.At.UTC(),
	}
	if m.DeadLetterSourceARN != "" {
		out.DeadLetterSource = names[m.DeadLetterSourceARN]
		if out.DeadLetterSource == "" {
			out.DeadLetterSource = arn.QueueName(m.DeadLetterSourceARN)
		}
	}
	for _, a := range m.Attributes {
		out.Attributes = append(out.Attributes, MessageAttribute{Name: a.Name, DataType: a.DataType, Value: a.Value})
	}
	for k, v := range m.Dimensions {
		out.Dimensions[k] = v
	}
	out.Reason = s.reasonOf(m.Attributes, out.Dimensions)
	out.Traces = s.tracesOf(m)
	return out
}

// ageSeconds is how long ago t was, or 0 when t is unknown.
func ageSeconds(now, t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return seconds(now.Sub(t))
}

// bodyPreview returns the body as one line of at most previewRunes runes: whitespace runs and
// control characters become single spaces, invalid UTF-8 becomes U+FFFD, and a cut body ends
// with an ellipsis.
func bodyPreview(body string) string {
	// Bodies can be megabytes; a preview needs only the first few thousand bytes.
	if len(body) > previewScanBytes {
		body = body[:previewScanBytes]
	}
	line := strings.Join(strings.FieldsFunc(strings.ToValidUTF8(body, "\uFFFD"), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}), " ")
	if utf8.RuneCountInString(line) <= previewRunes {
		return line
	}
	n := 0
	for i := range line {
		if n == previewRunes-1 {
			return line[:i] + "…"
		}
		n++
	}
	return line
}

// PrettyBody returns the body indented as JSON when it is JSON, else as it is.
func (m Message) PrettyBody() string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, []byte(m.Body), "", "  "); err != nil {
		return m.Body
	}
	return buf.String()
}

// cursor is where a messages page ends: the queue and sample it belongs to and the last row id.
type cursor struct {
	queueID, sampleID, afterID int64
}

// cursorVersion prefixes every cursor so that its format can change without misreading old ones.
const cursorVersion = "m1"

func encodeCursor(c cursor) string {
	raw := fmt.Sprintf("%s.%d.%d.%d", cursorVersion, c.queueID, c.sampleID, c.afterID)
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func decodeCursor(s string) (cursor, error) {
	if len(s) > 128 {
		return cursor{}, ErrBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, ErrBadCursor
	}
	parts := strings.Split(string(raw), ".")
	if len(parts) != 4 || parts[0] != cursorVersion {
		return cursor{}, ErrBadCursor
	}
	var ids [3]int64
	for i, p := range parts[1:] {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v <= 0 {
			return cursor{}, ErrBadCursor
		}
		ids[i] = v
	}
	return cursor{queueID: ids[0], sampleID: ids[1], afterID: ids[2]}, nil
}

// BlockedReceiveCount is how many times a FIFO group's head must have failed, with messages
// waiting behind it, for the group to be blocked (store.BlockedReceiveCount, which the collector
// applies).
const BlockedReceiveCount = store.BlockedReceiveCount

// groupState tells a group's state from its backlog and its queue: in a dead-letter queue
// nothing retries a group and nothing blocks it, whatever its head went through before.
func groupState(g store.GroupBacklog, deadLetterQueue bool) GroupState {
	switch {
	case deadLetterQueue:
		return GroupDeadLettered
	case g.Blocked:
		return GroupBlocked
	case g.HeadReceiveCount > 0:
		return GroupRetrying
	}
	return GroupWaiting
}
