package store

// This file is the store's contract, written first so that the collector, the views and the
// server can be built against it at the same time. The store's owner replaces each stub with the
// real method in the file of its concern (queues.go, samples.go, ...) and deletes this file.

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

var errStub = errors.New("store: not implemented yet")

// Store is toolq's SQLite database.
type Store struct {
	db *sql.DB
}

// Open opens (creating if needed) the SQLite file at path, sets WAL, a busy timeout and foreign
// keys, and applies the embedded migrations. ":memory:" is not supported (use a file in t.TempDir()).
func Open(ctx context.Context, path string) (*Store, error) { return nil, errStub }

// Close closes the database.
func (s *Store) Close() error { return errStub }

// Ping checks that the database answers (for /readyz).
func (s *Store) Ping(ctx context.Context) error { return errStub }

// --- queues ---

// UpsertQueue inserts or updates a queue by ARN (name, URL, region, FIFO, LastSeen; clears GoneAt;
// sets FirstSeen on insert) and returns its id. It leaves attributes, redrive and peek fields alone.
func (s *Store) UpsertQueue(ctx context.Context, q Queue) (int64, error) { return 0, errStub }

// SaveQueueAttributes records the latest attributes of a queue, the redrive fields parsed from
// them (deadLetterTargetARN "" and maxReceiveCount 0 when there is no RedrivePolicy), and appends
// the depth sample.
func (s *Store) SaveQueueAttributes(ctx context.Context, queueID int64, at time.Time, attrs map[string]string, deadLetterTargetARN string, maxReceiveCount int, sample AttributeSample) error {
	return errStub
}

// SetListedSources records what ListDeadLetterSourceQueues returned for a dead-letter queue.
func (s *Store) SetListedSources(ctx context.Context, queueID int64, sourceARNs []string) error {
	return errStub
}

// SetPeekEnabled records whether the collector samples the queue's messages.
func (s *Store) SetPeekEnabled(ctx context.Context, queueID int64, enabled bool) error {
	return errStub
}

// SetBackfilled records that the CloudWatch backfill of a queue ran.
func (s *Store) SetBackfilled(ctx context.Context, queueID int64, at time.Time) error { return errStub }

// MarkQueueGone records that a queue disappeared; its history stays.
func (s *Store) MarkQueueGone(ctx context.Context, queueID int64, at time.Time) error { return errStub }

// QueueFilter selects queues.
type QueueFilter struct {
	IncludeGone bool
	Region      string // empty: all
}

// ListQueues returns queues ordered by name, with SourceARNs filled in.
func (s *Store) ListQueues(ctx context.Context, f QueueFilter) ([]Queue, error) { return nil, errStub }

// GetQueue returns one queue by id.
func (s *Store) GetQueue(ctx context.Context, id int64) (Queue, error) { return Queue{}, errStub }

// GetQueueByARN returns one queue by ARN.
func (s *Store) GetQueueByARN(ctx context.Context, arn string) (Queue, error) {
	return Queue{}, errStub
}

// GetQueuesByName returns the queues of that name (one per region and account at most).
func (s *Store) GetQueuesByName(ctx context.Context, name string) ([]Queue, error) {
	return nil, errStub
}

// --- attribute samples ---

// LatestAttributeSamples returns each queue's newest depth sample, by queue id.
func (s *Store) LatestAttributeSamples(ctx context.Context) (map[int64]AttributeSample, error) {
	return nil, errStub
}

// AttributeSeries returns a queue's depth samples in [since, until), oldest first, raw and
// rolled-up rows together.
func (s *Store) AttributeSeries(ctx context.Context, queueID int64, since, until time.Time) ([]AttributeSample, error) {
	return nil, errStub
}

// --- CloudWatch datapoints ---

// UpsertMetricPoints stores datapoints, replacing any with the same queue, metric, period and time.
func (s *Store) UpsertMetricPoints(ctx context.Context, points []MetricPoint) error { return errStub }

// NewestMetricTimes returns, by queue id, the time of the newest 60-s datapoint of any metric.
func (s *Store) NewestMetricTimes(ctx context.Context) (map[int64]time.Time, error) {
	return nil, errStub
}

// MetricSeries returns one metric of one queue in [since, until), oldest first, any period.
func (s *Store) MetricSeries(ctx context.Context, queueID int64, metric string, since, until time.Time) ([]MetricPoint, error) {
	return nil, errStub
}

// LatestMetricValues returns each metric's newest datapoint of a queue, by metric name.
func (s *Store) LatestMetricValues(ctx context.Context, queueID int64) (map[string]MetricPoint, error) {
	return nil, errStub
}

// --- message samples ---

// SaveSample stores one peek pass with its messages and group backlog in one transaction, and
// returns the sample id.
func (s *Store) SaveSample(ctx context.Context, sample Sample, messages []SampledMessage, groups []GroupBacklog) (int64, error) {
	return 0, errStub
}

// LatestSample returns the newest sample of a queue.
func (s *Store) LatestSample(ctx context.Context, queueID int64) (Sample, error) {
	return Sample{}, errStub
}

// MessageFilter selects messages of one sample. AfterID is the cursor: rows with a larger id.
type MessageFilter struct {
	ToolName    string
	NearMaxOnly bool
	AfterID     int64
	Limit       int // 0: all
}

