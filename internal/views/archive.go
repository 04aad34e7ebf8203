package views

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/store"
)

// ArchivedMessage is a message a discard took out of a dead-letter queue, as the archive keeps
// it: whole, with what the triage read of it, who discarded it, and whether a restore sent it
// back. Binary attribute values are base64, byte for byte.
type ArchivedMessage struct {
	ID                  int64             `json:"archiveId"`
	Queue               string            `json:"queue"`
	QueueARN            string            `json:"queueArn"`
	MessageID           string            `json:"messageId"`
	ToolName            string            `json:"toolName"`
	ToolCallID          string            `json:"toolCallId"`
	SessionID           string            `json:"sessionId"`
	GroupID             string            `json:"groupId,omitempty"`
	DeduplicationID     string            `json:"deduplicationId,omitempty"`
	SequenceNumber      string            `json:"sequenceNumber,omitempty"`
	Dimensions          map[string]string `json:"dimensions"`
	Reason              string            `json:"reason,omitempty"`
	Body                string            `json:"body"`
	BodyPreview         string            `json:"bodyPreview"`
	BodySize            int               `json:"bodySize"`
	BodyHash            string            `json:"bodyHash"`
	MessageAttributes   []ArchivedAttr    `json:"messageAttributes"`
	SystemAttributes    map[string]string `json:"systemAttributes"`
	DeadLetterSourceARN string            `json:"deadLetterSourceArn,omitempty"`
	TraceHeader         string            `json:"traceHeader,omitempty"`
	SentAt              *time.Time        `json:"sentAt"`
	ReceiveCount        int               `json:"receiveCount"`
	DiscardJobID        int64             `json:"discardJobId"`
	DiscardedBy         string            `json:"discardedBy"`
	DiscardedAt         time.Time         `json:"discardedAt"`
	RestoredAt          *time.Time        `json:"restoredAt"`
	RestoredTo          string            `json:"restoredTo,omitempty"`
	RestoreJobID        *int64            `json:"restoreJobId"`
}

// ArchivedAttr is one message attribute of an archived message: a string value, or a binary
// one as base64.
type ArchivedAttr struct {
	Name        string `json:"name"`
	DataType    string `json:"dataType"`
	StringValue string `json:"stringValue,omitempty"`
	BinaryValue string `json:"binaryValue,omitempty"`
}

// ArchivePage is a page of the archive, newest first, and the cursor of the next.
type ArchivePage struct {
	Queue      string            `json:"queue,omitempty"` // "" across every queue
	Messages   []ArchivedMessage `json:"messages"`
	NextCursor string            `json:"nextCursor,omitempty"`
	Stats      ArchiveStats      `json:"stats"`
}

// ArchiveStats is the archive's size, for /status and the pages.
type ArchiveStats struct {
	Messages  int64      `json:"messages"`
	BodyBytes int64      `json:"bodyBytes"`
	Oldest    *time.Time `json:"oldestDiscardedAt"`
	// RetentionDays is --archive-retention in days; 0 keeps archived messages forever.
	RetentionDays float64 `json:"retentionDays"`
}

// ArchiveQuery filters the archive: a tool, a search text (ignoring ASCII case, in the body, ids
// and tool fields, dimension values), restored or not, a page of Limit after Cursor.
type ArchiveQuery struct {
	ToolName string
	Search   string
	Cursor   string
	Limit    int
}

// archiveCursor is an archive page's cursor: the id to read before.
func archiveCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("a" + strconv.FormatInt(id, 10)))
}

func decodeArchiveCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(raw) < 2 || raw[0] != 'a' {
		return 0, ErrBadCursor
	}
	id, err := strconv.ParseInt(string(raw[1:]), 10, 64)
	if err != nil || id <= 0 {
		return 0, ErrBadCursor
	}
	return id, nil
}

// maxArchiveScanned bounds the rows one page of a filtered archive reads.
const maxArchiveScanned = 5000

