package views

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/store"
)

// GroupToolName is the MessageQuery.GroupBy that groups by tool name; any other value names a
// dimension.
const GroupToolName = "toolName"

// EventBridge's failure attributes, set on an event it could not deliver to a target and sent to
// the target's dead-letter queue instead.
const (
	attrErrorCode     = "ERROR_CODE"
	attrErrorMessage  = "ERROR_MESSAGE"
	attrRuleARN       = "RULE_ARN"
	attrTargetARN     = "TARGET_ARN"
	attrRetryAttempts = "RETRY_ATTEMPTS"
)

// triageTop is how many values of each field the triage lists.
const triageTop = 5

// field turns a MessageQuery.GroupBy into the store's field; nil for "".
func (s *Service) field(groupBy string) (*store.Field, error) {
	switch {
	case groupBy == "":
		return nil, nil
	case groupBy == GroupToolName:
		return &store.Field{Kind: store.FieldTool}, nil
	case slices.Contains(s.dims, groupBy):
		return &store.Field{Kind: store.FieldDimension, Name: groupBy}, nil
	}
	return nil, choices.Wrap(fmt.Errorf("%w: %q", ErrUnknownDimension, groupBy), groupBy, append([]string{GroupToolName}, s.dims...))
}

// valueGroups turns the store's counts into their view.
func valueGroups(counts []store.ValueCount) []ValueGroup {
	out := make([]ValueGroup, 0, len(counts))
	for _, c := range counts {
		out = append(out, ValueGroup{Value: c.Value, Count: c.Count, FirstSentAt: timePtr(c.FirstSentAt), LastSentAt: timePtr(c.LastSentAt)})
	}
	return out
}

// reasonOf says why a message's tool call failed, where the message says it: EventBridge's
// failure attributes first (they are exact), then the operator's error dimension.
func (s *Service) reasonOf(attrs []store.MessageAttribute, dims map[string]string) *FailureReason {
	if f, ok := eventBridgeFailure(attrs); ok {
		return &f
	}
	if v := dims[s.errorDim]; s.errorDim != "" && v != "" {
		return &FailureReason{Source: "dimension", Code: v, Dimension: s.errorDim}
	}
	return nil
}

// Triage returns what a queue's newest sample says went wrong: its most frequent tools, values
// of each dimension and failure reasons. Before the first sample it is empty, SampledAt null.
func (s *Service) Triage(ctx context.Context, queueID int64) (Triage, error) {
	sample, err := s.store.LatestSample(ctx, queueID)
	if errors.Is(err, store.ErrNotFound) {
		return emptyTriage(), nil
	}
	if err != nil {
		return Triage{}, fmt.Errorf("views: triage of queue %d: %w", queueID, err)
	}
	return s.triageOf(ctx, sample)
}

