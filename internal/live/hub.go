// Package live keeps the pages live, after gorilla/websocket's chat example: one goroutine owns
// the websocket clients and turns change events into dirty subscriptions; a small pool of workers
// renders each dirty view once, off that goroutine, and the same bytes go to every subscriber of
// the view; a client whose buffer is full is dropped (it reconnects and gets a fresh push), never
// waited for.
//
// A rendering says what changed since the view's previous one (Push.Update), for the subscribers
// that had every push since they joined, and the whole view (Push.Full) for those that joined
// since: a push to a thousand overview pages then carries the rows that changed, not the table.
// A push is one or more websocket messages, each swapped by htmx on its own; each is framed,
// and compressed for the connections that negotiated permessage-deflate, once for all of its
// subscribers (websocket.PreparedMessage).
package live

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/events"
)

// Changes are why a subscription is pushed: the kinds of event since its last push, and Connect
// when a page has just subscribed.
type Changes map[events.Kind]bool

// Connect marks the push to a page that has just subscribed: it may be stale, so its push
// carries everything.
const Connect events.Kind = "connect"

// Subscription is what one websocket follows: a topic, and the page's own view of it (its link
// context, the overview's filter and sort, a queue page's chart range). Equal subscriptions
// share one rendering.
type Subscription[V comparable] struct {
	Topic Topic
	View  V
}

// Close codes sent to browsers; htmx-ext-ws reconnects after both.
const (
	CloseServiceRestart = 1012 // the server is shutting down
	CloseTryAgainLater  = 1013 // the client was too slow and was dropped
)

// Push is one rendering of a subscription, in messages sent in order: htmx parses each message
// as a fragment of its own, so that what one holds (table rows, say) cannot change how the next
// parses.
type Push struct {
	// Update goes to the subscribers that had every earlier push of the subscription: what
	// changed since the rendering whose Memo this one was given. Empty: nothing for them.
	Update [][]byte
	// Full is the whole view, for the subscribers that joined since the previous rendering. A
	// rendering whose changes include Connect must have one; without it, joiners wait for
	// theirs.
	Full [][]byte
	// Memo is handed to the subscription's next rendering, to find what changed; the hub keeps
	// it while the subscription has subscribers.
	Memo any
}

// Whole is the Push of a rendering that does not tell changes apart: everyone gets all of it.
func Whole(msg []byte) Push { return Push{Update: [][]byte{msg}, Full: [][]byte{msg}} }

