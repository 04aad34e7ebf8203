// Package engine moves chosen messages out of a dead-letter queue, which a move task cannot: a
// selection job (store.SelectionJob) scans the whole queue, receiving with a hold, sends each
// message that its Selection names to its own source queue (or a chosen one) with its body,
// message attributes, trace header and FIFO group, and deletes it from the dead-letter queue only
// after the send succeeded. Every step is written to the job's journal before it is taken, and
// each step can be taken again: a restarted job (kill -9, a new leader) deletes what its journal
// says was sent, sends again with the same deduplication id what was being sent, and lets what
// it held come back by itself when the hold ends.
//
// A discard is the same job with the archive in place of the send: each matched message is
// stored whole in toolq's archive, that committed, and only then deleted from the DLQ. A restore
// sends archived messages to a queue again, journaled the same way.
//
// The actions create jobs (validated, audited, one per queue, never beside a move task); the
// engine runs them on the replica that leads, and nothing else in toolq receives, sends or
// deletes to move a message.
package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// SQSAPI is the part of *sqs.Client a job uses.
type SQSAPI interface {
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Store is the part of the store the engine uses.
type Store interface {
	GetQueue(ctx context.Context, id int64) (store.Queue, error)
	GetSelectionJob(ctx context.Context, id int64) (store.SelectionJob, error)
	RunnableSelectionJobs(ctx context.Context) ([]store.SelectionJob, error)
	SaveSelectionJob(ctx context.Context, j store.SelectionJob) error
	WriteJournal(ctx context.Context, jobID int64, entries []store.JournalEntry) error
	JournalOf(ctx context.Context, jobID int64, messageIDs []string) (map[string]store.JournalEntry, error)
	JournalInState(ctx context.Context, jobID int64, state, after string, limit int) ([]store.JournalEntry, error)
	JournalCounts(ctx context.Context, jobID int64) (map[string]int64, error)
	RememberSelection(ctx context.Context, jobID int64, now time.Time) error
	// The archive, for discards and restores.
	Archive(ctx context.Context, jobID int64, msgs []store.ArchivedMessage, entries []store.JournalEntry) error
	ArchivedMessages(ctx context.Context, f store.ArchiveFilter) ([]store.ArchivedMessage, error)
	MarkRestored(ctx context.Context, jobID int64, ids []int64, restoredTo string, at time.Time, entries []store.JournalEntry) error
}

// MessageReader reads a received message as the triage does (collector.ReadMessage), so that a
// selection matches what the pages group and count.
type MessageReader func(queueID int64, m types.Message) store.SampledMessage

// Options configure an Engine. Clients, Store and Read are required.
type Options struct {
	// Clients are the SQS clients by scope (store.Scope), as the actions have them.
	Clients map[string]SQSAPI
	Store   Store
	Read    MessageReader
	// ErrorDimension is the dimension that says why a call failed, for Selection.Reasons.
	ErrorDimension string
	// Publisher tells the pages of a job's progress (MoveTasksChanged). Default events.Discard.
	Publisher events.Publisher
	Logger    *slog.Logger
	// Hold is the visibility timeout of the job's receives, extended while the job runs
	// (default 10 minutes, at most 12 hours as SQS allows).
	Hold time.Duration
	// Workers is how many receive-send-delete loops a job runs at once (default 4).
	Workers int
	// Poll is how often the engine looks for jobs to run and for cancels (default 1 s).
	Poll time.Duration
	// InFlightLimit is how many messages a job holds at most before it stops its scan, below
	// SQS's in-flight limit (default 110,000 on a standard queue, 18,000 on a FIFO queue).
	InFlightLimit int
	// WaitTimeSeconds is the long poll of the job's receives: a receive that finds nothing within
	// it ends a worker's scan (default 1).
	WaitTimeSeconds int32
	Now             func() time.Time
}

// Engine runs selection jobs.
type Engine struct {
	opts Options
	pub  events.Publisher
	log  *slog.Logger
	now  func() time.Time
	wake chan struct{}

	mu      sync.Mutex
	running map[int64]bool
}

// New returns an Engine. It panics without a Store or a reader, a wiring mistake.
func New(opts Options) *Engine {
	if opts.Store == nil || opts.Read == nil {
		panic("engine: Options.Store and Options.Read are required")
	}
	opts.Hold = min(cmp.Or(opts.Hold, 10*time.Minute), 12*time.Hour)
	opts.Workers = cmp.Or(opts.Workers, 4)
	opts.Poll = cmp.Or(opts.Poll, time.Second)
	opts.WaitTimeSeconds = cmp.Or(opts.WaitTimeSeconds, 1)
	e := &Engine{opts: opts, pub: opts.Publisher, log: opts.Logger, now: opts.Now, wake: make(chan struct{}, 1), running: map[int64]bool{}}
	if e.pub == nil {
		e.pub = events.Discard
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.now == nil {
		e.now = time.Now
	}
	return e
}

// Wake tells a running engine that a job was created or cancelled, so that it does not wait for
// its next poll.
func (e *Engine) Wake() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Run runs every RUNNING or CANCELLING job of the store until ctx ends, and each new one as it
// is created: call it on the replica that leads. A job under way when ctx ends stops between two
// steps and is resumed from its journal by the next Run (here or on the next leader).
func (e *Engine) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(e.opts.Poll)
	defer tick.Stop()
	for {
		jobs, err := e.opts.Store.RunnableSelectionJobs(ctx)
		if err != nil && ctx.Err() == nil {
			e.log.Warn("engine: list the jobs to run", "err", err)
		}
		for _, j := range jobs {
			if e.claim(j.ID) {
				wg.Go(func() {
					defer e.release(j.ID)
					e.runJob(ctx, j)
				})
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-e.wake:
		}
	}
}

func (e *Engine) claim(id int64) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.running[id] {
		return false
	}
	e.running[id] = true
	return true
}

func (e *Engine) release(id int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.running, id)
}

// DeduplicationID is the MessageDeduplicationId a job sends a message with: the same for every
// try of the same job and message, so that SQS drops a send retried within five minutes (on a
// FIFO destination), and different across jobs, so that a second redrive of the same call is
// delivered.
func DeduplicationID(jobID int64, messageID string) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "toolq-job-%d/%s", jobID, messageID))
	return hex.EncodeToString(sum[:])
}
