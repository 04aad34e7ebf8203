package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SaveSample stores one peek pass with its messages and group backlog in one transaction, and
// returns the sample id.
func (s *Store) SaveSample(ctx context.Context, sample Sample, messages []SampledMessage, groups []GroupBacklog) (int64, error) {
	if sample.Kind == "" {
		sample.Kind = SampleDeadLetter
	}
	if sample.OldestSentAt.IsZero() {
		sample.OldestSentAt = oldestSent(messages)
	}
	// Marshal before the transaction: the writer connection is shared, so hold it for SQL only.
	attrs := make([]string, len(messages))
	dims := make([]string, len(messages))
	for i, m := range messages {
		if m.Attributes == nil {
			m.Attributes = []MessageAttribute{}
		}
		js, err := json.Marshal(m.Attributes)
		if err != nil {
			return 0, fmt.Errorf("store: save sample of queue %d: attributes of %q: %w", sample.QueueID, m.MessageID, err)
		}
		attrs[i] = string(js)
		if m.Dimensions == nil {
			m.Dimensions = map[string]string{}
		}
		if js, err = json.Marshal(m.Dimensions); err != nil {
			return 0, fmt.Errorf("store: save sample of queue %d: dimensions of %q: %w", sample.QueueID, m.MessageID, err)
		}
		dims[i] = string(js)
	}
	var id int64
	err := s.inTx(ctx, func(tx *dbTx) error {
		err := tx.QueryRowContext(ctx, `
			INSERT INTO samples (queue_id, kind, at, seen, approx_visible, receives, messages_taken, capped, error, oldest_sent_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			sample.QueueID, string(sample.Kind), ms(sample.At), sample.Seen, sample.ApproxVisible,
			sample.Receives, sample.MessagesTaken, sample.Capped, sample.Error, ms(sample.OldestSentAt)).Scan(&id)
		if err != nil {
			return notFoundOnFK(err)
		}
		if len(messages) > 0 {
			if err := saveSampledMessages(ctx, tx, id, sample, messages, attrs, dims); err != nil {
				return err
			}
		}
		if len(groups) > 0 {
			stmt, err := tx.PrepareContext(ctx, `
				INSERT INTO group_backlog (sample_id, group_id, messages, oldest_sent_at,
					head_message_id, head_receive_count, blocked)
				VALUES (?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (sample_id, group_id) DO UPDATE SET messages = excluded.messages,
					oldest_sent_at = excluded.oldest_sent_at, head_message_id = excluded.head_message_id,
					head_receive_count = excluded.head_receive_count, blocked = excluded.blocked`)
			if err != nil {
				return err
			}
			defer stmt.Close()
			for _, g := range groups {
				if _, err := stmt.ExecContext(ctx, id, g.GroupID, g.Messages, ms(g.OldestSentAt),
					g.HeadMessageID, g.HeadReceiveCount, g.Blocked); err != nil {
					return fmt.Errorf("group %q: %w", g.GroupID, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("store: save sample of queue %d: %w", sample.QueueID, err)
	}
	return id, nil
}

// saveSampledMessages stores each message once per queue (what it is) and once per sample (how
// this sample saw it). A message seen again takes the dimensions of the latest sighting, so that
// dimensions declared after it arrived apply to it too.
//
// The rows go in multi-row statements of sampleBatch messages: PostgreSQL pays a round trip a
// statement, and one per message made a pass of 500 messages take a quarter of a second. One
// statement may not touch a row twice (PostgreSQL refuses an ON CONFLICT that would), so a
// message a standard queue delivered twice in the pass is merged first: what it is from its first
// delivery, its dimensions from the last, the higher counts.
func saveSampledMessages(ctx context.Context, tx *dbTx, sampleID int64, sample Sample, messages []SampledMessage, attrs, dims []string) error {
	type sighting struct {
		i                  int // the first delivery's index in messages
		dims               string
		receives, ownRecvs int
		nearMax            bool
	}
	var order []string
	seen := make(map[string]*sighting, len(messages))
	for i, m := range messages {
		if g, ok := seen[m.MessageID]; ok {
			g.dims = dims[i]
			g.receives, g.ownRecvs = max(g.receives, m.ReceiveCount), max(g.ownRecvs, m.OwnReceives)
			g.nearMax = g.nearMax || m.NearMaxReceive
			continue
		}
		seen[m.MessageID] = &sighting{i: i, dims: dims[i], receives: m.ReceiveCount, ownRecvs: m.OwnReceives, nearMax: m.NearMaxReceive}
		order = append(order, m.MessageID)
	}
	at := ms(sample.At)
	for chunk := range slices.Chunk(order, sampleBatch) {
		const cols = 20
		args := make([]any, 0, len(chunk)*cols)
		for _, id := range chunk {
			g := seen[id]
			m := messages[g.i]
			args = append(args, sample.QueueID, m.MessageID, m.GroupID, m.DeduplicationID,
				m.SequenceNumber, ms(m.SentAt), ms(m.FirstReceivedAt), m.DeadLetterSourceARN, attrs[g.i], m.Body, m.BodySize,
				m.BodyTruncated, m.ToolName, m.ToolCallID, m.SessionID, at, g.dims, m.BodyHash, at, m.TraceHeader)
		}
		// first_seen is set once, by the sample that first saw the message, and never updated:
		// the bounce-backs of a redrive are told by when they came (redrives.go).
		rows, err := tx.QueryContext(ctx, `
			INSERT INTO messages (queue_id, message_id, group_id, deduplication_id, sequence_number, sent_at,
				first_received_at, dead_letter_source_arn, attributes, body, body_size, body_truncated, tool_name,
				tool_call_id, session_id, last_seen, dimensions, body_hash, first_seen, trace_header)
			VALUES `+valueRows(len(chunk), cols)+`
			ON CONFLICT (queue_id, message_id) DO UPDATE SET last_seen = greatest(messages.last_seen, excluded.last_seen),
				dimensions = excluded.dimensions
			RETURNING message_id, id`, args...)
		if err != nil {
			return fmt.Errorf("messages: %w", err)
		}
		refs := make(map[string]int64, len(chunk))
		for rows.Next() {
			var id string
			var ref int64
			if err := rows.Scan(&id, &ref); err != nil {
				rows.Close()
				return fmt.Errorf("messages: %w", err)
			}
			refs[id] = ref
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("messages: %w", err)
		}
		args = args[:0]
		for _, id := range chunk {
			ref, ok := refs[id]
			if !ok {
				return fmt.Errorf("message %q: no row id returned", id)
			}
			g := seen[id]
			args = append(args, sampleID, ref, g.receives, g.ownRecvs, g.nearMax)
		}
		if _, err := tx.ExecContext(ctx, `
			INSERT INTO sample_messages (sample_id, message_ref, receive_count, own_receives, near_max_receive)
			VALUES `+valueRows(len(chunk), 5), args...); err != nil {
			return fmt.Errorf("sightings: %w", err)
		}
	}
	return nil
}

// sampleBatch is how many messages one statement stores: 20 arguments each stays far below
// either engine's limit on arguments (32,766 in SQLite, 65,535 in PostgreSQL).
const sampleBatch = 200

// valueRows returns n rows of cols placeholders for a multi-row VALUES: "(?, ?), (?, ?)".
func valueRows(n, cols int) string {
	row := "(" + placeholders(cols) + ")"
	return strings.TrimSuffix(strings.Repeat(row+", ", n), ", ")
}

const sampleColumns = `id, queue_id, kind, at, seen, approx_visible, receives, messages_taken, capped, error, oldest_sent_at`

func scanSample(r rowScanner) (Sample, error) {
	var sm Sample
	var kind string
	var at, oldest int64
	err := r.Scan(&sm.ID, &sm.QueueID, &kind, &at, &sm.Seen, &sm.ApproxVisible, &sm.Receives,
		&sm.MessagesTaken, &sm.Capped, &sm.Error, &oldest)
	if err != nil {
		return Sample{}, err
	}
	sm.Kind, sm.At, sm.OldestSentAt = SampleKind(kind), fromMS(at), fromMS(oldest)
	return sm, nil
}

// oldestSent returns the earliest SentAt of messages; zero when none carries one.
func oldestSent(messages []SampledMessage) time.Time {
	var oldest time.Time
	for _, m := range messages {
		if !m.SentAt.IsZero() && (oldest.IsZero() || m.SentAt.Before(oldest)) {
			oldest = m.SentAt
		}
	}
	return oldest
}

// LatestSample returns the newest sample of a queue.
func (s *Store) LatestSample(ctx context.Context, queueID int64) (Sample, error) {
	sm, err := scanSample(s.db.QueryRowContext(ctx, "SELECT "+sampleColumns+
		" FROM samples WHERE queue_id = ? ORDER BY at DESC, id DESC LIMIT 1", queueID))
	if err != nil {
		return Sample{}, fmt.Errorf("store: latest sample of queue %d: %w", queueID, notFound(err))
	}
	return sm, nil
}

// MessageFilter selects messages of one sample. AfterID is the cursor: messages with a larger
// SampledMessage.ID.
type MessageFilter struct {
	ToolName    string
	NearMaxOnly bool
	// Dimensions keeps the messages whose dimension of each name has that value ("" keeps those
	// without the dimension).
	Dimensions map[string]string
	// Search keeps the messages whose body, message id, group id, deduplication id, tool fields
	// or a dimension value contains it, ignoring ASCII case.
	Search  string
	AfterID int64
	Limit   int // 0: all
}

// where returns the WHERE clause of f over one sample in d's SQL, its parameters numbered after
// the first `before` ones (?1 … ?before belong to the caller), with their arguments.
func (f MessageFilter) where(d dialect, sampleID int64, before int) (string, []any) {
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return "?" + strconv.Itoa(before+len(args))
	}
	query := " WHERE sm.sample_id = " + arg(sampleID) + " AND sm.message_ref > " + arg(f.AfterID)
	if f.ToolName != "" {
		query += " AND m.tool_name = " + arg(f.ToolName)
	}
	if f.NearMaxOnly {
		query += " AND sm.near_max_receive = TRUE"
	}
	for _, name := range slices.Sorted(maps.Keys(f.Dimensions)) {
		query += " AND coalesce(" + d.jsonKey("m.dimensions", arg(d.jsonKeyArg(name))) + ", '') = " + arg(f.Dimensions[name])
	}
	if f.Search != "" {
		like := arg("%" + likeEscaper.Replace(f.Search) + "%")
		var ors []string
		for _, col := range []string{"m.body", "m.message_id", "m.group_id", "m.deduplication_id", "m.tool_name", "m.tool_call_id", "m.session_id"} {
			ors = append(ors, col+" "+d.caseFreeLike()+" "+like+` ESCAPE '\'`)
		}
		ors = append(ors, d.anyJSONValue("m.dimensions", d.caseFreeLike()+" "+like+` ESCAPE '\'`))
		query += " AND (" + strings.Join(ors, " OR ") + ")"
	}
	return query, args
}

// likeEscaper escapes LIKE's wildcards, so that a search for "50%" or "a_b" means those characters.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

const sampledMessageSelect = `
	SELECT sm.message_ref, sm.sample_id, m.queue_id, m.message_id, m.group_id, m.deduplication_id,
		m.sequence_number, sm.receive_count, m.sent_at, m.first_received_at, m.dead_letter_source_arn,
		m.attributes, m.body, m.body_size, m.body_truncated, m.tool_name, m.tool_call_id, m.session_id,
		sm.near_max_receive, sm.own_receives, m.dimensions, m.trace_header
	FROM sample_messages sm JOIN messages m ON m.id = sm.message_ref`

func scanSampledMessage(r rowScanner) (SampledMessage, error) {
	var (
		m                 SampledMessage
		sentAt, firstRecv int64
		attrs, dims       string
	)
	err := r.Scan(&m.ID, &m.SampleID, &m.QueueID, &m.MessageID, &m.GroupID, &m.DeduplicationID,
		&m.SequenceNumber, &m.ReceiveCount, &sentAt, &firstRecv, &m.DeadLetterSourceARN, &attrs,
		&m.Body, &m.BodySize, &m.BodyTruncated, &m.ToolName, &m.ToolCallID, &m.SessionID, &m.NearMaxReceive,
		&m.OwnReceives, &dims, &m.TraceHeader)
	if err != nil {
		return SampledMessage{}, err
	}
	m.SentAt, m.FirstReceivedAt = fromMS(sentAt), fromMS(firstRecv)
	if err := json.Unmarshal([]byte(attrs), &m.Attributes); err != nil {
		return SampledMessage{}, fmt.Errorf("attributes of %q: %w", m.MessageID, err)
	}
	if m.Attributes == nil {
		m.Attributes = []MessageAttribute{}
	}
	if err := json.Unmarshal([]byte(dims), &m.Dimensions); err != nil {
		return SampledMessage{}, fmt.Errorf("dimensions of %q: %w", m.MessageID, err)
	}
	if m.Dimensions == nil {
		m.Dimensions = map[string]string{}
	}
	return m, nil
}

// SampleMessages returns messages of a sample ordered by SampledMessage.ID.
func (s *Store) SampleMessages(ctx context.Context, sampleID int64, f MessageFilter) ([]SampledMessage, error) {
	where, args := f.where(s.d, sampleID, 0)
	query := sampledMessageSelect + where + " ORDER BY sm.message_ref"
	if f.Limit > 0 {
		query += " LIMIT " + strconv.Itoa(f.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: messages of sample %d: %w", sampleID, err)
	}
	defer rows.Close()
	out := []SampledMessage{}
	for rows.Next() {
		m, err := scanSampledMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("store: messages of sample %d: %w", sampleID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: messages of sample %d: %w", sampleID, err)
	}
	return out, nil
}

// NewestSampleMessages returns the n messages of a sample that toolq saw first most recently
// (a DLQ's newest arrivals), newest first.
func (s *Store) NewestSampleMessages(ctx context.Context, sampleID int64, n int) ([]SampledMessage, error) {
	rows, err := s.db.QueryContext(ctx, sampledMessageSelect+" WHERE sm.sample_id = ?1 ORDER BY sm.message_ref DESC LIMIT ?2", sampleID, n)
	if err != nil {
		return nil, fmt.Errorf("store: newest messages of sample %d: %w", sampleID, err)
	}
	defer rows.Close()
	out := []SampledMessage{}
	for rows.Next() {
		m, err := scanSampledMessage(rows)
		if err != nil {
			return nil, fmt.Errorf("store: newest messages of sample %d: %w", sampleID, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: newest messages of sample %d: %w", sampleID, err)
	}
	return out, nil
}

// SampledMessageByID returns a message of a queue's newest sample that holds that message id.
func (s *Store) SampledMessageByID(ctx context.Context, queueID int64, messageID string) (SampledMessage, error) {
	// Walk the queue's samples newest first: the newest usually holds the message, and this needs
	// no index on sample_messages.message_ref.
	m, err := scanSampledMessage(s.db.QueryRowContext(ctx, sampledMessageSelect+`
		JOIN samples s ON s.id = sm.sample_id
		WHERE m.queue_id = ?1 AND m.message_id = ?2 AND s.queue_id = ?1
		ORDER BY s.at DESC, s.id DESC LIMIT 1`, queueID, messageID))
	if err != nil {
		return SampledMessage{}, fmt.Errorf("store: message %q of queue %d: %w", messageID, queueID, notFound(err))
	}
	return m, nil
}

// SampleMessageCount counts the messages of a sample that f keeps (its AfterID and Limit aside).
func (s *Store) SampleMessageCount(ctx context.Context, sampleID int64, f MessageFilter) (int, error) {
	f.AfterID, f.Limit = 0, 0
	where, args := f.where(s.d, sampleID, 0)
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM sample_messages sm JOIN messages m ON m.id = sm.message_ref"+where, args...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: count messages of sample %d: %w", sampleID, err)
	}
	return n, nil
}

// MostOwnReceives returns the most receives toolq made of one message of a sample since that
// message arrived (0 for a sample without messages).
func (s *Store) MostOwnReceives(ctx context.Context, sampleID int64) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(own_receives), 0) FROM sample_messages WHERE sample_id = ?`, sampleID).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: most own receives of sample %d: %w", sampleID, err)
	}
	return n, nil
}

// ValueCount is how many messages of a sample share one value of a field, and when the oldest
// and newest of them were sent.
type ValueCount struct {
	Value       string
	Count       int
	FirstSentAt time.Time // zero when none of them carries a send time
	LastSentAt  time.Time
}

// FieldKind says what a Field groups a sample by.
type FieldKind int

// Field kinds.
const (
	FieldTool      FieldKind = iota // the tool name
	FieldDimension                  // a dimension, by name
	FieldAttribute                  // a message attribute's value, by name
)

// Field is what SampleValueCounts groups by.
type Field struct {
	Kind FieldKind
	Name string // the dimension's or the attribute's
}

// SampleValueCounts groups the messages of a sample that f keeps by one field (messages without
// it share the value ""); largest groups first.
func (s *Store) SampleValueCounts(ctx context.Context, sampleID int64, field Field, f MessageFilter) ([]ValueCount, error) {
	f.AfterID, f.Limit = 0, 0
	var value string
	var args []any
	switch field.Kind {
	case FieldTool:
		value = "m.tool_name"
	case FieldDimension:
		value, args = "coalesce("+s.d.jsonKey("m.dimensions", "?1")+", '')", []any{s.d.jsonKeyArg(field.Name)}
	case FieldAttribute:
		value, args = "coalesce("+s.d.attributeValue("m.attributes", "?1")+", '')", []any{field.Name}
	}
	where, filterArgs := f.where(s.d, sampleID, len(args))
	args = append(args, filterArgs...)
	rows, err := s.db.QueryContext(ctx, `
		SELECT v, n, first_sent, last_sent FROM (
			SELECT `+value+` AS v, count(*) AS n, coalesce(min(nullif(m.sent_at, 0)), 0) AS first_sent, max(m.sent_at) AS last_sent
			FROM sample_messages sm JOIN messages m ON m.id = sm.message_ref`+where+`
			GROUP BY v) AS counts
		ORDER BY n DESC, v = '', v`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: counts by %q of sample %d: %w", field.Name, sampleID, err)
	}
	defer rows.Close()
	out := []ValueCount{}
	for rows.Next() {
		var vc ValueCount
		var first, last int64
		if err := rows.Scan(&vc.Value, &vc.Count, &first, &last); err != nil {
			return nil, fmt.Errorf("store: counts by %q of sample %d: %w", field.Name, sampleID, err)
		}
		vc.FirstSentAt, vc.LastSentAt = fromMS(first), fromMS(last)
		out = append(out, vc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: counts by %q of sample %d: %w", field.Name, sampleID, err)
	}
	return out, nil
}

// SampleGroups returns the group backlog of a sample, oldest message first, with the
// dashboard's own receives of each head (from the head's row of the same sample).
func (s *Store) SampleGroups(ctx context.Context, sampleID int64) ([]GroupBacklog, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT g.sample_id, s.queue_id, g.group_id, g.messages, g.oldest_sent_at, g.head_message_id,
			g.head_receive_count, COALESCE(sm.own_receives, 0), g.blocked
		FROM group_backlog g JOIN samples s ON s.id = g.sample_id
		LEFT JOIN messages m ON m.queue_id = s.queue_id AND m.message_id = g.head_message_id
		LEFT JOIN sample_messages sm ON sm.sample_id = g.sample_id AND sm.message_ref = m.id
		WHERE g.sample_id = ? ORDER BY g.oldest_sent_at, g.group_id`, sampleID)
	if err != nil {
		return nil, fmt.Errorf("store: groups of sample %d: %w", sampleID, err)
	}
	defer rows.Close()
	out := []GroupBacklog{}
	for rows.Next() {
		var g GroupBacklog
		var oldest int64
		if err := rows.Scan(&g.SampleID, &g.QueueID, &g.GroupID, &g.Messages, &oldest, &g.HeadMessageID,
			&g.HeadReceiveCount, &g.HeadOwnReceives, &g.Blocked); err != nil {
			return nil, fmt.Errorf("store: groups of sample %d: %w", sampleID, err)
		}
		g.OldestSentAt = fromMS(oldest)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: groups of sample %d: %w", sampleID, err)
	}
	return out, nil
}

// ReceiveBudget is what the dashboard's own peeks spent on a queue since a time.
type ReceiveBudget struct {
	Receives      int // ReceiveMessage calls
	MessagesTaken int // receive counts raised
	Samples       int
}

// ReceiveBudgetSince sums a queue's samples since a time.
func (s *Store) ReceiveBudgetSince(ctx context.Context, queueID int64, since time.Time) (ReceiveBudget, error) {
	var b ReceiveBudget
	err := s.db.QueryRowContext(ctx, `
		SELECT coalesce(sum(receives), 0), coalesce(sum(messages_taken), 0), count(*)
		FROM samples WHERE queue_id = ? AND at >= ?`, queueID, ms(since)).
		Scan(&b.Receives, &b.MessagesTaken, &b.Samples)
	if err != nil {
		return ReceiveBudget{}, fmt.Errorf("store: receive budget of queue %d: %w", queueID, err)
	}
	return b, nil
}

// GetSample returns one sample by id.
func (s *Store) GetSample(ctx context.Context, id int64) (Sample, error) {
	sm, err := scanSample(s.db.QueryRowContext(ctx, "SELECT "+sampleColumns+" FROM samples WHERE id = ?", id))
	if err != nil {
		return Sample{}, fmt.Errorf("store: get sample %d: %w", id, notFound(err))
	}
	return sm, nil
}

// LatestSamples returns each queue's newest sample, by queue id.
func (s *Store) LatestSamples(ctx context.Context) (map[int64]Sample, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+sampleColumns+` FROM samples WHERE id IN (
		SELECT (SELECT id FROM samples s WHERE s.queue_id = q.id ORDER BY at DESC, id DESC LIMIT 1)
		FROM queues q)`)
	if err != nil {
		return nil, fmt.Errorf("store: latest samples: %w", err)
	}
	defer rows.Close()
	out := map[int64]Sample{}
	for rows.Next() {
		sm, err := scanSample(rows)
		if err != nil {
			return nil, fmt.Errorf("store: latest samples: %w", err)
		}
		out[sm.QueueID] = sm
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: latest samples: %w", err)
	}
	return out, nil
}

