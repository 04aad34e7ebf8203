package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/arn"
)

const queueColumns = `id, arn, region, name, url, fifo, first_seen, last_seen, gone_at, attributes,
	attributes_at, dlq_target_arn, max_receive_count, listed_sources, peek_enabled, backfilled_at, peek_paused, account`

// scanQueue reads one row of queueColumns. SourceARNs holds only the listed sources; callers add
// the queues whose RedrivePolicy names this one.
func (s *Store) scanQueue(r rowScanner) (Queue, error) {
	var (
		q                                                  Queue
		fifo, peek                                         bool
		firstSeen, lastSeen, goneAt, attrsAt, backfilledAt int64
		attrs, listed                                      string
	)
	err := r.Scan(&q.ID, &q.ARN, &q.Region, &q.Name, &q.URL, &fifo, &firstSeen, &lastSeen, &goneAt,
		&attrs, &attrsAt, &q.DeadLetterTargetARN, &q.MaxReceiveCount, &listed, &peek, &backfilledAt, &q.PeekPaused, &q.Account)
	if err != nil {
		return Queue{}, err
	}
	if a, err := arn.ParseQueue(q.ARN); err == nil {
		q.AccountID = a.Account
	}
	q.FIFO, q.PeekEnabled = fifo, peek
	q.FirstSeen, q.LastSeen, q.GoneAt = fromMS(firstSeen), fromMS(lastSeen), fromMS(goneAt)
	q.AttributesAt, q.BackfilledAt = fromMS(attrsAt), fromMS(backfilledAt)
	if q.Attributes, err = s.attributes.decode(q.ID, attrs); err != nil {
		return Queue{}, fmt.Errorf("attributes of queue %d: %w", q.ID, err)
	}
	if err := json.Unmarshal([]byte(listed), &q.SourceARNs); err != nil {
		return Queue{}, fmt.Errorf("listed sources of queue %d: %w", q.ID, err)
	}
	return q, nil
}

// UpsertQueue inserts or updates a queue by ARN (name, URL, region, account, FIFO, LastSeen; clears GoneAt;
// sets FirstSeen on insert) and returns its id. It leaves attributes, redrive and peek fields alone.
func (s *Store) UpsertQueue(ctx context.Context, q Queue) (int64, error) {
	if q.ARN == "" {
		return 0, fmt.Errorf("store: upsert queue %q: empty ARN", q.Name)
	}
	lastSeen := q.LastSeen
	if lastSeen.IsZero() {
		lastSeen = q.FirstSeen
	}
	if lastSeen.IsZero() {
		lastSeen = time.Now()
	}
	firstSeen := q.FirstSeen
	if firstSeen.IsZero() {
		firstSeen = lastSeen
	}
	var id int64
	err := s.wdb.QueryRowContext(ctx, `
		INSERT INTO queues (arn, region, account, name, url, fifo, first_seen, last_seen)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (arn) DO UPDATE SET
			region = excluded.region, account = excluded.account, name = excluded.name, url = excluded.url,
			fifo = excluded.fifo, last_seen = excluded.last_seen, gone_at = 0
		RETURNING id`,
		q.ARN, q.Region, q.Account, q.Name, q.URL, q.FIFO, ms(firstSeen), ms(lastSeen)).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("store: upsert queue %q: %w", q.ARN, err)
	}
	return id, nil
}

// QueueAttributes is one GetQueueAttributes reading of a queue, as SaveQueueAttributes stores it.
type QueueAttributes struct {
	QueueID int64
	At      time.Time
	// Attributes is the answer as AWS spelled it.
	Attributes map[string]string
	// DeadLetterTargetARN and MaxReceiveCount are parsed from its RedrivePolicy: "" and 0 when
	// the queue has none.
	DeadLetterTargetARN string
	MaxReceiveCount     int
	// Depth is the reading's depth sample; its time defaults to At.
	Depth AttributeSample
}

