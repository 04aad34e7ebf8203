package views

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/tracelink"
)

// MessageTrace is a trace context a message carries: a traceparent message attribute (W3C) or
// its AWSTraceHeader (X-Ray), with its link under --trace-url.
type MessageTrace struct {
	Header string `json:"header"` // traceparent or AWSTraceHeader
	Value  string `json:"value"`  // as the message carries it: hostile text
	// TraceID is the trace id read from Value; "" when Value is not of its header's format.
	TraceID string `json:"traceId,omitempty"`
	// URL is the trace's page in the tracing system (--trace-url), built from TraceID alone;
	// "" without --trace-url or a TraceID.
	URL string `json:"url,omitempty"`
}

// AlertTrace is the trace of a message an alert is about (a blocked session's head, a DLQ's
// newest arrivals), with a link: alerts carry only the traces toolq could link.
type AlertTrace struct {
	MessageID string `json:"messageId"`
	TraceID   string `json:"traceId"`
	URL       string `json:"url"`
}

// alertTraceMessages is how many of a DLQ's newest sampled messages an arrival links the traces
// of.
const alertTraceMessages = 3

// tracesOf reads a stored message's trace contexts: its traceparent attribute, then its
// AWSTraceHeader. A malformed value is kept as text, with no id and no link.
func (s *Service) tracesOf(m store.SampledMessage) []MessageTrace {
	out := []MessageTrace{}
	add := func(header, value string) {
		t := MessageTrace{Header: header, Value: value}
		if tr, err := tracelink.Parse(header, value); err == nil {
			t.TraceID, t.URL = tr.ID, s.traceURL.Link(tr)
		}
		out = append(out, t)
	}
	for _, a := range m.Attributes {
		// Attribute names are case-sensitive in SQS, HTTP's header names are not: a producer
		// that copies its headers may write Traceparent.
		if strings.EqualFold(a.Name, tracelink.Traceparent) {
			add(tracelink.Traceparent, a.Value)
			break
		}
	}
	if m.TraceHeader != "" {
		add(tracelink.AWSTraceHeader, m.TraceHeader)
	}
	return out
}

// TraceLink returns the message's first trace link, "" when it has none.
func (m Message) TraceLink() (AlertTrace, bool) {
	for _, t := range m.Traces {
		if t.URL != "" {
			return AlertTrace{MessageID: m.MessageID, TraceID: t.TraceID, URL: t.URL}, true
		}
	}
	return AlertTrace{}, false
}

// NewestTraces returns the trace links of the newest messages of a queue's latest sample (those
// toolq saw first most recently), at most one a message and alertTraceMessages in all; none
// without --trace-url or a sample. Never nil.
func (s *Service) NewestTraces(ctx context.Context, queueID int64) ([]AlertTrace, error) {
	out := []AlertTrace{}
	if !s.traceURL.Enabled() {
		return out, nil
	}
	sample, err := s.store.LatestSample(ctx, queueID)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("views: traces of queue %d: %w", queueID, err)
	}
	msgs, err := s.store.NewestSampleMessages(ctx, sample.ID, alertTraceMessages)
	if err != nil {
		return nil, fmt.Errorf("views: traces of queue %d: %w", queueID, err)
	}
	for _, m := range msgs {
		if t, ok := (Message{MessageID: m.MessageID, Traces: s.tracesOf(m)}).TraceLink(); ok {
			out = append(out, t)
		}
	}
	return out, nil
}
