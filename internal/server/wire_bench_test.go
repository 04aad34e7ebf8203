package server

import (
	"bufio"
	"bytes"
	"compress/flate"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// wireConn is a websocket client that reads frames off the wire (RFC 6455) with
// permessage-deflate negotiated (RFC 7692, no context takeover either way, as gorilla's server
// offers it), for the websocket benchmark: it takes a message's arrival without inflating it,
// as a browser on a machine of its own would spend its own CPU on that. It answers pings, and
// inflates a message only when asked to check it.
type wireConn struct {
	conn       net.Conn
	r          *bufio.Reader
	payload    bytes.Buffer  // the message read last, as sent
	compressed bool          // whether it was
	inflater   io.ReadCloser // reused from message to message
}

// dialWire connects from local to the websocket at wsURL and asks for permessage-deflate.
func dialWire(local *net.TCPAddr, wsURL, origin string) (*wireConn, error) {
	u, err := url.Parse(wsURL)
	if err != nil {
		return nil, err
	}
	conn, err := (&net.Dialer{LocalAddr: local}).Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	var key [16]byte
	_, _ = rand.Read(key[:])
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nOrigin: %s\r\n"+
		"Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n\r\n",
		u.RequestURI(), u.Host, base64.StdEncoding.EncodeToString(key[:]), origin)
	if _, err := io.WriteString(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	r := bufio.NewReaderSize(conn, 32<<10)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSwitchingProtocols {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: %s", resp.Status)
	}
	if !strings.Contains(resp.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate") {
		conn.Close()
		return nil, fmt.Errorf("websocket handshake: the server did not accept permessage-deflate (%q)", resp.Header.Get("Sec-WebSocket-Extensions"))
	}
	return &wireConn{conn: conn, r: r}, nil
}

func (c *wireConn) Close() error { return c.conn.Close() }

// readMessage reads frames until a whole data message has arrived, keeps it as sent (payload),
// and reports whether it is a message with rows: in this benchmark every push's message of rows
// or cells carries a hundred rows' changes, 0.9 KB or more even deflated, and a message of the
// freshness line alone is under 0.3 KB, so the size as sent tells without inflating. (The
// message of a push's parts, which comes after its rows, may be as large, with a long problem
// list: the benchmark waits for the first large message of each push.) checkRows inflates the
// message to check that the size told right.
func (c *wireConn) readMessage() (rows bool, err error) {
	c.payload.Reset()
	compressed := false
	for {
		var head [2]byte
		if _, err := io.ReadFull(c.r, head[:]); err != nil {
			return false, err
		}
		fin, opcode := head[0]&0x80 != 0, head[0]&0x0f
		if head[1]&0x80 != 0 {
			return false, fmt.Errorf("a masked frame from the server")
		}
		n := uint64(head[1] & 0x7f)
		switch n {
		case 126:
			var ext [2]byte
			if _, err := io.ReadFull(c.r, ext[:]); err != nil {
				return false, err
			}
			n = uint64(binary.BigEndian.Uint16(ext[:]))
		case 127:
			var ext [8]byte
			if _, err := io.ReadFull(c.r, ext[:]); err != nil {
				return false, err
			}
			n = binary.BigEndian.Uint64(ext[:])
		}
		switch opcode {
		case 0x8: // close
			return false, io.EOF
		case 0x9, 0xa: // ping, pong: control frames are short and never fragmented
			body := make([]byte, n)
			if _, err := io.ReadFull(c.r, body); err != nil {
				return false, err
			}
			if opcode == 0x9 {
				if err := c.pong(body); err != nil {
					return false, err
				}
			}
			continue
		case 0x1, 0x2: // the first frame of a message says whether it is compressed (RSV1)
			compressed = head[0]&0x40 != 0
		}
		if _, err := io.CopyN(&c.payload, c.r, int64(n)); err != nil {
			return false, err
		}
		if fin {
			break
		}
	}
	c.compressed = compressed
	return c.payload.Len() >= rowsSize, nil
}

// rowsSize is the size as sent from which a message of the benchmark is a push with rows.
const rowsSize = 512

// checkRows inflates the message readMessage read and fails when it carries rows and
// readMessage said it did not, or the other way round.
func (c *wireConn) checkRows(rows bool) error {
	all, err := c.inflate()
	if err != nil {
		return err
	}
	has, parts := bytes.Contains(all, []byte(rowMark)), bytes.Contains(all, []byte(partsMark))
	if rows && !has && !parts || !rows && has {
		return fmt.Errorf("a message of %d bytes as sent (rows=%t by its size) says otherwise inflated: %.80q", c.payload.Len(), rows, all)
	}
	return nil
}

// partsMark is in every message of an overview push's parts, which always carry the freshness.
const partsMark = `id="freshness"`

// rowMark is in every push that carries overview rows (their ids, and the cells' swaps).
const rowMark = "queue-row-"

// inflate returns the message as it was before compression.
func (c *wireConn) inflate() ([]byte, error) {
	if !c.compressed {
		return c.payload.Bytes(), nil
	}
	// RFC 7692 7.2.2: the sender removed the final empty block's tail; put it back to inflate.
	in := io.MultiReader(bytes.NewReader(c.payload.Bytes()), strings.NewReader("\x00\x00\xff\xff"))
	if c.inflater == nil {
		c.inflater = flate.NewReader(in)
	} else if err := c.inflater.(flate.Resetter).Reset(in, nil); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(c.inflater)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return b, nil
}

// pong answers a ping with its payload, masked as a client's frames must be.
func (c *wireConn) pong(body []byte) error {
	frame := []byte{0x8a, 0x80 | byte(len(body))}
	var mask [4]byte
	_, _ = rand.Read(mask[:])
	frame = append(frame, mask[:]...)
	for i, b := range body {
		frame = append(frame, b^mask[i%4])
	}
	_, err := c.conn.Write(frame)
	return err
}
