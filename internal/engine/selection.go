package engine

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolq/toolq/internal/store"
)

// Selection names messages of one dead-letter queue by what the triage knows of them. Its fields
// are ANDed and the values within a field ORed; an empty field does not narrow. On a FIFO queue
// a selection is made of whole message groups: a group is chosen when any of its messages
// matches, and then all of it moves, in order.
type Selection struct {
	Tools []string `json:"tools,omitempty"`
	// Dimensions are values of the operator's named dimensions (mcpServer, error, …), by name.
	Dimensions map[string][]string `json:"dimensions,omitempty"`
	// Reasons are failure reasons: EventBridge's ERROR_CODE, else the error dimension's value.
	Reasons []string `json:"reasons,omitempty"`
	// Q is a search text, matched as the messages page's search box matches: ignoring ASCII case,
	// in the body, the ids, the tool fields and the dimension values.
	Q          string   `json:"q,omitempty"`
	MessageIDs []string `json:"messageIds,omitempty"`
	// Groups are FIFO message groups (sessions), on FIFO queues only.
	Groups []string `json:"groups,omitempty"`
}

// Limits on a selection, so that one request cannot make the engine compare every message with
// an unbounded list.
const (
	MaxSelectionValues = 1000 // values of one field
	maxSelectionValue  = 1024 // bytes of one value, or of Q
)

// SelectionError is a selection that cannot be run: Code is stable for API clients, Message says
// what to change, naming the valid values where there are some.
type SelectionError struct {
	Code    string // empty_selection, unknown_dimension, groups_on_standard_queue, selection_too_large
	Message string
}

func (e *SelectionError) Error() string { return e.Code + ": " + e.Message }

// Empty reports whether the selection names nothing: it would select the whole queue, which is a
// move task's job, not a selection's.
func (s Selection) Empty() bool {
	return len(s.Tools) == 0 && len(s.Reasons) == 0 && strings.TrimSpace(s.Q) == "" && len(s.MessageIDs) == 0 &&
		len(s.Groups) == 0 && !slices.ContainsFunc(slices.Collect(maps.Values(s.Dimensions)), func(v []string) bool { return len(v) > 0 })
}

// Check refuses a selection that cannot be run on a queue: an empty one, a dimension that is not
// configured (dims are the configured names), groups on a standard queue, too many values.
func (s Selection) Check(dims []string, fifo bool) *SelectionError {
	if s.Empty() {
		return &SelectionError{"empty_selection", "the selection names no tool, dimension value, reason, search text, message id or group; to move the whole dead-letter queue, start a redrive without a selection"}
	}
	for _, name := range slices.Sorted(maps.Keys(s.Dimensions)) {
		if !slices.Contains(dims, name) {
			valid := "none is configured"
			if len(dims) > 0 {
				valid = "the configured ones are " + strings.Join(dims, ", ")
			}
			return &SelectionError{"unknown_dimension", fmt.Sprintf("no dimension is called %q; %s", clip(name, 64), valid)}
		}
	}
	if len(s.Groups) > 0 && !fifo {
		return &SelectionError{"groups_on_standard_queue", "message groups exist on FIFO queues only; select this standard queue's messages by tool, dimension, reason, search or message id"}
	}
	fields := [][]string{s.Tools, s.Reasons, s.MessageIDs, s.Groups, {s.Q}}
	for _, v := range s.Dimensions {
		fields = append(fields, v)
	}
	for _, f := range fields {
		if len(f) > MaxSelectionValues || slices.ContainsFunc(f, func(v string) bool { return len(v) > maxSelectionValue }) {
			return &SelectionError{"selection_too_large", fmt.Sprintf("a selection holds at most %d values a field, each at most %d bytes", MaxSelectionValues, maxSelectionValue)}
		}
	}
	return nil
}

// JSON is the selection as the journal and the audit log keep it.
func (s Selection) JSON() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// ParseSelection reads a selection kept by JSON.
func ParseSelection(raw string) (Selection, error) {
	var s Selection
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		return Selection{}, fmt.Errorf("engine: selection: %w", err)
	}
	return s, nil
}

// Matches reports whether a message, read as the triage reads it (collector's ReadMessage, or a
// sample's row), is one the selection names. errorDim is the dimension that says why a call
// failed ("" for none). On a FIFO queue it tells whether the message chooses its group.
func (s Selection) Matches(m store.SampledMessage, errorDim string) bool {
	oneOf := func(values []string, v string) bool { return len(values) == 0 || slices.Contains(values, v) }
	if !oneOf(s.Tools, m.ToolName) || !oneOf(s.MessageIDs, m.MessageID) || !oneOf(s.Groups, m.GroupID) ||
		!oneOf(s.Reasons, ReasonCode(m, errorDim)) {
		return false
	}
	for name, values := range s.Dimensions {
		if !oneOf(values, m.Dimensions[name]) {
			return false
		}
	}
	return s.Q == "" || searchMatches(m, s.Q)
}

// eventBridgeErrorCode is the attribute EventBridge sets on an event it failed to deliver.
const eventBridgeErrorCode = "ERROR_CODE"

// ReasonCode is why a message's tool call failed, as the triage counts it: EventBridge's
// ERROR_CODE attribute first, then the error dimension's value; "" when the message says neither.
func ReasonCode(m store.SampledMessage, errorDim string) string {
	for _, a := range m.Attributes {
		if a.Name == eventBridgeErrorCode && a.Value != "" {
			return a.Value
		}
	}
	if errorDim == "" {
		return ""
	}
	return m.Dimensions[errorDim]
}

// searchMatches is the messages page's search (store.MessageFilter.Search) over one message: q
// within the body, message id, group id, deduplication id, tool fields or a dimension value,
// ignoring ASCII case as SQL's LIKE does.
func searchMatches(m store.SampledMessage, q string) bool {
	q = asciiLower(q)
	for _, v := range []string{m.Body, m.MessageID, m.GroupID, m.DeduplicationID, m.ToolName, m.ToolCallID, m.SessionID} {
		if strings.Contains(asciiLower(v), q) {
			return true
		}
	}
	for _, v := range m.Dimensions {
		if strings.Contains(asciiLower(v), q) {
			return true
		}
	}
	return false
}

// asciiLower lowers ASCII letters only, as SQLite's LIKE folds case.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + ('a' - 'A')
		}
		return r
	}, s)
}

// clip bounds a caller's text quoted back in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
