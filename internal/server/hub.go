package server

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/web/templates"
)

// The hub keeps the pages live, after gorilla/websocket's chat example: one goroutine owns the
// set of clients; events from the bus mark topics dirty; after a short coalescing delay each
// dirty topic is rendered ONCE per link context and the same bytes go to every subscriber; a
// client whose buffer is full is dropped (it reconnects and gets a fresh push), never waited for.

// Topics a page can follow.
const (
	topicOverview = "overview"
	topicAudit    = "audit"
	topicQueue    = "queue:" // + the queue's id
)

// subscription is what one websocket follows: a topic, the link context (embed mode and token)
// its fragments' links must carry, and the page's own view of the topic. Subscriptions with the
// same key share one rendering.
type subscription struct {
	Topic string
	Nav   templates.Nav
	// View is the overview's filter and sort (q, sort, dir) or a queue page's chart range
	// (range), as the page's URL has them; empty for the defaults.
	View url.Values
}

// key identifies the bytes a subscription receives.
func (s subscription) key() string {
	return s.Topic + "|" + s.Nav.Values().Encode() + "|" + s.View.Encode()
}

// kindSet records which kinds of event made a topic dirty.
type kindSet map[events.Kind]bool

// kindConnect marks a topic dirty because a page subscribed to it: the page may be stale, so its
// push carries everything, the charts included.
const kindConnect events.Kind = "connect"

// Close codes sent to browsers. htmx-ext-ws reconnects after the first two; the last two end a
// connection whose credential has ended, for good: app.js says so ("signed out", "link expired")
// and nothing reconnects with a dead credential.
const (
	closeServiceRestart = 1012 // the server is shutting down
	closeTryAgainLater  = 1013 // the client was too slow and was dropped
	closeSignedOut      = 4001 // the session was signed out or expired, or its token revoked
	closeLinkEnded      = 4002 // the embed link expired, or the token that made it was revoked
)

// client is one websocket connection's place in the hub. The hub goroutine alone sends on and
// closes send; closeCode is written before send is closed, and read by the write pump after.
type client struct {
	sub       subscription
	send      chan []byte
	closeCode int
	// release gives back the connection's place in its identity's quota when it ends.
	release func()
	// credential checks again, in the write pump, the credential the connection was opened with.
	credential credentialCheck
}

// hubOptions configure a hub. Render and Freshness are required.
type hubOptions struct {
	// Render renders what a subscription's topic shows, given the kinds of event that changed it.
	Render func(ctx context.Context, sub subscription, kinds kindSet) ([]byte, error)
	// Freshness renders the freshness fragment that every page shows.
	Freshness func(ctx context.Context) ([]byte, error)
	Logger    *slog.Logger
	// Coalesce is how long the hub waits after an event for more before rendering (default 250ms).
	Coalesce time.Duration
	// FreshnessEvery is how often the freshness is pushed (default 5s).
	FreshnessEvery time.Duration
	// SendBuffer is each client's buffer, in messages (default 16).
	SendBuffer int
	// RenderTimeout bounds one rendering (default 5s).
	RenderTimeout time.Duration
	// After and Tick replace the timers in tests, which then decide when time passes.
	After func(time.Duration) <-chan time.Time
	Tick  <-chan time.Time
}

// hub owns the websocket clients.
type hub struct {
	opts       hubOptions
	log        *slog.Logger
	register   chan *client
	unregister chan *client
	events     chan events.Event
	ctx        context.Context // cancelled by close: ends a rendering in progress
	cancel     context.CancelFunc
	done       chan struct{}
	stopped    chan struct{}
	clients    map[*client]struct{} // owned by run
	count      atomic.Int64

	mu     sync.Mutex
	closed bool
	conns  sync.WaitGroup // the pumps of every websocket connection
	ticker *time.Ticker
}

// errHubClosed is returned to a connection that arrives while the server shuts down.
var errHubClosed = errors.New("hub: closed")

// newHub starts a hub. It runs until close.
func newHub(opts hubOptions) *hub {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Coalesce <= 0 {
		opts.Coalesce = 250 * time.Millisecond
	}
	if opts.FreshnessEvery <= 0 {
		opts.FreshnessEvery = 5 * time.Second
	}
	if opts.SendBuffer <= 0 {
		opts.SendBuffer = 16
	}
	if opts.RenderTimeout <= 0 {
		opts.RenderTimeout = 5 * time.Second
	}
	if opts.After == nil {
		opts.After = time.After
	}
	h := &hub{
		opts:       opts,
		log:        opts.Logger,
		register:   make(chan *client),
		unregister: make(chan *client),
		events:     make(chan events.Event), // unbuffered: notify returns once the hub has the event
		done:       make(chan struct{}),
		stopped:    make(chan struct{}),
		clients:    make(map[*client]struct{}),
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts.Tick == nil {
		h.ticker = time.NewTicker(opts.FreshnessEvery)
		h.opts.Tick = h.ticker.C
	}
	go h.run()
	return h
}

// follow forwards a bus's events to the hub until the hub closes.
func (h *hub) follow(bus *events.Bus) {
	ch, cancel := bus.Subscribe(64)
	go func() {
		defer cancel()
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					return
				}
				h.notify(ev)
			case <-h.done:
				return
			}
		}
	}()
}

// notify hands an event to the hub; it returns once the hub took it, or at once after close.
func (h *hub) notify(ev events.Event) {
	select {
	case h.events <- ev:
	case <-h.done:
	}
}

// newClient returns a client for a subscription, not yet attached.
func (h *hub) newClient(sub subscription) *client {
	return &client{sub: sub, send: make(chan []byte, h.opts.SendBuffer), release: func() {}}
}