// Archive returns a page of the archive of a queue (queueID 0: every queue), newest first.
func (s *Service) Archive(ctx context.Context, queueID int64, aq ArchiveQuery) (ArchivePage, error) {
	out := ArchivePage{Messages: []ArchivedMessage{}}
	if queueID != 0 {
		q, err := s.queue(ctx, queueID)
		if err != nil {
			return ArchivePage{}, err
		}
		out.Queue = q.Name
	}
	limit := aq.Limit
	if limit <= 0 || limit > MaxMessageLimit {
		limit = DefaultMessageLimit
	}
	var before int64
	if aq.Cursor != "" {
		id, err := decodeArchiveCursor(aq.Cursor)
		if err != nil {
			return ArchivePage{}, fmt.Errorf("%w: not an archive cursor", ErrBadCursor)
		}
		before = id
	}
	more := false // the scan stopped at its bound with rows left to read
	for scanned := 0; len(out.Messages) <= limit; {
		if scanned >= maxArchiveScanned {
			more = true
			break
		}
		rows, err := s.store.ArchivedMessages(ctx, store.ArchiveFilter{QueueID: queueID, BeforeID: before, Limit: 200})
		if err != nil {
			return ArchivePage{}, fmt.Errorf("views: archive: %w", err)
		}
		for _, m := range rows {
			if archiveMatches(m, aq) {
				out.Messages = append(out.Messages, archivedOf(m))
			}
		}
		scanned += len(rows)
		if len(rows) < 200 {
			break
		}
		before = rows[len(rows)-1].ID
	}
	switch {
	case len(out.Messages) > limit:
		out.Messages = out.Messages[:limit]
		out.NextCursor = archiveCursor(out.Messages[limit-1].ID)
	case more:
		// A narrow filter over a large archive: the next page goes on where this scan stopped,
		// so that a short page never reads as the end.
		out.NextCursor = archiveCursor(before)
	}
	stats, err := s.ArchiveStats(ctx)
	if err != nil {
		return ArchivePage{}, err
	}
	out.Stats = stats
	return out, nil
}

// ArchivedMessageByID returns the newest archived copy of a message of a queue.
func (s *Service) ArchivedMessageByID(ctx context.Context, queueID int64, messageID string) (ArchivedMessage, error) {
	m, err := s.store.ArchivedMessage(ctx, queueID, messageID)
	if err != nil {
		return ArchivedMessage{}, storeError(err)
	}
	return archivedOf(m), nil
}

// ArchiveStats returns the archive's size and the retention it is kept for.
func (s *Service) ArchiveStats(ctx context.Context) (ArchiveStats, error) {
	st, err := s.store.ArchiveStats(ctx)
	if err != nil {
		return ArchiveStats{}, fmt.Errorf("views: archive: %w", err)
	}
	return ArchiveStats{Messages: st.Messages, BodyBytes: st.BodyBytes, Oldest: timePtr(st.Oldest), RetentionDays: s.archiveRetention.Hours() / 24}, nil
}

// archiveMatches applies an archive query's tool and search to a message.
func archiveMatches(m store.ArchivedMessage, aq ArchiveQuery) bool {
	if aq.ToolName != "" && m.ToolName != aq.ToolName {
		return false
	}
	if aq.Search == "" {
		return true
	}
	q := strings.ToLower(aq.Search)
	for _, v := range []string{m.Body, m.MessageID, m.GroupID, m.DeduplicationID, m.ToolName, m.ToolCallID, m.SessionID} {
		if strings.Contains(strings.ToLower(v), q) {
			return true
		}
	}
	for _, v := range m.Dimensions {
		if strings.Contains(strings.ToLower(v), q) {
			return true
		}
	}
	return false
}

// archivedOf turns an archived row into its view.
func archivedOf(m store.ArchivedMessage) ArchivedMessage {
	out := ArchivedMessage{
		ID: m.ID, Queue: arn.QueueName(m.QueueARN), QueueARN: m.QueueARN, MessageID: m.MessageID,
		ToolName: m.ToolName, ToolCallID: m.ToolCallID, SessionID: m.SessionID, GroupID: m.GroupID,
		DeduplicationID: m.DeduplicationID, SequenceNumber: m.SequenceNumber, Dimensions: m.Dimensions,
		Reason: m.Reason, Body: m.Body, BodyPreview: bodyPreview(m.Body), BodySize: len(m.Body), BodyHash: m.BodyHash,
		MessageAttributes: []ArchivedAttr{}, SystemAttributes: m.SystemAttributes,
		DeadLetterSourceARN: m.DeadLetterSourceARN, TraceHeader: m.TraceHeader, SentAt: timePtr(m.SentAt),
		ReceiveCount: m.ReceiveCount, DiscardJobID: m.JobID, DiscardedBy: m.DiscardedBy, DiscardedAt: m.DiscardedAt.UTC(),
		RestoredAt: timePtr(m.RestoredAt), RestoredTo: m.RestoredTo,
	}
	if out.Dimensions == nil {
		out.Dimensions = map[string]string{}
	}
	if out.SystemAttributes == nil {
		out.SystemAttributes = map[string]string{}
	}
	if m.RestoreJobID != 0 {
		id := m.RestoreJobID
		out.RestoreJobID = &id
	}
	for name, v := range m.MessageAttributes {
		a := ArchivedAttr{Name: name, DataType: v.DataType, StringValue: v.StringValue}
		if v.BinaryValue != nil {
			a.BinaryValue = base64.StdEncoding.EncodeToString(v.BinaryValue)
		}
		out.MessageAttributes = append(out.MessageAttributes, a)
	}
	sortAttrs(out.MessageAttributes)
	return out
}

func sortAttrs(a []ArchivedAttr) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Name < a[j-1].Name; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
