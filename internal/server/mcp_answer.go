package server

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A tool's answer is encoded once, as the API encodes it, and written into the HTTP response as
// those bytes. Handed to the SDK as a value, the answer of list_queues at a thousand queues (700
// KB of JSON, and the same again as the text copy) went through encoding/json four more times on
// its way out: the result's MarshalJSON compacts the structured content and escapes the text,
// the JSON-RPC layer marshals the result into a raw message, and the transport marshals the
// envelope around that. Each pass over a json.RawMessage revalidates it byte by byte, and
// together they cost ten times the read itself (BenchmarkMCPAgainstREST). So the tool hands the
// SDK two placeholders, short random strings, and the response writer of the request replaces
// them with the encoded answer and its quoted copy as the SDK writes its message.

// mcpAnswers holds the encoded answers of one request's tool call until the SDK writes them.
type mcpAnswers struct {
	mu      sync.Mutex
	pending []splicedAnswer
}

// splicedAnswer is one answer: its placeholders as the SDK writes them (JSON strings), and the
// answer's JSON, which replaces the first as it is and the second as a JSON string.
type splicedAnswer struct {
	structured, text []byte
	raw              []byte
}

// result returns the tool result whose structured content and JSON text are raw, the answer
// encoded by the tool, with text, the short text, first.
func (a *mcpAnswers) result(text string, raw []byte) *mcp.CallToolResult {
	token := rand.Text()
	structured, copyText := "toolq-answer-"+token, "toolq-answer-text-"+token
	a.mu.Lock()
	a.pending = append(a.pending, splicedAnswer{structured: []byte(`"` + structured + `"`), text: []byte(`"` + copyText + `"`), raw: raw})
	a.mu.Unlock()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text}, &mcp.TextContent{Text: copyText}},
		StructuredContent: json.RawMessage(`"` + structured + `"`),
	}
}

// take returns the answer whose placeholders p holds, and where, and forgets it.
func (a *mcpAnswers) take(p []byte) (ans splicedAnswer, i, j int, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ans := range a.pending {
		i, j := bytes.Index(p, ans.structured), bytes.Index(p, ans.text)
		if i >= 0 && j >= 0 {
			a.pending = append(a.pending[:k], a.pending[k+1:]...)
			return ans, i, j, true
		}
	}
	return splicedAnswer{}, 0, 0, false
}

// unwritten reports how many answers were never written.
func (a *mcpAnswers) unwritten() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending)
}

// writeSpliced writes p to w with the answer's placeholders at i and j replaced, the answer's
// bytes written as they are rather than copied into one buffer.
func writeSpliced(w io.Writer, p []byte, ans splicedAnswer, i, j int) error {
	parts := []struct {
		at    int
		old   []byte
		write func() error
	}{
		{i, ans.structured, func() error { _, err := w.Write(ans.raw); return err }},
		{j, ans.text, func() error { return writeQuotedJSON(w, ans.raw) }},
	}
	if j < i {
		parts[0], parts[1] = parts[1], parts[0]
	}
	from := 0
	for _, part := range parts {
		if _, err := w.Write(p[from:part.at]); err != nil {
			return err
		}
		if err := part.write(); err != nil {
			return err
		}
		from = part.at + len(part.old)
	}
	_, err := w.Write(p[from:])
	return err
}

// quoteChunk is how much of a quoted answer is written at once.
const quoteChunk = 32 << 10

// writeQuotedJSON writes raw, JSON as encoding/json writes it, as a JSON string. encoding/json
// escapes every control character, and U+2028 and U+2029, inside its strings and writes none
// outside them, so only the quotes and the backslashes are left to escape.
func writeQuotedJSON(w io.Writer, raw []byte) error {
	buf := make([]byte, 0, quoteChunk+2)
	buf = append(buf, '"')
	quote, slash := bytes.IndexByte(raw, '"'), bytes.IndexByte(raw, '\\')
	for from := 0; from < len(raw); {
		next := len(raw)
		if quote >= 0 {
			next = quote
		}
		if slash >= 0 && slash < next {
			next = slash
		}
		end := min(next, from+quoteChunk-len(buf))
		buf = append(buf, raw[from:end]...)
		if end == next && next < len(raw) {
			buf = append(buf, '\\', raw[next])
			end++
			if next == quote {
				quote = indexFrom(raw, end, '"')
			} else {
				slash = indexFrom(raw, end, '\\')
			}
		}
		from = end
		if len(buf) >= quoteChunk {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(append(buf, '"'))
	return err
}

// indexFrom is the index of c in b at or after from, or -1.
func indexFrom(b []byte, from int, c byte) int {
	if i := bytes.IndexByte(b[from:], c); i >= 0 {
		return from + i
	}
	return -1
}

// splicingWriter writes the SDK's messages with the answers spliced in.
type splicingWriter struct {
	http.ResponseWriter
	answers *mcpAnswers
}

func (w splicingWriter) Write(p []byte) (int, error) {
	ans, i, j, ok := w.answers.take(p)
	if !ok {
		return w.ResponseWriter.Write(p)
	}
	if err := writeSpliced(w.ResponseWriter, p, ans, i, j); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush passes the SDK's flushes of an event stream on.
func (w splicingWriter) Flush() { http.NewResponseController(w.ResponseWriter).Flush() }

// Unwrap lets http.ResponseController reach the connection's writer.
func (w splicingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