// SaveQueueAttributes records the latest attributes of a queue, the redrive fields parsed from
// them, and appends the depth sample.
func (s *Store) SaveQueueAttributes(ctx context.Context, a QueueAttributes) error {
	attrs := a.Attributes
	if attrs == nil {
		attrs = map[string]string{}
	}
	js, err := json.Marshal(attrs)
	if err != nil {
		return fmt.Errorf("store: save attributes of queue %d: %w", a.QueueID, err)
	}
	sample := a.Depth
	if sample.At.IsZero() {
		sample.At = a.At
	}
	err = s.inTx(ctx, func(tx *dbTx) error {
		res, err := tx.ExecContext(ctx, `
			UPDATE queues SET attributes = ?, attributes_at = ?, dlq_target_arn = ?, max_receive_count = ?
			WHERE id = ?`, string(js), ms(a.At), a.DeadLetterTargetARN, a.MaxReceiveCount, a.QueueID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		_, err = tx.ExecContext(ctx, `
			INSERT INTO attribute_samples (queue_id, at, resolution, visible, in_flight, delayed)
			VALUES (?, ?, 0, ?, ?, ?)
			ON CONFLICT (queue_id, at, resolution) DO UPDATE SET
				visible = excluded.visible, in_flight = excluded.in_flight, delayed = excluded.delayed`, a.QueueID, ms(sample.At), sample.Visible, sample.InFlight, sample.Delayed)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: save attributes of queue %d: %w", a.QueueID, err)
	}
	return nil
}

// SetListedSources records what ListDeadLetterSourceQueues returned for a dead-letter queue.
func (s *Store) SetListedSources(ctx context.Context, queueID int64, sourceARNs []string) error {
	if sourceARNs == nil {
		sourceARNs = []string{}
	}
	js, err := json.Marshal(sourceARNs)
	if err != nil {
		return fmt.Errorf("store: set listed sources of queue %d: %w", queueID, err)
	}
	return s.updateQueue(ctx, "set listed sources", queueID, "listed_sources = ?", string(js))
}

// ForgetListedSources clears what ListDeadLetterSourceQueues returned for the queues of a region
// (and account, when not ""), in one statement: a collector that watches every queue of an
// account reads every source's redrive policy, and stops asking.
func (s *Store) ForgetListedSources(ctx context.Context, region, account string) error {
	_, err := s.wdb.ExecContext(ctx, `UPDATE queues SET listed_sources = '[]'
		WHERE region = ?1 AND (account = ?2 OR ?2 = '') AND listed_sources <> '[]'`, region, account)
	if err != nil {
		return fmt.Errorf("store: forget listed sources of %s: %w", Scope(account, region), err)
	}
	return nil
}

// SetPeekEnabled records whether the collector samples the queue's messages.
func (s *Store) SetPeekEnabled(ctx context.Context, queueID int64, enabled bool) error {
	return s.updateQueue(ctx, "set peek", queueID, "peek_enabled = ?", enabled)
}

// SetPeekPaused records why the collector does not sample a queue it may sample, "" when it
// samples it again.
func (s *Store) SetPeekPaused(ctx context.Context, queueID int64, reason string) error {
	return s.updateQueue(ctx, "set peek paused", queueID, "peek_paused = ?", reason)
}

// SetBackfilled records that the CloudWatch backfill of a queue ran.
func (s *Store) SetBackfilled(ctx context.Context, queueID int64, at time.Time) error {
	return s.updateQueue(ctx, "set backfilled", queueID, "backfilled_at = ?", ms(at))
}

// MarkQueueGone records that a queue disappeared; its history stays.
func (s *Store) MarkQueueGone(ctx context.Context, queueID int64, at time.Time) error {
	return s.updateQueue(ctx, "mark gone", queueID, "gone_at = ?", ms(at))
}

// updateQueue sets one column of a queue; ErrNotFound when the queue does not exist.
func (s *Store) updateQueue(ctx context.Context, what string, queueID int64, set string, value any) error {
	if err := s.execOne(ctx, "UPDATE queues SET "+set+" WHERE id = ?", value, queueID); err != nil {
		return fmt.Errorf("store: %s of queue %d: %w", what, queueID, err)
	}
	return nil
}

// QueueFilter selects queues.
type QueueFilter struct {
	IncludeGone bool
	Region      string // empty: all
	// Account is the configured account name (Queue.Account); empty: all.
	Account string
}

// ListQueues returns queues ordered by name, with SourceARNs filled in. The queues' attribute maps
// are shared (attributeMaps): never change them.
func (s *Store) ListQueues(ctx context.Context, f QueueFilter) ([]Queue, error) {
	query := "SELECT " + queueColumns + " FROM queues WHERE 1 = 1"
	var args []any
	if !f.IncludeGone {
		query += " AND gone_at = 0"
	}
	if f.Region != "" {
		query += " AND region = ?"
		args = append(args, f.Region)
	}
	if f.Account != "" {
		query += " AND account = ?"
		args = append(args, f.Account)
	}
	query += " ORDER BY name, region, arn"
	qs, err := s.queryQueues(ctx, query, args...)
	if err == nil {
		err = s.pairAll(ctx, qs)
	}
	if err != nil {
		return nil, fmt.Errorf("store: list queues: %w", err)
	}
	return qs, nil
}

// GetQueue returns one queue by id.
func (s *Store) GetQueue(ctx context.Context, id int64) (Queue, error) {
	return s.getQueue(ctx, "id", id)
}

// GetQueueByARN returns one queue by ARN.
func (s *Store) GetQueueByARN(ctx context.Context, arn string) (Queue, error) {
	return s.getQueue(ctx, "arn", arn)
}

func (s *Store) getQueue(ctx context.Context, column string, key any) (Queue, error) {
	qs, err := s.queryQueues(ctx, "SELECT "+queueColumns+" FROM queues WHERE "+column+" = ?", key)
	if err == nil && len(qs) == 0 {
		err = ErrNotFound
	}
	if err == nil {
		err = s.pairEach(ctx, qs)
	}
	if err != nil {
		return Queue{}, fmt.Errorf("store: get queue by %s %v: %w", column, key, err)
	}
	return qs[0], nil
}

// ResolveQueue finds the queue a reference names: an ARN (arn:…) or a name, which must then be
// unique across regions and accounts (ErrAmbiguous otherwise; ErrNotFound when nothing matches).
// Gone queues resolve too, so that their history stays reachable. Handlers and actions call it
// once, at the edge, and hand the queue or its id down.
func (s *Store) ResolveQueue(ctx context.Context, ref string) (Queue, error) {
	if ref == "" {
		return Queue{}, fmt.Errorf("store: resolve an empty queue reference: %w", ErrNotFound)
	}
	if arn.IsARN(ref) {
		return s.GetQueueByARN(ctx, ref)
	}
	qs, err := s.GetQueuesByName(ctx, ref)
	if err != nil {
		return Queue{}, err
	}
	switch len(qs) {
	case 0:
		return Queue{}, fmt.Errorf("store: queue %q: %w", ref, ErrNotFound)
	case 1:
		return qs[0], nil
	}
	return Queue{}, fmt.Errorf("store: queue %q (%d regions or accounts): %w", ref, len(qs), ErrAmbiguous)
}

// GetQueuesByName returns the queues of that name (one per region and account at most).
func (s *Store) GetQueuesByName(ctx context.Context, name string) ([]Queue, error) {
	qs, err := s.queryQueues(ctx, "SELECT "+queueColumns+" FROM queues WHERE name = ? ORDER BY region, arn", name)
	if err == nil {
		err = s.pairEach(ctx, qs)
	}
	if err != nil {
		return nil, fmt.Errorf("store: get queues by name %q: %w", name, err)
	}
	return qs, nil
}

// queryQueues runs a query over queueColumns. Each queue's SourceARNs are the listed ones until
// pairAll or pairEach adds the redrive pairs.
func (s *Store) queryQueues(ctx context.Context, query string, args ...any) ([]Queue, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	qs := []Queue{}
	for rows.Next() {
		q, err := s.scanQueue(rows)
		if err != nil {
			return nil, err
		}
		qs = append(qs, q)
	}
	return qs, rows.Err()
}

// pairAll completes a list of queues with what names them: the live queues whose RedrivePolicy
// names each one (SourceARNs, with the listed sources) and the EventBridge rules whose targets
// name it as their dead-letter queue. It reads every pair once, for a list of any length.
func (s *Store) pairAll(ctx context.Context, qs []Queue) error {
	if len(qs) == 0 {
		return nil
	}
	sources, err := s.redrivePairs(ctx, "SELECT dlq_target_arn, arn FROM queues WHERE dlq_target_arn <> '' AND gone_at = 0")
	if err != nil {
		return err
	}
	rules, err := s.redrivePairs(ctx, "SELECT DISTINCT dead_letter_arn, rule_arn FROM eventbridge_targets WHERE dead_letter_arn <> '' ORDER BY rule_arn")
	if err != nil {
		return err
	}
	for i := range qs {
		pair(&qs[i], sources[qs[i].ARN], rules[qs[i].ARN])
	}
	return nil
}

// The pairs of one queue, by index: each query repeats its partial index's own condition (not
// the empty string), or SQLite's planner would not know that the index applies and scan instead.
const (
	sourcesOfQuery = "SELECT dlq_target_arn, arn FROM queues WHERE dlq_target_arn = ? AND dlq_target_arn <> '' AND gone_at = 0"
	rulesOfQuery   = "SELECT DISTINCT dead_letter_arn, rule_arn FROM eventbridge_targets WHERE dead_letter_arn = ? AND dead_letter_arn <> '' ORDER BY rule_arn"
)

// pairEach is pairAll for a lookup of a few queues: it reads the pairs of those queues alone, by
// index (queues_dlq_target, eventbridge_targets_dead_letter), so that a lookup of one queue costs
// the same at 10 queues as at 10,000.
func (s *Store) pairEach(ctx context.Context, qs []Queue) error {
	for i := range qs {
		sources, err := s.redrivePairs(ctx, sourcesOfQuery, qs[i].ARN)
		if err != nil {
			return err
		}
		rules, err := s.redrivePairs(ctx, rulesOfQuery, qs[i].ARN)
		if err != nil {
			return err
		}
		pair(&qs[i], sources[qs[i].ARN], rules[qs[i].ARN])
	}
	return nil
}

// redrivePairs runs a query of (target ARN, ARN naming it) rows and maps each target to the ARNs
// that name it, in the query's order.
func (s *Store) redrivePairs(ctx context.Context, query string, args ...any) (map[string][]string, error) {
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := map[string][]string{}
	for rows.Next() {
		var target, by string
		if err := rows.Scan(&target, &by); err != nil {
			return nil, err
		}
		m[target] = append(m[target], by)
	}
	return m, rows.Err()
}

// pair sets q's SourceARNs (its listed sources and those whose RedrivePolicy names it, sorted,
// each once; nil when none) and EventBridgeRuleARNs.
func pair(q *Queue, sources, rules []string) {
	q.EventBridgeRuleARNs = rules
	all := append(q.SourceARNs, sources...)
	slices.Sort(all)
	q.SourceARNs = slices.Compact(all)
	if len(q.SourceARNs) == 0 {
		q.SourceARNs = nil
	}
}

// attributeMaps keeps each queue's attributes decoded, with the JSON they were decoded from:
// the overview lists every queue on every page and push, and decoding a thousand attribute maps
// each time was a tenth of its time, while a queue's attributes change at most once a cycle.
type attributeMaps struct {
	mu sync.Mutex
	m  map[int64]decodedAttributes
}

type decodedAttributes struct {
	raw   string
	attrs map[string]string
}

// decode returns the attributes stored as raw for a queue: the map decoded last time when raw is
// the same. Callers share the map and must not change it (Queue.Attributes says so).
func (a *attributeMaps) decode(queueID int64, raw string) (map[string]string, error) {
	a.mu.Lock()
	if d, ok := a.m[queueID]; ok && d.raw == raw {
		a.mu.Unlock()
		return d.attrs, nil
	}
	a.mu.Unlock()
	attrs := map[string]string{}
	if err := json.Unmarshal([]byte(raw), &attrs); err != nil {
		return nil, err
	}
	if attrs == nil { // the JSON null
		attrs = map[string]string{}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = make(map[int64]decodedAttributes)
	}
	a.m[queueID] = decodedAttributes{raw: raw, attrs: attrs}
	return attrs, nil
}

// TouchQueues records that the queues were listed at `at` (last seen; a queue marked gone that is
// listed again is no longer gone), in one statement for all of them.
func (s *Store) TouchQueues(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	list, err := sampleIDList(ids)
	if err != nil {
		return fmt.Errorf("store: touch queues: %w", err)
	}
	if _, err := s.wdb.ExecContext(ctx, `UPDATE queues SET last_seen = ?, gone_at = 0
		WHERE id IN (SELECT value FROM `+s.d.idTable("?")+` j)`, ms(at), list); err != nil {
		return fmt.Errorf("store: touch queues: %w", err)
	}
	return nil
}