// Options configure a Hub. Render and Freshness are required.
type Options[V comparable] struct {
	// Render renders what a subscription shows, given what changed since its last push and the
	// Memo of that push's rendering (nil for the first).
	Render func(ctx context.Context, sub Subscription[V], changes Changes, memo any) (Push, error)
	// Freshness renders the freshness fragment every page shows.
	Freshness func(ctx context.Context) ([]byte, error)
	Logger    *slog.Logger
	// Workers is how many renderings run at once, off the hub's goroutine (default 2).
	Workers int
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

// Hub owns the websocket clients of the live pages.
type Hub[V comparable] struct {
	opts       Options[V]
	log        *slog.Logger
	register   chan *client[V]
	unregister chan *client[V]
	events     chan events.Event
	jobs       chan job[V]
	results    chan result[V]
	ctx        context.Context // cancelled by Close: ends renderings and credential checks
	cancel     context.CancelFunc
	done       chan struct{}
	stopped    chan struct{}
	count      atomic.Int64
	ticker     *time.Ticker

	mu      sync.Mutex
	closed  bool
	conns   sync.WaitGroup // the pumps of every websocket connection
	workers sync.WaitGroup
}

// client is one websocket connection's place in the hub. The hub goroutine alone sends on and
// closes send, and alone reads and writes synced; closeCode is written before send is closed,
// and read by the write pump after.
type client[V comparable] struct {
	sub       Subscription[V]
	send      chan *message // a push each
	closeCode int
	// synced: the client got a Full push of its subscription, and every push since, so an
	// Update applies to what its page shows.
	synced bool
}

// message is one push for any number of clients: its websocket messages' bytes, and their
// frames, compressed or not, made once for all of them.
type message struct {
	data     [][]byte
	prepared []*websocket.PreparedMessage
}

// newMessage frames a push's messages once for every client it goes to, leaving out the empty
// ones; nil when all are.
func newMessage(data [][]byte) (*message, error) {
	m := &message{}
	for _, d := range data {
		if len(d) == 0 {
			continue
		}
		pm, err := websocket.NewPreparedMessage(websocket.TextMessage, d)
		if err != nil {
			return nil, err
		}
		m.data, m.prepared = append(m.data, d), append(m.prepared, pm)
	}
	if len(m.data) == 0 {
		return nil, nil
	}
	return m, nil
}

// job is one rendering for the workers: a subscription's, or the freshness every client gets.
type job[V comparable] struct {
	sub       Subscription[V]
	changes   Changes
	memo      any
	freshness bool
}

// result is a job done: the messages for clients in sync and for those who joined since, and
// the memo for the next job.
type result[V comparable] struct {
	job[V]
	update, full *message
	memo         any
	err          error
}

// errClosed is returned to a connection that arrives while the server shuts down.
var errClosed = errors.New("live: the hub is closed")

// New starts a hub. It runs until Close.
func New[V comparable](opts Options[V]) *Hub[V] {
	opts.Logger = cmp.Or(opts.Logger, slog.New(slog.DiscardHandler))
	opts.Workers = cmp.Or(max(opts.Workers, 0), 2)
	opts.Coalesce = cmp.Or(max(opts.Coalesce, 0), 250*time.Millisecond)
	opts.FreshnessEvery = cmp.Or(max(opts.FreshnessEvery, 0), 5*time.Second)
	opts.SendBuffer = cmp.Or(max(opts.SendBuffer, 0), 16)
	opts.RenderTimeout = cmp.Or(max(opts.RenderTimeout, 0), 5*time.Second)
	if opts.After == nil {
		opts.After = time.After
	}
	h := &Hub[V]{
		opts:       opts,
		log:        opts.Logger,
		register:   make(chan *client[V]),
		unregister: make(chan *client[V]),
		events:     make(chan events.Event), // unbuffered: Notify returns once the hub has the event
		jobs:       make(chan job[V], 4*opts.Workers),
		results:    make(chan result[V]),
		done:       make(chan struct{}),
		stopped:    make(chan struct{}),
	}
	h.ctx, h.cancel = context.WithCancel(context.Background())
	if opts.Tick == nil {
		h.ticker = time.NewTicker(opts.FreshnessEvery)
		h.opts.Tick = h.ticker.C
	}
	for range opts.Workers {
		h.workers.Add(1)
		go h.work()
	}
	go h.run()
	return h
}

// Follow forwards a bus's events to the hub until the hub closes.
func (h *Hub[V]) Follow(bus *events.Bus) {
	ch, cancel := bus.Subscribe(64)
	go func() {
		defer cancel()
		for {
			select {
			case ev, ok := <-ch:
				if !ok {
					return
				}
				h.Notify(ev)
			case <-h.done:
				return
			}
		}
	}()
}

// Notify hands an event to the hub; it returns once the hub took it, or at once after Close.
func (h *Hub[V]) Notify(ev events.Event) {
	select {
	case h.events <- ev:
	case <-h.done:
	}
}

// Clients returns how many clients are connected, for /metrics.
func (h *Hub[V]) Clients() int { return int(h.count.Load()) }

// newClient returns a client for a subscription, not yet attached.
func (h *Hub[V]) newClient(sub Subscription[V]) *client[V] {
	return &client[V]{sub: sub, send: make(chan *message, h.opts.SendBuffer)}
}

// attach adds a client; pumps is how many goroutines will serve it, which Close waits for.
func (h *Hub[V]) attach(c *client[V], pumps int) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed
	}
	h.conns.Add(pumps)
	h.mu.Unlock()
	select {
	case h.register <- c:
		return nil
	case <-h.done:
		h.conns.Add(-pumps)
		return errClosed
	}
}

// detach removes a client (its read pump ended); safe to call after the hub dropped it.
func (h *Hub[V]) detach(c *client[V]) {
	select {
	case h.unregister <- c:
	case <-h.done:
	}
}

