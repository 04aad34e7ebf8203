package server

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
)

// messagesPerPage is how many sampled messages one page lists.
const messagesPerPage = 50

// messagesPage answers GET /queues/{queue}/messages?tool=&q=&groupBy=&<dimension>=&cursor=: the
// queue's newest sample, searched, filtered and grouped; an HTMX request (the filter form) gets
// the list alone.
func (s *Server) messagesPage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	q, err := s.messageQuery(c, "tool")
	if err != nil {
		return err
	}
	q.Limit = messagesPerPage
	m, err := s.opts.Views.Messages(c.Request().Context(), key.ID, q)
	if err != nil {
		return err
	}
	d, err := s.opts.Views.Queue(c.Request().Context(), key.ID)
	if err != nil {
		return err
	}
	sel, err := s.selectionForm(c.Request().Context(), d, identity(c))
	if err != nil {
		return err
	}
	p := templates.MessagesProps{
		Page:      s.page(c, "Messages of "+key.Name, "", ""),
		Ref:       key.Ref,
		QueueName: key.Name,
		Messages:  m,
		Tool:      q.ToolName,
		Cursor:    q.Cursor,
		Query:     q,
		Selection: sel,
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.MessageList(p))
	}
	return render(c, http.StatusOK, templates.MessagesPage(p))
}

// messagePage answers GET /queues/{queue}/messages/{messageId}: one sampled message, its body
// pretty-printed and escaped.
func (s *Server) messagePage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	id, err := messageIDParam(c)
	if err != nil {
		return err
	}
	m, err := s.opts.Views.Message(c.Request().Context(), key.ID, id)
	if err != nil {
		return err
	}
	d, err := s.opts.Views.Queue(c.Request().Context(), key.ID)
	if err != nil {
		return err
	}
	sel, err := s.selectionForm(c.Request().Context(), d, identity(c))
	if err != nil {
		return err
	}
	p := templates.MessageProps{
		Page:      s.page(c, "Message of "+key.Name, "", ""),
		Ref:       key.Ref,
		QueueName: key.Name,
		Message:   m,
		Pretty:    safetext.Visible(m.PrettyBody()), // a raw ESC or NEL would hide what follows it
		Selection: sel,
	}
	return render(c, http.StatusOK, templates.MessagePage(p))
}

// exportLimit bounds an export: a sample holds at most what the collector's cap let in, but the
// export must not grow without end if that cap grows.
const exportLimit = 10000

// sampleExport is the JSON export of a queue's newest sample.
type sampleExport struct {
	Queue         string          `json:"queue"`
	SampledAt     *time.Time      `json:"sampledAt"`
	Seen          int             `json:"seen"`
	ApproxVisible int64           `json:"approxVisible"`
	Coverage      float64         `json:"coverage"`
	Messages      []views.Message `json:"messages"`
	// dimensions are the names of the tool calls' dimensions, in their configured order: the
	// CSV export's columns (the JSON export carries each message's own).
	dimensions []string
}

// readSample reads every message of the queue's newest sample, page by page.
func (s *Server) readSample(c echo.Context) (sampleExport, error) {
	key, err := s.queueOf(c)
	if err != nil {
		return sampleExport{}, err
	}
	ctx := c.Request().Context()
	var out sampleExport
	cursor := ""
	for {
		m, err := s.opts.Views.Messages(ctx, key.ID, views.MessageQuery{Cursor: cursor, Limit: 500})
		if err != nil {
			return sampleExport{}, err
		}
		if out.Messages == nil {
			out = sampleExport{Queue: m.Queue, SampledAt: m.SampledAt, Seen: m.Seen, ApproxVisible: m.ApproxVisible,
				Coverage: m.Coverage, Messages: []views.Message{}, dimensions: m.Dimensions}
		}
		out.Messages = append(out.Messages, m.Messages...)
		if m.NextCursor == "" || m.NextCursor == cursor || len(out.Messages) >= exportLimit {
			return out, nil
		}
		cursor = m.NextCursor
	}
}

