package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// The archive's pages: the whole archive (GET /archive) and a queue's (GET
// /queues/{queue}/archive), one archived message, the exports, and the restore. The restore
// reviews first, as the selective redrive does: the queue archive's form (or an archived
// message's "Restore this message") posts the selection to POST /queues/{queue}/archive/restore,
// which shows what it names in the archive and where it goes; its form posts again with
// confirm=1, which starts the restore and answers 303 to the queue page, whose redrive panel
// follows it. Without JavaScript all of it works.

// outcomeRestoreStarted: a restore's job started (outcomeNotices says so on the queue page).
const outcomeRestoreStarted = "restore-started"

// archivePageQuery reads an archive page's query: ?tool, ?q, ?cursor, and ?groupBy (toolName or
// reason; anything else groups nothing).
func archivePageQuery(c echo.Context) (views.ArchiveQuery, string, error) {
	var aq views.ArchiveQuery
	var err error
	if aq.ToolName, err = validToolName("tool", c.QueryParam("tool")); err != nil {
		return aq, "", err
	}
	if aq.Search, err = validText("q", c.QueryParam("q"), maxSearch); err != nil {
		return aq, "", err
	}
	if aq.Cursor, err = validText("cursor", c.QueryParam("cursor"), 256); err != nil {
		return aq, "", err
	}
	groupBy := c.QueryParam("groupBy")
	if groupBy != templates.ArchiveGroupTool && groupBy != templates.ArchiveGroupReason {
		groupBy = ""
	}
	return aq, groupBy, nil
}

// wholeArchivePage answers GET /archive?tool=&q=&groupBy=&cursor=: every queue's archived
// messages, newest first.
func (s *Server) wholeArchivePage(c echo.Context) error { return s.showArchive(c, nil) }

// queueArchivePage answers GET /queues/{queue}/archive?tool=&q=&groupBy=&cursor=: the queue's
// archived messages, newest first, with the restore form.
func (s *Server) queueArchivePage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	return s.showArchive(c, &key)
}

// showArchive answers an archive page, whole or of the queue key; an HTMX request (the filter
// form) gets the list alone.
func (s *Server) showArchive(c echo.Context, key *views.QueueKey) error {
	aq, groupBy, err := archivePageQuery(c)
	if err != nil {
		return err
	}
	aq.Limit = messagesPerPage
	ctx := c.Request().Context()
	var queueID int64
	title := "Archive"
	if key != nil {
		queueID, title = key.ID, "Archive of "+key.Name
	}
	a, err := s.opts.Views.Archive(ctx, queueID, aq)
	if err != nil {
		return err
	}
	p := templates.ArchiveProps{
		Page: s.page(c, title, "archive", ""), Archive: a,
		Tool: aq.ToolName, Search: aq.Search, Cursor: aq.Cursor, GroupBy: groupBy,
		Groups: archiveGroups(a.Messages, groupBy),
	}
	if key != nil {
		p.Ref, p.QueueName = key.Ref, key.Name
		d, err := s.opts.Views.Queue(ctx, key.ID)
		if err != nil {
			return err
		}
		if p.Restore, err = s.selectionForm(ctx, d, identity(c)); err != nil {
			return err
		}
	} else if p.Refs, err = s.archiveRefs(ctx, a.Messages); err != nil {
		return err
	}
	if isHTMX(c) {
		return render(c, http.StatusOK, templates.ArchiveList(p))
	}
	return render(c, http.StatusOK, templates.ArchivePage(p))
}

// archiveGroups counts an archive page's rows by tool or by reason: the page's rows only, which
// is what the page says.
func archiveGroups(msgs []views.ArchivedMessage, groupBy string) []templates.NamedCount {
	if groupBy == "" {
		return nil
	}
	counts := map[string]int{}
	for _, m := range msgs {
		if groupBy == templates.ArchiveGroupTool {
			counts[m.ToolName]++
		} else {
			counts[m.Reason]++
		}
	}
	return namedCounts(counts)
}