// Close stops the hub, tells every client to go (1012: service restart, so browsers reconnect
// to the next server) and waits for their connections to end, or for ctx.
func (h *Hub[V]) Close(ctx context.Context) error {
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
	h.workers.Wait()
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

// hubState is what the hub goroutine alone touches.
type hubState[V comparable] struct {
	clients  map[*client[V]]struct{}
	subs     map[Subscription[V]]int // subscribers of each subscription
	dirty    map[Subscription[V]]Changes
	inFlight map[Subscription[V]]bool
	memos    map[Subscription[V]]any // each subscription's last rendering's Memo
	fresh    bool                    // a freshness rendering is in flight
}

// run is the hub goroutine: the only code that touches clients and dirty subscriptions. It never
// renders: renderings go to the workers and come back as bytes.
func (h *Hub[V]) run() {
	defer close(h.stopped)
	st := hubState[V]{
		clients: make(map[*client[V]]struct{}), subs: make(map[Subscription[V]]int),
		dirty: make(map[Subscription[V]]Changes), inFlight: make(map[Subscription[V]]bool),
		memos: make(map[Subscription[V]]any),
	}
	var flush <-chan time.Time
	for {
		select {
		case c := <-h.register:
			st.clients[c] = struct{}{}
			st.subs[c.sub]++
			h.count.Add(1)
			st.mark(c.sub, Connect)
		case c := <-h.unregister:
			h.drop(&st, c, 0)
		case ev := <-h.events:
			for sub := range st.subs {
				if sub.Topic.affects(ev) {
					st.mark(sub, ev.Kind)
				}
			}
		case <-flush:
			flush = nil
			h.dispatch(&st)
		case r := <-h.results:
			h.deliver(&st, r)
		case <-h.opts.Tick:
			if len(st.clients) > 0 && !st.fresh {
				select {
				case h.jobs <- job[V]{freshness: true}:
					st.fresh = true
				default: // the workers are busy: the next tick pushes it
				}
			}
		case <-h.done:
			for c := range st.clients {
				h.drop(&st, c, CloseServiceRestart)
			}
			return
		}
		if flush == nil && len(st.dirty) > 0 {
			flush = h.opts.After(h.opts.Coalesce)
		}
	}
}

// mark records that sub must be pushed, and why.
func (st *hubState[V]) mark(sub Subscription[V], kind events.Kind) {
	if st.dirty[sub] == nil {
		st.dirty[sub] = make(Changes)
	}
	st.dirty[sub][kind] = true
}

// dispatch hands each dirty subscription to the workers once: one still rendering stays dirty
// until its result is in, and so does one the workers have no room for yet.
func (h *Hub[V]) dispatch(st *hubState[V]) {
	for sub, changes := range st.dirty {
		if st.inFlight[sub] {
			continue
		}
		select {
		case h.jobs <- job[V]{sub: sub, changes: changes, memo: st.memos[sub]}:
			st.inFlight[sub] = true
			delete(st.dirty, sub)
		default:
			return
		}
	}
}

// deliver sends a rendering to the clients it is for: the update to those in sync, the whole
// view to those who joined since (who are in sync from then on).
func (h *Hub[V]) deliver(st *hubState[V], r result[V]) {
	if r.freshness {
		st.fresh = false
	} else {
		delete(st.inFlight, r.sub)
	}
	if r.err != nil {
		h.log.Warn("live: render", "topic", r.sub.Topic.String(), "freshness", r.freshness, "err", r.err)
		return
	}
	if r.freshness {
		for c := range st.clients {
			if r.update != nil {
				h.send(st, c, r.update)
			}
		}
		return
	}
	if st.subs[r.sub] > 0 {
		st.memos[r.sub] = r.memo
	}
	for c := range st.clients {
		switch {
		case c.sub != r.sub:
		case c.synced:
			if r.update != nil {
				h.send(st, c, r.update)
			}
		case r.full != nil:
			c.synced = true
			h.send(st, c, r.full)
		}
	}
}

// work renders jobs until the hub closes.
func (h *Hub[V]) work() {
	defer h.workers.Done()
	for {
		select {
		case j := <-h.jobs:
			ctx, cancel := context.WithTimeout(h.ctx, h.opts.RenderTimeout)
			r := h.render(ctx, j)
			cancel()
			select {
			case h.results <- r:
			case <-h.done:
				return
			}
		case <-h.done:
			return
		}
	}
}

// render does one job and frames its messages, off the hub goroutine.
func (h *Hub[V]) render(ctx context.Context, j job[V]) result[V] {
	r := result[V]{job: j}
	var p Push
	if j.freshness {
		var msg []byte
		msg, r.err = h.opts.Freshness(ctx)
		p = Whole(msg)
	} else {
		p, r.err = h.opts.Render(ctx, j.sub, j.changes, j.memo)
	}
	if r.err != nil {
		return r
	}
	r.memo = p.Memo
	if r.update, r.err = newMessage(p.Update); r.err != nil {
		return r
	}
	if sameMessages(p.Full, p.Update) {
		r.full = r.update // one rendering for everyone: framed once
		return r
	}
	r.full, r.err = newMessage(p.Full)
	return r
}

// send queues msg for a client without blocking: a client that cannot keep up is dropped.
func (h *Hub[V]) send(st *hubState[V], c *client[V], msg *message) {
	select {
	case c.send <- msg:
	default:
		h.log.Info("live: dropping a slow websocket client", "topic", c.sub.Topic.String())
		h.drop(st, c, CloseTryAgainLater)
	}
}

// drop removes a client and closes its send channel, which ends its write pump with code.
func (h *Hub[V]) drop(st *hubState[V], c *client[V], code int) {
	if _, ok := st.clients[c]; !ok {
		return
	}
	delete(st.clients, c)
	if st.subs[c.sub]--; st.subs[c.sub] <= 0 {
		delete(st.subs, c.sub)
		delete(st.dirty, c.sub)
		delete(st.memos, c.sub)
	}
	h.count.Add(-1)
	c.closeCode = code
	close(c.send)
}

// sameMessages reports whether two pushes are the same messages, the same bytes in memory.
func sameMessages(a, b [][]byte) bool {
	if len(a) != len(b) || len(a) == 0 {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) || (len(a[i]) > 0 && &a[i][0] != &b[i][0]) {
			return false
		}
	}
	return true
}