// SampleMessages returns messages of a sample ordered by row id.
func (s *Store) SampleMessages(ctx context.Context, sampleID int64, f MessageFilter) ([]SampledMessage, error) {
	return nil, errStub
}

// SampledMessageByID returns a message of a queue's newest sample that holds that message id.
func (s *Store) SampledMessageByID(ctx context.Context, queueID int64, messageID string) (SampledMessage, error) {
	return SampledMessage{}, errStub
}

// ToolCount is how many messages of a sample carry one tool name.
type ToolCount struct {
	ToolName string
	Count    int
}

// SampleToolCounts returns the messages of a sample counted by tool name, largest first.
func (s *Store) SampleToolCounts(ctx context.Context, sampleID int64) ([]ToolCount, error) {
	return nil, errStub
}

// SampleGroups returns the group backlog of a sample, oldest message first.
func (s *Store) SampleGroups(ctx context.Context, sampleID int64) ([]GroupBacklog, error) {
	return nil, errStub
}

// ReceiveBudget is what the dashboard's own peeks spent on a queue since a time.
type ReceiveBudget struct {
	Receives      int // ReceiveMessage calls
	MessagesTaken int // receive counts raised
	Samples       int
}

// ReceiveBudgetSince sums a queue's samples since a time.
func (s *Store) ReceiveBudgetSince(ctx context.Context, queueID int64, since time.Time) (ReceiveBudget, error) {
	return ReceiveBudget{}, errStub
}

// --- move tasks ---

// UpsertMoveTask stores a task keyed by (SourceARN, StartedAt) and returns its id.
func (s *Store) UpsertMoveTask(ctx context.Context, t MoveTask) (int64, error) { return 0, errStub }

// ListMoveTasks returns a dead-letter queue's tasks, newest first; limit 0 means all.
func (s *Store) ListMoveTasks(ctx context.Context, queueID int64, limit int) ([]MoveTask, error) {
	return nil, errStub
}

// RunningMoveTasks returns every task still RUNNING or CANCELLING.
func (s *Store) RunningMoveTasks(ctx context.Context) ([]MoveTask, error) { return nil, errStub }

// --- collector runs and errors ---

// StartRun records the start of a collector pass and returns its id.
func (s *Store) StartRun(ctx context.Context, kind string, at time.Time) (int64, error) {
	return 0, errStub
}

// FinishRun records the end of a pass (FinishedAt, Queues, Calls, Errors) by run.ID.
func (s *Store) FinishRun(ctx context.Context, run CollectorRun) error { return errStub }

// LatestRun returns the newest finished run of a kind.
func (s *Store) LatestRun(ctx context.Context, kind string) (CollectorRun, error) {
	return CollectorRun{}, errStub
}

// RecordError stores a failed AWS call.
func (s *Store) RecordError(ctx context.Context, e CollectorError) error { return errStub }

// ErrorsSince returns errors since a time, newest first; queueID 0 means every queue.
func (s *Store) ErrorsSince(ctx context.Context, queueID int64, since time.Time) ([]CollectorError, error) {
	return nil, errStub
}

// --- cost ---

// SetCostEstimate replaces the stored cost estimate.
func (s *Store) SetCostEstimate(ctx context.Context, c CostEstimate) error { return errStub }

// GetCostEstimate returns the stored cost estimate.
func (s *Store) GetCostEstimate(ctx context.Context) (CostEstimate, error) {
	return CostEstimate{}, errStub
}

// --- audit ---

// AppendAudit stores an audit entry and returns its id.
func (s *Store) AppendAudit(ctx context.Context, e AuditEntry) (int64, error) { return 0, errStub }

// AuditFilter selects audit entries, newest first. BeforeID is the cursor.
type AuditFilter struct {
	QueueName string
	BeforeID  int64
	Limit     int
}

// ListAudit returns audit entries newest first.
func (s *Store) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	return nil, errStub
}

// --- tokens ---

// CreateToken stores a token's hash; ErrConflict when the name is taken by a live token.
func (s *Store) CreateToken(ctx context.Context, name, role string, hash []byte, at time.Time) (Token, error) {
	return Token{}, errStub
}

// TokenByHash returns the live (not revoked) token with that hash.
func (s *Store) TokenByHash(ctx context.Context, hash []byte) (Token, error) {
	return Token{}, errStub
}

// TouchToken records a token's last use.
func (s *Store) TouchToken(ctx context.Context, id int64, at time.Time) error { return errStub }

// ListTokens returns every token, revoked ones included, by name.
func (s *Store) ListTokens(ctx context.Context) ([]Token, error) { return nil, errStub }

// RevokeToken revokes the live token of that name; ErrNotFound when there is none.
func (s *Store) RevokeToken(ctx context.Context, name string, at time.Time) error { return errStub }

// --- retention ---

// PruneResult says what a Prune did.
type PruneResult struct {
	RolledUp int64
	Deleted  int64
}

// Prune rolls up raw samples and datapoints older than r.RawFor into r.RollupPeriod buckets and
// deletes what is older than each kind's retention.
func (s *Store) Prune(ctx context.Context, now time.Time, r Retention) (PruneResult, error) {
	return PruneResult{}, errStub
}
