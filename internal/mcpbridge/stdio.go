package mcpbridge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one message from the client. toolq takes request bodies of 64 KiB at most, so a
// longer call would be refused there anyway; the margin is for what the bridge answers itself.
const maxLine = 1 << 20

// LineTransport is the bridge's side of stdio: one JSON-RPC message a line, as the MCP
// specification frames them. Unlike the SDK's StdioTransport, which reads one JSON stream and
// ends the session at its first mistake, it answers a line that is not one message (not JSON,
// cut short, a batch, too long) with a JSON-RPC error, as toolq's /mcp answers such a request,
// and reads the next line: a client's one bad line must not take every tool away from it until
// it restarts the bridge.
type LineTransport struct {
	// In carries the client's messages (os.Stdin); it is closed with the connection when it is
	// an io.Closer. Out carries the bridge's (os.Stdout).
	In  io.Reader
	Out io.Writer
}

// Connect starts reading In.
func (t *LineTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &lineConn{in: t.In, out: t.Out, lines: make(chan inputLine), closed: make(chan struct{})}
	go c.readLines()
	return c, nil
}

// inputLine is one line of input, or the error that ended the input.
type inputLine struct {
	text    []byte
	tooLong bool
	err     error
}

type lineConn struct {
	in      io.Reader
	out     io.Writer
	writeMu sync.Mutex
	lines   chan inputLine

	closeOnce sync.Once
	closed    chan struct{}
}

// readLines sends each line of the input to Read, then the error that ended it (io.EOF when the
// client hung up). It runs until then, or until the connection closes: a read of stdin cannot
// be interrupted, so it may outlive the connection by one line, as the SDK's reader does.
func (c *lineConn) readLines() {
	br := bufio.NewReaderSize(c.in, 64<<10)
	for {
		text, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(text)) > 0 || tooLong {
			select {
			case c.lines <- inputLine{text: text, tooLong: tooLong}:
			case <-c.closed:
				return
			}
		}
		if err != nil {
			select {
			case c.lines <- inputLine{err: err}:
			case <-c.closed:
			}
			return
		}
	}
}

// readLine reads up to the next newline, without it; past maxLine it keeps reading to the
// newline but keeps nothing more, and says so.
func readLine(br *bufio.Reader) (text []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(text)+len(chunk) > maxLine+1 {
				text, tooLong = nil, true
			} else {
				text = append(text, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimRight(text, "\r\n"), tooLong, err
	}
}

// Read returns the client's next message, after answering every line before it that is not one.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		var l inputLine
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.closed:
			return nil, io.EOF
		case l = <-c.lines:
		}
		if l.err != nil {
			return nil, l.err
		}
		msg, refusal := decodeLine(l)
		if refusal == nil {
			return msg, nil
		}
		if err := c.writeLine(refusal); err != nil {
			return nil, err
		}
	}
}

// decodeLine returns the message of a line, or the JSON-RPC error that answers it.
func decodeLine(l inputLine) (jsonrpc.Message, []byte) {
	text := bytes.TrimSpace(l.text)
	switch {
	case l.tooLong:
		return nil, Refusal(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf("the message is over %d bytes", maxLine))
	case !json.Valid(text):
		return nil, Refusal(nil, jsonrpc.CodeParseError, "parse error: the line is not one JSON value (one message a line, each ended by a newline)")
	case text[0] == '[':
		return nil, Refusal(nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not served: send one message a line")
	}
	msg, err := jsonrpc.DecodeMessage(text)
	if err != nil {
		return nil, Refusal(text, jsonrpc.CodeInvalidRequest, "invalid request: the line is not a JSON-RPC 2.0 message")
	}
	return msg, nil
}

// Refusal is the JSON-RPC error answering a message that is refused, on a line of the bridge's
// or in a POST to toolq's /mcp: with the message's id when it has one that can be read, null
// otherwise, as JSON-RPC 2.0 asks.
func Refusal(text []byte, code int64, message string) []byte {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	id := json.RawMessage("null")
	if json.Unmarshal(text, &m) == nil && len(m.ID) > 0 && (m.ID[0] == '"' || m.ID[0] == '-' || m.ID[0] >= '0' && m.ID[0] <= '9') {
		id = m.ID
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return b
}

// Write writes one message on one line.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcpbridge: encode a message: %w", err)
	}
	return c.writeLine(b)
}

func (c *lineConn) writeLine(b []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(b, '\n'))
	return err
}

// Close ends the connection: Read returns, and the input is closed when it can be.
func (c *lineConn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if cl, ok := c.in.(io.Closer); ok {
			err = cl.Close()
		}
	})
	return err
}

// SessionID is empty: stdio has no sessions.
func (c *lineConn) SessionID() string { return "" }