// attach adds a client; pumps is how many goroutines will serve it, which close waits for.
func (h *hub) attach(c *client, pumps int) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errHubClosed
	}
	h.conns.Add(pumps)
	h.mu.Unlock()
	select {
	case h.register <- c:
		return nil
	case <-h.done:
		h.conns.Add(-pumps)
		return errHubClosed
	}
}

// detach removes a client (its read pump ended); safe to call after the hub dropped it.
func (h *hub) detach(c *client) {
	select {
	case h.unregister <- c:
	case <-h.done:
	}
}

// pumpDone records that one goroutine serving a connection ended.
func (h *hub) pumpDone() { h.conns.Done() }

// clientCount returns how many clients are connected, for /metrics.
func (h *hub) clientCount() int { return int(h.count.Load()) }

// close stops the hub, tells every client to go (1012: service restart, so browsers reconnect to
// the next server) and waits for their connections to end, or for ctx.
func (h *hub) close(ctx context.Context) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	h.cancel()
	close(h.done)
	<-h.stopped
	if h.ticker != nil {
		h.ticker.Stop()
	}
	waited := make(chan struct{})
	go func() {
		h.conns.Wait()
		close(waited)
	}()
	select {
	case <-waited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run is the hub goroutine: the only code that touches clients and dirty topics.
func (h *hub) run() {
	defer close(h.stopped)
	dirty := make(map[string]kindSet) // by topic
	var flush <-chan time.Time
	for {
		select {
		case c := <-h.register:
			h.clients[c] = struct{}{}
			h.count.Add(1)
			// A new (or reconnected) page may be stale: send it the current state soon.
			h.markDirty(dirty, c.sub.Topic, kindConnect)
		case c := <-h.unregister:
			h.drop(c, 0)
		case ev := <-h.events:
			for _, topic := range h.topicsOf(ev) {
				h.markDirty(dirty, topic, ev.Kind)
			}
		case <-flush:
			flush = nil
			h.flush(dirty)
			dirty = make(map[string]kindSet)
		case <-h.opts.Tick:
			h.pushFreshness()
		case <-h.done:
			for c := range h.clients {
				h.drop(c, closeServiceRestart)
			}
			return
		}
		if flush == nil && len(dirty) > 0 {
			flush = h.opts.After(h.opts.Coalesce)
		}
	}
}

// markDirty records that a topic must be pushed, and why.
func (h *hub) markDirty(dirty map[string]kindSet, topic string, kind events.Kind) {
	if dirty[topic] == nil {
		dirty[topic] = make(kindSet)
	}
	dirty[topic][kind] = true
}

// topicsOf returns the topics an event changes. An event about no queue in particular changes
// every queue's topic.
func (h *hub) topicsOf(ev events.Event) []string {
	queueTopics := func() []string {
		if ev.QueueID != 0 {
			return []string{queueTopic(ev.QueueID)}
		}
		var ts []string
		seen := map[string]bool{}
		for c := range h.clients {
			if t := c.sub.Topic; len(t) > len(topicQueue) && t[:len(topicQueue)] == topicQueue && !seen[t] {
				seen[t] = true
				ts = append(ts, t)
			}
		}
		return ts
	}
	switch ev.Kind {
	case events.QueuesChanged, events.MetricsChanged, events.MoveTasksChanged:
		return append(queueTopics(), topicOverview)
	case events.SampleTaken:
		return queueTopics()
	case events.AuditAppended:
		return []string{topicAudit}
	}
	return nil
}

// flush renders each dirty topic once per link context and sends it to its subscribers.
func (h *hub) flush(dirty map[string]kindSet) {
	bySub := make(map[string][]*client)
	subs := make(map[string]subscription)
	for c := range h.clients {
		if _, ok := dirty[c.sub.Topic]; !ok {
			continue
		}
		k := c.sub.key()
		bySub[k] = append(bySub[k], c)
		subs[k] = c.sub
	}
	for k, clients := range bySub {
		sub := subs[k]
		msg, err := h.renderWithTimeout(func(ctx context.Context) ([]byte, error) {
			return h.opts.Render(ctx, sub, dirty[sub.Topic])
		})
		if err != nil {
			h.log.Warn("hub: render", "topic", sub.Topic, "err", err)
			continue
		}
		for _, c := range clients {
			h.send(c, msg)
		}
	}
}

// pushFreshness sends the freshness line, rendered once, to every client.
func (h *hub) pushFreshness() {
	if len(h.clients) == 0 {
		return
	}
	msg, err := h.renderWithTimeout(h.opts.Freshness)
	if err != nil {
		h.log.Warn("hub: render freshness", "err", err)
		return
	}
	for c := range h.clients {
		h.send(c, msg)
	}
}

// renderWithTimeout runs one rendering, cut short by its timeout or by close.
func (h *hub) renderWithTimeout(f func(ctx context.Context) ([]byte, error)) ([]byte, error) {
	ctx, cancel := context.WithTimeout(h.ctx, h.opts.RenderTimeout)
	defer cancel()
	return f(ctx)
}

// send queues msg for a client without blocking: a client that cannot keep up is dropped.
func (h *hub) send(c *client, msg []byte) {
	select {
	case c.send <- msg:
	default:
		h.log.Info("hub: dropping a slow websocket client", "topic", c.sub.Topic)
		h.drop(c, closeTryAgainLater)
	}
}

// drop removes a client and closes its send channel, which ends its write pump with code.
func (h *hub) drop(c *client, code int) {
	if _, ok := h.clients[c]; !ok {
		return
	}
	delete(h.clients, c)
	h.count.Add(-1)
	c.closeCode = code
	close(c.send)
}
