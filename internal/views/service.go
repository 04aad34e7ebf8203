// Package views is toolq's read side: it turns store rows into what a page or an API response
// shows (health, ages, coverage, costs), once, for both the HTML templates and the JSON API.
// It holds no SQL and no HTML.
package views

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/store"
)

// Options configure a Service. Store is required.
type Options struct {
	Store      *store.Store
	Thresholds Thresholds       // zero fields take DefaultThresholds
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
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{store: opts.Store, th: opts.Thresholds.withDefaults(), now: opts.Now}
}

// Thresholds returns the thresholds in force, defaults filled in.
func (s *Service) Thresholds() Thresholds { return s.th }

// clock returns now in UTC, so that every time the views produce marshals the same way.
func (s *Service) clock() time.Time { return s.now().UTC() }

// ResolveQueue finds a queue by name or ARN (ErrNotFound, ErrAmbiguous). Gone queues resolve too,
// so that their history stays reachable.
func (s *Service) ResolveQueue(ctx context.Context, ref string) (store.Queue, error) {
	if ref == "" {
		return store.Queue{}, fmt.Errorf("views: empty queue reference: %w", ErrNotFound)
	}
	if arn.IsARN(ref) {
		q, err := s.store.GetQueueByARN(ctx, ref)
		if errors.Is(err, store.ErrNotFound) {
			return store.Queue{}, fmt.Errorf("views: queue %q: %w", ref, ErrNotFound)
		}
		if err != nil {
			return store.Queue{}, fmt.Errorf("views: resolve queue: %w", err)
		}
		return q, nil
	}
	qs, err := s.store.GetQueuesByName(ctx, ref)
	if err != nil {
		return store.Queue{}, fmt.Errorf("views: resolve queue: %w", err)
	}
	switch len(qs) {
	case 0:
		return store.Queue{}, fmt.Errorf("views: queue %q: %w", ref, ErrNotFound)
	case 1:
		return qs[0], nil
	default:
		return store.Queue{}, fmt.Errorf("views: queue %q (%d regions): %w", ref, len(qs), ErrAmbiguous)
	}
}

// timePtr returns nil for the zero time, so that JSON says null rather than year 1.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}
