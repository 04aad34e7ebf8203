package traffic

import (
	"math/rand/v2"
	"strings"
)

// ToolCall is the body of one queued MCP tool call, in the shape an MCP server enqueues it
// (see the seed documents): the call's stable id, the tool and its arguments, and the session
// it belongs to.
type ToolCall struct {
	// ToolCallID is stable across retries; FIFO queues use it as MessageDeduplicationId.
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	// ToolArgs come from an LLM or a user: hostile text by nature.
	ToolArgs map[string]any `json:"toolArgs"`
	// SessionID is the agent session; FIFO queues use it as MessageGroupId.
	SessionID string `json:"sessionId"`
	// SequenceNumber counts the calls of one session from 1.
	SequenceNumber int `json:"sequenceNumber"`
	// SentAt is the send time in Unix milliseconds, stamped when the call leaves the producer.
	SentAt int64 `json:"sentAt"`
	// Error is what a worker wrote into the call when the tool rejected it for good (see
	// worker.recordFailure); absent until then.
	Error *CallError `json:"error,omitempty"`
}

// CallError is why a tool rejected a call, as the worker that ran it recorded it.
type CallError struct {
	// Code is stable for one kind of rejection (empty_query, path_escapes_workspace, …).
	Code    string `json:"code"`
	Message string `json:"message"`
	// At is when the worker recorded it, in Unix milliseconds.
	At int64 `json:"at"`
}

// crockford is the alphabet of ULIDs, which MCP servers commonly use for tool-call ids.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// randomString draws n characters of alphabet from r.
func randomString(r *rand.Rand, alphabet string, n int) string {
	var b strings.Builder
	b.Grow(n)
	for range n {
		b.WriteByte(alphabet[r.IntN(len(alphabet))])
	}
	return b.String()
}

func newToolCallID(r *rand.Rand) string { return "tc_" + randomString(r, crockford, 26) }

func newSessionID(r *rand.Rand) string {
	return "sess_" + randomString(r, "abcdefghijklmnopqrstuvwxyz0123456789", 12)
}

// newTraceparent returns a W3C traceparent header value, as MCP servers forward them.
func newTraceparent(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	return "00-" + randomString(r, hex, 32) + "-" + randomString(r, hex, 16) + "-01"
}