// SampleNearMaxCount counts the messages of a sample near their maxReceiveCount.
func (s *Store) SampleNearMaxCount(ctx context.Context, sampleID int64) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx,
		"SELECT count(*) FROM sample_messages WHERE sample_id = ? AND near_max_receive = TRUE", sampleID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: near-max count of sample %d: %w", sampleID, err)
	}
	return n, nil
}

// sampleIDList encodes ids (of samples, queues) for dialect.idTable, which lets one query seek each of them.
func sampleIDList(ids []int64) (string, error) {
	if ids == nil {
		ids = []int64{}
	}
	js, err := json.Marshal(ids)
	return string(js), err
}

func nearMaxCountsQuery(d dialect) string {
	return `
	SELECT j.value, count(*) FROM ` + d.idTable("?") + ` j CROSS JOIN sample_messages sm
	WHERE sm.sample_id = j.value AND sm.near_max_receive = TRUE
	GROUP BY j.value`
}

// NearMaxCounts counts, for each of the samples, its messages near their maxReceiveCount (what
// SampleNearMaxCount counts for one), in one query; a sample without any is absent.
func (s *Store) NearMaxCounts(ctx context.Context, sampleIDs []int64) (map[int64]int, error) {
	if len(sampleIDs) == 0 {
		return map[int64]int{}, nil
	}
	return s.nearMaxCounts(ctx, sampleIDs)
}