// exportMessagesJSON answers GET /queues/{queue}/messages.json: the sample as a download.
func (s *Server) exportMessagesJSON(c echo.Context) error {
	sample, err := s.readSample(c)
	if err != nil {
		return err
	}
	setDownload(c, sample.Queue, "json")
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(sample); err != nil { // escapes <, > and & too: safe even if opened as HTML
		return fmt.Errorf("export json: %w", err)
	}
	c.Response().WriteHeader(http.StatusOK)
	_, err = c.Response().Write(escapeJSONControls(buf.Bytes()))
	return err
}

// escapeJSONControls writes DEL and the C1 control characters of encoded JSON as \u escapes,
// as encoding/json already does for C0: the export decodes to the same text, and a file opened
// in a terminal or an editor shows them instead of obeying them. In JSON these characters can
// only stand inside strings, where an escape means the same.
func escapeJSONControls(b []byte) []byte {
	if !bytes.ContainsFunc(b, func(r rune) bool { return r >= 0x7f && r <= 0x9f }) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x7f && r <= 0x9f {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// csvHeader is the first row of the CSV export, before a column per dimension
// ("dimension.<name>") and the failure reason.
var csvHeader = []string{
	"messageId", "groupId", "deduplicationId", "sequenceNumber", "receives.all", "receives.consumers", "receives.toolq", "sentAt", "ageSeconds",
	"toolName", "toolCallId", "sessionId", "deadLetterSource", "bodySize", "bodyTruncated", "body",
}

// exportMessagesCSV answers GET /queues/{queue}/messages.csv: the sample as a spreadsheet-safe
// download.
func (s *Server) exportMessagesCSV(c echo.Context) error {
	sample, err := s.readSample(c)
	if err != nil {
		return err
	}
	setDownload(c, sample.Queue, "csv")
	c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	header := slices.Clone(csvHeader)
	for _, d := range sample.dimensions {
		header = append(header, "dimension."+d)
	}
	header = append(header, "reason")
	for i := range header {
		header[i] = csvSafe(safetext.Visible(header[i]))
	}
	if err := w.Write(header); err != nil {
		return fmt.Errorf("export csv: %w", err)
	}
	for _, m := range sample.Messages {
		sent := ""
		if m.SentAt != nil {
			sent = m.SentAt.UTC().Format(time.RFC3339)
		}
		row := []string{
			m.MessageID, m.GroupID, m.DeduplicationID, m.SequenceNumber,
			strconv.Itoa(m.Receives.All), strconv.Itoa(m.Receives.Consumers), strconv.Itoa(m.Receives.Toolq), sent,
			strconv.FormatFloat(m.AgeSeconds, 'f', 0, 64), m.ToolName, m.ToolCallID, m.SessionID,
			m.DeadLetterSource, strconv.Itoa(m.BodySize), strconv.FormatBool(m.BodyTruncated), m.Body,
		}
		for _, d := range sample.dimensions {
			row = append(row, m.Dimensions[d])
		}
		reason := ""
		if m.Reason != nil {
			reason = m.Reason.Text()
		}
		row = append(row, reason)
		for i := range row {
			row[i] = csvSafe(safetext.Visible(row[i]))
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("export csv: %w", err)
		}
	}
	w.Flush()
	return w.Error()
}

// csvSafe defuses a cell that a spreadsheet would run as a formula: one starting with = + - @
// (or a tab or carriage return, which some spreadsheets skip before looking) gets a leading quote.
func csvSafe(cell string) string {
	if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
		return "'" + cell
	}
	return cell
}

// setDownload names the download after the queue, keeping only characters that are safe in a
// Content-Disposition filename whatever the queue is called.
func setDownload(c echo.Context, queue, ext string) {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, queue)
	if name == "" {
		name = "queue"
	}
	c.Response().Header().Set(echo.HeaderContentDisposition, `attachment; filename="`+name+`-messages.`+ext+`"`)
}