// archiveRefs resolves, once, how links name the queues of the whole archive's rows.
func (s *Server) archiveRefs(ctx context.Context, msgs []views.ArchivedMessage) (map[string]string, error) {
	refs := map[string]string{}
	for _, m := range msgs {
		if _, ok := refs[m.QueueARN]; ok {
			continue
		}
		key, err := s.opts.Views.ResolveQueue(ctx, m.QueueARN)
		switch {
		case errors.Is(err, views.ErrNotFound), errors.Is(err, views.ErrAmbiguous):
			refs[m.QueueARN] = m.QueueARN
		case err != nil:
			return nil, err
		default:
			refs[m.QueueARN] = key.Ref
		}
	}
	return refs, nil
}

// archivedMessagePage answers GET /queues/{queue}/archive/{messageId}: the newest archived copy
// of a message of the queue, whole, its body pretty-printed and escaped.
func (s *Server) archivedMessagePage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	id, err := messageIDParam(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	m, err := s.opts.Views.ArchivedMessageByID(ctx, key.ID, id)
	if errors.Is(err, views.ErrNotFound) {
		return newError(http.StatusNotFound, "message_not_found", "the archive holds no message of that id from this queue")
	}
	if err != nil {
		return err
	}
	d, err := s.opts.Views.Queue(ctx, key.ID)
	if err != nil {
		return err
	}
	restore, err := s.selectionForm(ctx, d, identity(c))
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, templates.ArchivedMessagePage(templates.ArchivedMessageProps{
		Page: s.page(c, "Archived message of "+key.Name, "archive", ""), Ref: key.Ref, QueueName: key.Name, Message: m,
		// The message page's pretty-printing; a raw ESC or NEL would hide what follows it.
		Pretty:  safetext.Visible(views.Message{Body: m.Body}.PrettyBody()),
		Restore: restore,
	}))
}

// readArchive reads the queue's archived messages that the request's ?tool and ?q name, from the
// newest, up to exportLimit.
func (s *Server) readArchive(c echo.Context, limit int) (views.ArchivePage, error) {
	key, err := s.queueOf(c)
	if err != nil {
		return views.ArchivePage{}, err
	}
	aq, _, err := archivePageQuery(c)
	if err != nil {
		return views.ArchivePage{}, err
	}
	return s.archiveOf(c.Request().Context(), key.ID, views.ArchiveQuery{ToolName: aq.ToolName, Search: aq.Search}, limit)
}

// archiveOf reads a queue's archived messages that aq names, page by page, up to limit: the
// exports and the restore's count.
func (s *Server) archiveOf(ctx context.Context, queueID int64, aq views.ArchiveQuery, limit int) (views.ArchivePage, error) {
	var out views.ArchivePage
	aq.Limit, aq.Cursor = views.MaxMessageLimit, ""
	for {
		a, err := s.opts.Views.Archive(ctx, queueID, aq)
		if err != nil {
			return views.ArchivePage{}, err
		}
		if out.Messages == nil {
			out = views.ArchivePage{Queue: a.Queue, Stats: a.Stats, Messages: []views.ArchivedMessage{}}
		}
		out.Messages = append(out.Messages, a.Messages...)
		if a.NextCursor == "" || a.NextCursor == aq.Cursor || len(out.Messages) >= limit {
			if len(out.Messages) > limit {
				out.Messages = out.Messages[:limit]
			}
			out.NextCursor = a.NextCursor // "" when every message was read
			return out, nil
		}
		aq.Cursor = a.NextCursor
	}
}

// exportArchiveJSON answers GET /queues/{queue}/archive.json?tool=&q=: the archive as a download.
func (s *Server) exportArchiveJSON(c echo.Context) error {
	a, err := s.readArchive(c, exportLimit)
	if err != nil {
		return err
	}
	a.NextCursor = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(a); err != nil { // escapes <, > and & too: safe even if opened as HTML
		return fmt.Errorf("export archive json: %w", err)
	}
	setDownload(c, a.Queue+"-archive", "json")
	c.Response().Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	c.Response().WriteHeader(http.StatusOK)
	_, err = c.Response().Write(escapeJSONControls(buf.Bytes()))
	return err
}

// mimeJSONLines is the type of a JSON Lines download.
const mimeJSONLines = "application/jsonl"

