package views

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	return nil, fmt.Errorf("%w: %q", ErrUnknownDimension, groupBy)
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
func (s *Service) reasonOf(m Message) *FailureReason {
	attr := func(name string) string {
		for _, a := range m.Attributes {
			if a.Name == name {
				return a.Value
			}
		}
		return ""
	}
	if code := attr(attrErrorCode); code != "" {
		r := &FailureReason{Source: "eventbridge", Code: code, Message: attr(attrErrorMessage),
			RuleARN: attr(attrRuleARN), TargetARN: attr(attrTargetARN)}
		if n, err := strconv.Atoi(attr(attrRetryAttempts)); err == nil {
			r.RetryAttempts = &n
		}
		return r
	}
	if v := m.Dimensions[s.errorDim]; s.errorDim != "" && v != "" {
		return &FailureReason{Source: "dimension", Code: v, Dimension: s.errorDim}
	}
	return nil
}

// Triage returns what a queue's newest sample says went wrong: its most frequent tools, values
// of each dimension and failure reasons. Before the first sample it is empty, SampledAt null.
func (s *Service) Triage(ctx context.Context, queueID int64) (Triage, error) {
	out := Triage{Tools: []ToolCount{}, Dimensions: []DimensionTop{}, Reasons: []ValueGroup{}}
	sample, err := s.store.LatestSample(ctx, queueID)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return Triage{}, fmt.Errorf("views: triage of queue %d: %w", queueID, err)
	}
	out.SampledAt, out.Seen, out.ApproxVisible, out.Coverage = timePtr(sample.At), sample.Seen, sample.ApproxVisible, sample.Coverage()
	count := func(f store.Field) ([]ValueGroup, int, error) {
		counts, err := s.store.SampleValueCounts(ctx, sample.ID, f, store.MessageFilter{})
		if err != nil {
			return nil, 0, fmt.Errorf("views: triage of queue %d: %w", queueID, err)
		}
		top, others := topValues(valueGroups(counts), triageTop)
		return top, others, nil
	}
	tools, _, err := count(store.Field{Kind: store.FieldTool})
	if err != nil {
		return Triage{}, err
	}
	for _, t := range tools {
		out.Tools = append(out.Tools, ToolCount{ToolName: t.Value, Count: t.Count})
	}
	for _, name := range s.dims {
		values, others, err := count(store.Field{Kind: store.FieldDimension, Name: name})
		if err != nil {
			return Triage{}, err
		}
		out.Dimensions = append(out.Dimensions, DimensionTop{Name: name, Values: values, Others: others})
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
	out.Reasons, _ = topValues(out.Reasons, triageTop)
	return out, nil
}

// topValues keeps the first n groups, the ones without a value left out, and counts the
// messages of the others.
func topValues(groups []ValueGroup, n int) ([]ValueGroup, int) {
	top, others := []ValueGroup{}, 0
	for _, g := range groups {
		switch {
		case g.Value == "":
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
