// Package notify tells people and bots what changed: it compares what the views show with what
// it saw last (DLQ arrivals, health changes, blocked sessions, redrives, regions toolq cannot
// see) and stores alerts, which GET /api/v1/events streams; and it sends them to the --notify
// targets (Slack incoming webhooks, signed JSON webhooks, Teams Workflows webhooks, PagerDuty's
// Events API, where each problem is an incident), one message a queue every few minutes
// at most but for news (a kind not told lately, a worse severity), through an outbox in the
// store, with retries, so that a restart neither loses nor repeats one. It reads the views and writes only its own tables: what changed is computed from
// the read side, never by reading AWS again.
package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Defaults of Options.
const (
	DefaultInterval    = 5 * time.Minute
	DefaultSampleWait  = 30 * time.Second
	DefaultTick        = time.Second
	DefaultMaxAttempts = 8
	DefaultRetryBase   = 10 * time.Second
	DefaultTimeout     = 10 * time.Second
)

// Options configure a Service. Views and Store are required.
type Options struct {
	Views *views.Service
	Store *store.Store
	// Bus is followed for changes (each one triggers a check); Publisher is told of new alerts
	// (the event stream follows them). Both may be the same events.Bus.
	Bus       *events.Bus
	Publisher events.Publisher
	Targets   []Target
	// PublicURL starts every link of a message (no trailing slash); "" writes none.
	PublicURL string
	// ChatSafe makes text safe to post to a chat as it is (the summary's chat-safety, which
	// the server owns); required when a Slack or Teams target is configured.
	ChatSafe func(string) string
	// Interval is the least time between two messages of one queue (or region) to one target,
	// unless the second brings news (see news): what only repeats is summarised in the next.
	// Default 5 min.
	Interval time.Duration
	// SampleWait is how long a DLQ arrival waits for a sample that shows its messages, so that
	// its alert names their tools and servers. Default 30 s.
	SampleWait time.Duration
	// Tick is how often the loops look for work besides the bus's events. Default 1 s.
	Tick time.Duration
	// MaxAttempts and RetryBase: a failed delivery is tried again after RetryBase, then twice as
	// long each time, MaxAttempts attempts in all. Defaults 8 and 10 s (about 21 min in all).
	MaxAttempts int
	RetryBase   time.Duration
	// Client posts the messages; default one with Timeout (10 s) that follows no redirect.
	Client  *http.Client
	Timeout time.Duration
	Now     func() time.Time
	Logger  *slog.Logger
	// Registerer receives the notifier's metrics; nil: none.
	Registerer prometheus.Registerer
}

// Service detects alerts and delivers notifications.
type Service struct {
	opts      Options
	log       *slog.Logger
	tel       *telemetry
	startedAt time.Time
	checkMu   sync.Mutex             // one Check at a time
	sendMu    sync.Mutex             // one Dispatch at a time
	held      map[groupKey]heldGroup // the groups whose waiting alerts repeat what was told; under sendMu
	// settled: the last batch decided every waiting group and no alert was routed since, so that
	// nothing can change before wake, the first held group's until (zero: none is held). Under
	// sendMu.
	settled bool
	wake    time.Time
	pending atomic.Bool // an arrival waits for its sample: check again at the next tick
}

// New checks opts and returns a Service.
func New(opts Options) (*Service, error) {
	if opts.Views == nil || opts.Store == nil {
		return nil, errors.New("notify: Views and Store are required")
	}
	if err := CheckTargets(opts.Targets); err != nil {
		return nil, err
	}
	if opts.ChatSafe == nil && slices.ContainsFunc(opts.Targets, func(t Target) bool { return t.Kind == Slack || t.Kind == Teams }) {
		return nil, errors.New("notify: a Slack or Teams target needs ChatSafe")
	}
	opts.Publisher = cmp.Or[events.Publisher](opts.Publisher, events.Discard)
	opts.Interval = cmp.Or(max(opts.Interval, 0), DefaultInterval)
	opts.SampleWait = cmp.Or(max(opts.SampleWait, 0), DefaultSampleWait)
	opts.Tick = cmp.Or(max(opts.Tick, 0), DefaultTick)
	opts.MaxAttempts = cmp.Or(max(opts.MaxAttempts, 0), DefaultMaxAttempts)
	opts.RetryBase = cmp.Or(max(opts.RetryBase, 0), DefaultRetryBase)
	opts.Timeout = cmp.Or(max(opts.Timeout, 0), DefaultTimeout)
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Client == nil {
		opts.Client = &http.Client{
			Timeout: opts.Timeout,
			// A webhook that redirects is misconfigured; following it would post the alerts
			// (and a signature) somewhere nobody configured.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	log := cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	tel, err := newTelemetry(opts.Registerer, opts.Targets, opts.Store)
	if err != nil {
		return nil, err
	}
	return &Service{opts: opts, log: log, tel: tel, startedAt: opts.Now().UTC(), held: map[groupKey]heldGroup{}}, nil
}

// StartedAt is when the Service was made: the status page lists the targets recorded since.
func (s *Service) StartedAt() time.Time { return s.startedAt }

// Start records the targets (for the status page) and, on a database that has never routed an
// alert, starts routing from the newest one: alerts raised before any target was configured are
// history, not news. Run calls it; tests that drive Check and Dispatch themselves call it first.
func (s *Service) Start(ctx context.Context) error {
	// Another replica may have led, and sent, since this one last did: forget what was held.
	s.sendMu.Lock()
	s.held, s.settled = map[groupKey]heldGroup{}, false
	s.sendMu.Unlock()
	ts := make([]store.NotifyTarget, 0, len(s.opts.Targets))
	for _, t := range s.opts.Targets {
		ts = append(ts, store.NotifyTarget{Name: t.Name, Kind: string(t.Kind), Endpoint: t.endpoint(), Filter: t.Filter.String(), SeenAt: s.startedAt})
	}
	if err := s.opts.Store.SaveNotifyTargets(ctx, ts); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if _, err := s.opts.Store.KV(ctx, store.AlertRouterKey); errors.Is(err, store.ErrNotFound) {
		latest, err := s.opts.Store.LatestAlertID(ctx)
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		return s.opts.Store.RouteAlerts(ctx, nil, latest)
	} else if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// Run detects and delivers until ctx ends, then returns nil; like the collector, it never stops
// on a failure (each is logged, and the next tick tries again). Deliveries run on a loop of their
// own, so that a slow target never delays what the others and the event stream are told.
func (s *Service) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("notify: start", "err", err)
	}
	var changes <-chan events.Event
	if s.opts.Bus != nil {
		ch, stop := s.opts.Bus.Subscribe(64)
		defer stop()
		changes = ch
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.every(ctx, func() { s.dispatch(ctx) }) })

	dirty := true // the first check at once: what changed while toolq was down
	t := time.NewTicker(s.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev := <-changes:
			// The detector reads the read side's snapshot: a new one is what can change it.
			dirty = dirty || ev.Kind == events.SnapshotBuilt
		case <-t.C:
			if !dirty && !s.pending.Load() {
				continue
			}
			dirty = false
			if _, err := s.Check(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("notify: check", "err", err)
			}
		}
	}
}

// every calls fn each tick until ctx ends.
func (s *Service) every(ctx context.Context, fn func()) {
	t := time.NewTicker(s.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}

func (s *Service) dispatch(ctx context.Context) {
	if err := s.Dispatch(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("notify: dispatch", "err", err)
	}
}

// eventAlertsRaised tells the event stream to read the new alerts.
func eventAlertsRaised(at time.Time) events.Event {
	return events.Event{Kind: events.AlertsRaised, At: at}
}