func (s *Store) nearMaxCounts(ctx context.Context, sampleIDs []int64) (map[int64]int, error) {
	list, err := sampleIDList(sampleIDs)
	if err != nil {
		return nil, fmt.Errorf("store: near-max counts: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, nearMaxCountsQuery(s.d), list)
	if err != nil {
		return nil, fmt.Errorf("store: near-max counts: %w", err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, fmt.Errorf("store: near-max counts: %w", err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: near-max counts: %w", err)
	}
	return out, nil
}

func groupsOfSamplesQuery(d dialect) string {
	return `
	SELECT g.sample_id, s.queue_id, g.group_id, g.messages, g.oldest_sent_at, g.head_message_id,
		g.head_receive_count, COALESCE(sm.own_receives, 0), g.blocked
	FROM ` + d.idTable("?") + ` j CROSS JOIN group_backlog g JOIN samples s ON s.id = g.sample_id
	LEFT JOIN messages m ON m.queue_id = s.queue_id AND m.message_id = g.head_message_id
	LEFT JOIN sample_messages sm ON sm.sample_id = g.sample_id AND sm.message_ref = m.id
	WHERE g.sample_id = j.value
	ORDER BY g.sample_id, g.oldest_sent_at, g.group_id`
}

// GroupsOfSamples returns the FIFO groups of each of the samples (what SampleGroups returns of
// one), oldest message first, by sample id, in one query; a sample without any is absent.
func (s *Store) GroupsOfSamples(ctx context.Context, sampleIDs []int64) (map[int64][]GroupBacklog, error) {
	if len(sampleIDs) == 0 {
		return map[int64][]GroupBacklog{}, nil
	}
	return s.groupsOfSamples(ctx, sampleIDs)
}

func (s *Store) groupsOfSamples(ctx context.Context, sampleIDs []int64) (map[int64][]GroupBacklog, error) {
	list, err := sampleIDList(sampleIDs)
	if err != nil {
		return nil, fmt.Errorf("store: groups of samples: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, groupsOfSamplesQuery(s.d), list)
	if err != nil {
		return nil, fmt.Errorf("store: groups of samples: %w", err)
	}
	defer rows.Close()
	out := map[int64][]GroupBacklog{}
	for rows.Next() {
		var g GroupBacklog
		var oldest int64
		if err := rows.Scan(&g.SampleID, &g.QueueID, &g.GroupID, &g.Messages, &oldest, &g.HeadMessageID,
			&g.HeadReceiveCount, &g.HeadOwnReceives, &g.Blocked); err != nil {
			return nil, fmt.Errorf("store: groups of samples: %w", err)
		}
		g.OldestSentAt = fromMS(oldest)
		out[g.SampleID] = append(out[g.SampleID], g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: groups of samples: %w", err)
	}
	return out, nil
}

// OwnReceive is what one sample of a queue spent: the receive counts it raised, at its time.
type OwnReceive struct {
	At            time.Time
	MessagesTaken int
}

// OwnReceivesBetween returns a queue's samples in [since, until), oldest first, as what each
// raised: the dashboard's own part of the queue's NumberOfMessagesReceived.
func (s *Store) OwnReceivesBetween(ctx context.Context, queueID int64, since, until time.Time) ([]OwnReceive, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT at, messages_taken FROM samples
		WHERE queue_id = ? AND at >= ? AND at < ? ORDER BY at, id`, queueID, ms(since), ms(until))
	if err != nil {
		return nil, fmt.Errorf("store: own receives of queue %d: %w", queueID, err)
	}
	defer rows.Close()
	out := []OwnReceive{}
	for rows.Next() {
		var at int64
		var r OwnReceive
		if err := rows.Scan(&at, &r.MessagesTaken); err != nil {
			return nil, fmt.Errorf("store: own receives of queue %d: %w", queueID, err)
		}
		r.At = fromMS(at)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: own receives of queue %d: %w", queueID, err)
	}
	return out, nil
}