// triageOf is what one sample says went wrong.
func (s *Service) triageOf(ctx context.Context, sample store.Sample) (Triage, error) {
	out := emptyTriage()
	out.SampledAt, out.Seen, out.ApproxVisible, out.Coverage = timePtr(sample.At), sample.Seen, sample.ApproxVisible, sample.Coverage()
	count := func(f store.Field) ([]ValueGroup, int, error) {
		return s.countTop(ctx, sample.ID, f, triageTop, false)
	}
	tools, others, err := s.countTop(ctx, sample.ID, store.Field{Kind: store.FieldTool}, triageTop, true)
	if err != nil {
		return Triage{}, err
	}
	for _, t := range tools {
		out.Tools = append(out.Tools, ToolCount{ToolName: t.Value, Count: t.Count})
	}
	out.OtherTools = others
	if out.Dimensions, err = s.dimensionTops(ctx, sample.ID, triageTop); err != nil {
		return Triage{}, err
	}
	// A message's reason is EventBridge's ERROR_CODE when it has one, else the error dimension:
	// count both and merge, the messages with neither left out.
	reasons := map[string]ValueGroup{}
	fields := []store.Field{{Kind: store.FieldAttribute, Name: attrErrorCode}}
	if s.errorDim != "" {
		fields = append(fields, store.Field{Kind: store.FieldDimension, Name: s.errorDim})
	}
	for _, f := range fields {
		values, _, err := count(f)
		if err != nil {
			return Triage{}, err
		}
		for _, v := range values {
			if v.Value != "" {
				r := reasons[v.Value]
				r.Value, r.Count = v.Value, r.Count+v.Count
				r.FirstSentAt, r.LastSentAt = earlier(r.FirstSentAt, v.FirstSentAt), later(r.LastSentAt, v.LastSentAt)
				reasons[v.Value] = r
			}
		}
	}
	for _, r := range reasons {
		out.Reasons = append(out.Reasons, r)
	}
	slices.SortFunc(out.Reasons, func(a, b ValueGroup) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
	out.Reasons, _ = topValues(out.Reasons, triageTop, false)
	return out, nil
}

// countTop counts a sample by one field: its n most frequent values and the messages of the
// others. keepEmpty lists the messages without the field as one more value ("", a tool call
// with no tool name), else they are left out.
func (s *Service) countTop(ctx context.Context, sampleID int64, f store.Field, n int, keepEmpty bool) ([]ValueGroup, int, error) {
	counts, err := s.store.SampleValueCounts(ctx, sampleID, f, store.MessageFilter{})
	if err != nil {
		return nil, 0, fmt.Errorf("views: counts of sample %d: %w", sampleID, err)
	}
	top, others := topValues(valueGroups(counts), n, keepEmpty)
	return top, others, nil
}

// dimensionTops counts a sample by each dimension, in the configured order.
func (s *Service) dimensionTops(ctx context.Context, sampleID int64, n int) ([]DimensionTop, error) {
	out := []DimensionTop{}
	for _, name := range s.dims {
		values, others, err := s.countTop(ctx, sampleID, store.Field{Kind: store.FieldDimension, Name: name}, n, false)
		if err != nil {
			return nil, err
		}
		out = append(out, DimensionTop{Name: name, Values: values, Others: others})
	}
	return out, nil
}

// SampleBreakdown is a dead-letter queue's newest sample counted by tool and by each dimension:
// the most frequent values and how many messages the others hold, for /metrics. Account is the
// queue's account as QueueSummary.Account names it.
type SampleBreakdown struct {
	Queue, Region, Account string
	Tools                  []ValueGroup // "" for the messages without a tool name
	OtherTools             int
	Dimensions             []DimensionTop
}

// BreakdownTop is how many values of each field a SampleBreakdown lists.
const BreakdownTop = 10

// SampleBreakdowns counts the newest sample of every dead-letter queue the current snapshot
// shows and that is not gone, BreakdownTop values of each field at most; each sample once, as a
// sample never changes once stored.
func (s *Service) SampleBreakdowns(ctx context.Context) ([]SampleBreakdown, error) {
	snap, err := s.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	s.breakdowns.Lock()
	defer s.breakdowns.Unlock()
	rd := snap.readings
	out := []SampleBreakdown{}
	for _, q := range snap.Overview.Queues {
		sample, ok := rd.samples[q.ID]
		if !ok || !rd.byARN[q.ARN].IsDeadLetterQueue() || q.Gone {
			continue
		}
		c := rd.counted[sample.ID]
		if c.breakdown == nil {
			b := SampleBreakdown{Queue: q.Name, Region: q.Region, Account: q.Account}
			if b.Tools, b.OtherTools, err = s.countTop(ctx, sample.ID, store.Field{Kind: store.FieldTool}, BreakdownTop, true); err != nil {
				return nil, err
			}
			if b.Dimensions, err = s.dimensionTops(ctx, sample.ID, BreakdownTop); err != nil {
				return nil, err
			}
			c.breakdown = &b
		}
		out = append(out, *c.breakdown)
	}
	return out, nil
}

// topValues keeps the first n groups and counts the messages of the others; without keepEmpty
// the group without a value is left out of both.
func topValues(groups []ValueGroup, n int, keepEmpty bool) ([]ValueGroup, int) {
	top, others := []ValueGroup{}, 0
	for _, g := range groups {
		switch {
		case g.Value == "" && !keepEmpty:
		case len(top) < n:
			top = append(top, g)
		default:
			others += g.Count
		}
	}
	return top, others
}

func earlier(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.Before(*a)) {
		return b
	}
	return a
}

func later(a, b *time.Time) *time.Time {
	if a == nil || (b != nil && b.After(*a)) {
		return b
	}
	return a
}
