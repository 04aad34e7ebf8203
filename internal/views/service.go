// Package views is toolq's read side: it turns store rows into what a page or an API response
// shows (health, ages, coverage, costs), once, for both the HTML templates and the JSON API.
// It holds no SQL and no HTML.
package views

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/tracelink"
)

// Options configure a Service. Store is required.
type Options struct {
	Store      *store.Store
	Thresholds Thresholds       // zero fields take DefaultThresholds
	Now        func() time.Time // default time.Now
	// AdviceOff are the ids of the advisor's rules not to evaluate (--advice-off); an id that is
	// no rule's is an error of New's callers to catch (see AdviceRuleByID).
	AdviceOff []string
	// Dimensions name the tool-call dimensions the collector keeps with each sampled message
	// (collector.Dimension), in the order the pages list them.
	Dimensions []string
	// ErrorDimension names the dimension that holds why a tool call failed, shown as a
	// message's reason when it carries no EventBridge failure attributes; "" for none.
	ErrorDimension string

	// Changes is the bus whose events say that the store changed (the collector's cycles and
	// samples, move tasks; this replica's and, relayed, the others'). With it, one snapshot
	// serves every read until a change, and Run builds and announces the next
	// (events.SnapshotBuilt, on the same bus). Without it, every read builds its own.
	Changes *events.Bus
	// MinInterval is the least time between two builds that changes start (default
	// DefaultMinInterval); Lag how long after a change a read may still be answered from the
	// snapshot before it while Run builds the next (default 0: for as long as the build takes,
	// a read never waits once there is a snapshot; negative: none, every read after a change
	// waits for the snapshot that has it).
	MinInterval time.Duration
	Lag         time.Duration
	Logger      *slog.Logger // default: discard
	// ArchiveRetention is how long the archive keeps discarded messages (--archive-retention),
	// shown beside its size; 0: forever.
	ArchiveRetention time.Duration
	// TraceURL links a message's trace (--trace-url); the zero Template links none.
	TraceURL tracelink.Template
}

// Service is the read side: it turns store rows into what the pages and the API show.
type Service struct {
	store     *store.Store
	th        Thresholds
	now       func() time.Time
	adviceOff map[string]bool
	dims      []string
	errorDim  string
	// archiveRetention: Options.ArchiveRetention.
	archiveRetention time.Duration
	traceURL         tracelink.Template
	log              *slog.Logger
	snaps            snapshots
	// breakdowns guards the samples' breakdowns (sampleFacts.breakdown), counted once a sample.
	breakdowns sync.Mutex
}

// New returns a Service.
func New(opts Options) *Service {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	off := make(map[string]bool, len(opts.AdviceOff))
	for _, id := range opts.AdviceOff {
		off[id] = true
	}
	s := &Service{store: opts.Store, th: opts.Thresholds.withDefaults(), now: opts.Now, adviceOff: off,
		dims: append([]string{}, opts.Dimensions...), errorDim: opts.ErrorDimension, archiveRetention: opts.ArchiveRetention,
		traceURL: opts.TraceURL, log: cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))}
	s.snaps = snapshots{bus: opts.Changes, minInterval: cmp.Or(max(opts.MinInterval, 0), DefaultMinInterval),
		lag: opts.Lag}
	// The history reaches as far back as the growth rule looks, with a margin for a clock that
	// runs a little ahead of the samples'.
	s.snaps.memory.history.keep = growthBack(s.th.GrowthWindow) + 5*time.Minute
	s.snaps.watch()
	return s
}

// Dimensions returns the names of the tool-call dimensions, in the pages' order.
func (s *Service) Dimensions() []string { return append([]string{}, s.dims...) }

// Thresholds returns the thresholds in force, defaults filled in.
func (s *Service) Thresholds() Thresholds { return s.th }

// clock returns now in UTC, so that every time the views produce marshals the same way.
func (s *Service) clock() time.Time { return s.now().UTC() }

// QueueKey is a watched queue as a handler resolved it, once: its id goes down to the by-id
// methods, its name titles pages, its Ref names it in links.
type QueueKey struct {
	ID     int64
	Name   string
	ARN    string
	Region string
	// Ref is how links name the queue: its name, or its ARN when queues of several regions or
	// accounts share the name.
	Ref string
}

// ResolveQueue finds the queue a reference (a name or an ARN) names: ErrNotFound, ErrAmbiguous
// (a name several queues share). Gone queues resolve too, so that their history stays reachable.
func (s *Service) ResolveQueue(ctx context.Context, ref string) (QueueKey, error) {
	q, err := s.store.ResolveQueue(ctx, ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return QueueKey{}, choices.Wrap(storeError(err), ref, s.watchedNames(ctx))
	case err != nil:
		return QueueKey{}, storeError(err)
	}
	return s.keyOf(ctx, q)
}

// watchedNames are the names of the watched queues, for the hint of a reference that names none;
// none when they cannot be read (the refusal stands without its hint).
func (s *Service) watchedNames(ctx context.Context) []string {
	queues, err := s.store.ListQueues(ctx, store.QueueFilter{})
	if err != nil {
		s.log.Warn("views: list queues for a hint", "err", err)
		return nil
	}
	names := make([]string, 0, len(queues))
	for _, q := range queues {
		names = append(names, q.Name)
	}
	return names
}

// QueueKeyByID returns the key of the queue with that id (ErrNotFound).
func (s *Service) QueueKeyByID(ctx context.Context, id int64) (QueueKey, error) {
	q, err := s.store.GetQueue(ctx, id)
	if err != nil {
		return QueueKey{}, storeError(err)
	}
	return s.keyOf(ctx, q)
}

// keyOf returns q's key, its Ref the ARN when its name is ambiguous.
func (s *Service) keyOf(ctx context.Context, q store.Queue) (QueueKey, error) {
	k := QueueKey{ID: q.ID, Name: q.Name, ARN: q.ARN, Region: q.Region, Ref: q.Name}
	twins, err := s.store.GetQueuesByName(ctx, q.Name)
	if err != nil {
		return QueueKey{}, fmt.Errorf("views: %w", err)
	}
	if len(twins) > 1 {
		k.Ref = q.ARN
	}
	return k, nil
}

// queue returns the stored queue of an id, ErrNotFound when there is none.
func (s *Service) queue(ctx context.Context, id int64) (store.Queue, error) {
	q, err := s.store.GetQueue(ctx, id)
	if err != nil {
		return store.Queue{}, storeError(err)
	}
	return q, nil
}

// storeError maps the store's lookup errors to the views' own.
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case errors.Is(err, store.ErrAmbiguous):
		return fmt.Errorf("%w: %w", ErrAmbiguous, err)
	}
	return fmt.Errorf("views: %w", err)
}

// timePtr returns nil for the zero time, so that JSON says null rather than year 1.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
