package views

// This file is the views' contract, written first so that the API and the pages can be built
// against it at the same time. The owner replaces each stub with the real method in the file of
// its concern and deletes this file.

import (
	"context"
	"errors"
	"time"

	"github.com/toolq/toolq/internal/store"
)

var errStub = errors.New("views: not implemented yet")

// Options configure a Service. Store is required.
type Options struct {
	Store      *store.Store
	Thresholds Thresholds
	Now        func() time.Time // default time.Now
}

// Service is the read side: it turns store rows into what the pages and the API show.
type Service struct {
	store *store.Store
	th    Thresholds
	now   func() time.Time
}

// New returns a Service.
func New(opts Options) *Service {
	return &Service{store: opts.Store, th: opts.Thresholds, now: opts.Now}
}

// ResolveQueue finds a queue by name or ARN (ErrNotFound, ErrAmbiguous).
func (s *Service) ResolveQueue(ctx context.Context, ref string) (store.Queue, error) {
	return store.Queue{}, errStub
}

// Overview returns every watched queue, unhealthy first, with totals, freshness and cost.
func (s *Service) Overview(ctx context.Context) (Overview, error) { return Overview{}, errStub }

// Queues returns the queues that match q, in the overview's order.
func (s *Service) Queues(ctx context.Context, q QueueQuery) ([]QueueSummary, error) {
	return nil, errStub
}

// Queue returns one queue with all its attributes and newest metric values.
func (s *Service) Queue(ctx context.Context, ref string) (QueueDetail, error) {
	return QueueDetail{}, errStub
}

// Series returns a metric of a queue over [since, until).
func (s *Service) Series(ctx context.Context, ref, metric string, since, until time.Time) (Series, error) {
	return Series{}, errStub
}

// Groups returns the per-group backlog of a FIFO queue's newest sample.
func (s *Service) Groups(ctx context.Context, ref string) (Groups, error) { return Groups{}, errStub }

// Messages returns a page of a queue's newest sample.
func (s *Service) Messages(ctx context.Context, ref string, q MessageQuery) (MessagePage, error) {
	return MessagePage{}, errStub
}

// Message returns one sampled message.
func (s *Service) Message(ctx context.Context, ref, messageID string) (Message, error) {
	return Message{}, errStub
}

// Redrives returns a dead-letter queue's move tasks, newest first.
func (s *Service) Redrives(ctx context.Context, ref string) ([]Redrive, error) { return nil, errStub }

// Audit returns audit entries, newest first.
func (s *Service) Audit(ctx context.Context, f store.AuditFilter) ([]AuditEntry, error) {
	return nil, errStub
}

// Summary returns what a chatops bot posts.
func (s *Service) Summary(ctx context.Context) (Summary, error) { return Summary{}, errStub }

// Text renders a Summary as plain text for chat.
func (s Summary) Text() string { return "" }

// Freshness says how old the newest attribute cycle is.
func (s *Service) Freshness(ctx context.Context) (Freshness, error) { return Freshness{}, errStub }