// exportArchiveJSONL answers GET /queues/{queue}/archive.jsonl?tool=&q=: one archived message a
// line, whole (the archive API's shape), for a tool that imports them again.
func (s *Server) exportArchiveJSONL(c echo.Context) error {
	a, err := s.readArchive(c, exportLimit)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // one line a value: JSON escapes every newline inside a string
	for _, m := range a.Messages {
		if err := enc.Encode(m); err != nil {
			return fmt.Errorf("export archive jsonl: %w", err)
		}
	}
	setDownload(c, a.Queue+"-archive", "jsonl")
	c.Response().Header().Set(echo.HeaderContentType, mimeJSONLines)
	c.Response().WriteHeader(http.StatusOK)
	_, err = c.Response().Write(escapeJSONControls(buf.Bytes()))
	return err
}

// archiveCSVHeader is the first row of the archive's CSV export, before a column per configured
// dimension ("dimension.<name>"). Attributes are JSON objects in their cells.
var archiveCSVHeader = []string{
	"archiveId", "queue", "messageId", "groupId", "deduplicationId", "sequenceNumber", "sentAt", "receiveCount",
	"toolName", "toolCallId", "sessionId", "reason", "deadLetterSourceArn", "traceHeader", "bodySize", "bodyHash", "body",
	"messageAttributes", "systemAttributes", "discardedBy", "discardedAt", "restoredAt", "restoredTo",
}

// exportArchiveCSV answers GET /queues/{queue}/archive.csv?tool=&q=: the archive as a
// spreadsheet-safe download.
func (s *Server) exportArchiveCSV(c echo.Context) error {
	a, err := s.readArchive(c, exportLimit)
	if err != nil {
		return err
	}
	dims := s.opts.Views.Dimensions()
	setDownload(c, a.Queue+"-archive", "csv")
	c.Response().Header().Set(echo.HeaderContentType, "text/csv; charset=utf-8")
	c.Response().WriteHeader(http.StatusOK)
	w := csv.NewWriter(c.Response())
	write := func(row []string) error {
		for i := range row {
			row[i] = csvSafe(safetext.Visible(row[i]))
		}
		if err := w.Write(row); err != nil {
			return fmt.Errorf("export archive csv: %w", err)
		}
		return nil
	}
	header := slices.Clone(archiveCSVHeader)
	for _, d := range dims {
		header = append(header, "dimension."+d)
	}
	if err := write(header); err != nil {
		return err
	}
	when := func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
	for _, m := range a.Messages {
		attrs, err := json.Marshal(m.MessageAttributes)
		if err != nil {
			return fmt.Errorf("export archive csv: %w", err)
		}
		sys, err := json.Marshal(m.SystemAttributes)
		if err != nil {
			return fmt.Errorf("export archive csv: %w", err)
		}
		row := []string{
			strconv.FormatInt(m.ID, 10), m.Queue, m.MessageID, m.GroupID, m.DeduplicationID, m.SequenceNumber,
			when(m.SentAt), strconv.Itoa(m.ReceiveCount), m.ToolName, m.ToolCallID, m.SessionID, m.Reason,
			m.DeadLetterSourceARN, m.TraceHeader, strconv.Itoa(m.BodySize), m.BodyHash, m.Body,
			string(attrs), string(sys), m.DiscardedBy, when(&m.DiscardedAt), when(m.RestoredAt), m.RestoredTo,
		}
		for _, d := range dims {
			row = append(row, m.Dimensions[d])
		}
		if err := write(row); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}

// maxRestoreCount bounds the archived messages a restore's confirmation reads to count them.
const maxRestoreCount = exportLimit

// restorePage answers POST /queues/{queue}/archive/restore: the confirmation of a restore from
// the queue's archive, or with confirm=1 its start.
func (s *Server) restorePage(c echo.Context) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	sel, err := selectionOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	p := templates.RestoreConfirmProps{
		Page: s.page(c, "Restore archived messages of "+key.Name, "archive", ""), Ref: key.Ref, QueueName: key.Name,
		Destination: strings.TrimSpace(formText(c, "destination", 300)), // the action checks it
	}
	if c.FormValue("confirm") == "1" {
		started, err := s.opts.Actions.StartRestore(ctx, actor(c), actions.StartRestoreRequest{
			Queue: key.Ref, Selection: &sel, Destination: p.Destination,
			IdempotencyKey: formText(c, "idempotency_key", actions.MaxIdempotencyKey+1), // the action checks it
		})
		if err != nil {
			var ae *actions.Error
			if !errors.As(err, &ae) {
				return err
			}
			p.Error = ae.Message
			return render(c, actionStatus(ae.Kind), templates.RestoreConfirmPage(p))
		}
		outcome := outcomeRestoreStarted
		if started.Repeat {
			outcome = outcomeRepeated
		}
		return c.Redirect(http.StatusSeeOther, p.Nav.QueueURL(key.Ref, url.Values{"done": {outcome}})+"#"+ids.RedrivePanel())
	}
	// The review calls no action: the start checks all of it again, and audits a refusal. It
	// says early what the start would refuse for certain.
	d, err := s.opts.Views.Queue(ctx, key.ID)
	if err != nil {
		return err
	}
	form, err := s.selectionForm(ctx, d, identity(c))
	if err != nil {
		return err
	}
	switch {
	case form == nil:
		p.Error = "No redrive can send from this queue, so none can restore its archive."
		return render(c, http.StatusUnprocessableEntity, templates.RestoreConfirmPage(p))
	case form.Disabled != "":
		p.Error = form.Disabled
		status := http.StatusConflict // a redrive of the queue is running
		if s.opts.Actions.ReadOnly() || !identity(c).CanAct() {
			status = http.StatusForbidden
		}
		return render(c, status, templates.RestoreConfirmPage(p))
	}
	if serr := sel.Check(s.opts.Views.Dimensions(), d.FIFO); serr != nil {
		p.Error = serr.Message
		return render(c, http.StatusUnprocessableEntity, templates.RestoreConfirmPage(p))
	}
	view := views.SelectionJob{Tools: sel.Tools, Dimensions: sel.Dimensions, Reasons: sel.Reasons, Q: sel.Q, MessageIDs: sel.MessageIDs, Groups: sel.Groups}
	p.Selection, p.Fields = templates.SelectionFields(&view), selectionFields(sel)
	if err := s.countRestore(ctx, key.ID, sel, &p); err != nil {
		return err
	}
	// One key per confirmation: every post of this confirmation is the same start.
	p.IdempotencyKey = rand.Text()
	return render(c, http.StatusOK, templates.RestoreConfirmPage(p))
}

// countRestore counts in the queue's archive what a restore's selection names, and where it
// would send them. The archive's filters are a tool and a search, so that a selection by
// dimension, reason or group is not counted here (p.Counted stays false); the forms of the
// archive's pages make none.
func (s *Server) countRestore(ctx context.Context, queueID int64, sel engine.Selection, p *templates.RestoreConfirmProps) error {
	if len(sel.Dimensions) > 0 || len(sel.Reasons) > 0 || len(sel.Groups) > 0 {
		return nil
	}
	aq := views.ArchiveQuery{Search: sel.Q}
	if len(sel.Tools) == 1 {
		aq.ToolName = sel.Tools[0]
	}
	a, err := s.archiveOf(ctx, queueID, aq, maxRestoreCount)
	if err != nil {
		return err
	}
	byTool, byDest := map[string]int{}, map[string]int{}
	for _, m := range a.Messages {
		if len(sel.Tools) > 0 && !slices.Contains(sel.Tools, m.ToolName) || len(sel.MessageIDs) > 0 && !slices.Contains(sel.MessageIDs, m.MessageID) {
			continue
		}
		p.Matched++
		if m.RestoredAt != nil {
			p.Restored++
			continue
		}
		byTool[m.ToolName]++
		dest := p.Destination
		if dest == "" {
			dest = arn.QueueName(m.DeadLetterSourceARN)
		}
		byDest[dest]++
	}
	p.Counted, p.Complete = true, a.NextCursor == ""
	p.ByTool, p.ByDestination = namedCounts(byTool), namedCounts(byDest)
	return nil
}
