// Package replicas lets several dashboards share one PostgreSQL database: one of them at a time
// leads (runs the collector, the only code that reads AWS on a schedule), every one serves pages,
// API and websockets, and every change any of them makes reaches the live pages of all.
//
//   - The lead is a PostgreSQL session advisory lock (store.TryLead) on a connection of its own.
//     A follower tries to take it every Check; the leader confirms it as often, and stops the
//     collector the moment it cannot. The server frees the lock when the leader's session ends,
//     so a leader that dies is replaced within one Check of the server noticing (at once for a
//     killed process, whose socket the kernel closes; within TCP keepalive for a lost machine).
//   - Changes travel as notices (LISTEN/NOTIFY): each events.Event published here goes to this
//     replica's own bus and, as a small JSON notice, to every other replica, which puts it on
//     its bus. Events only say "read again", so a notice lost while a listener reconnects costs
//     nothing that the catch-up event after the reconnect does not repair.
//   - Each replica writes a heartbeat row (store.Replica) that the status page lists. Who leads
//     is not taken from the rows but from the database: the replica whose session holds the
//     lock (store.Replicas), so that a leader that dies is no leader the moment its lock goes,
//     and the page never shows two.
//
// On SQLite there is one dashboard: it leads from the start, for good, and notices have nobody
// to reach.
package replicas

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

// DefaultCheck is how often a follower tries to take the lead and the leader confirms it, and
// how often every replica writes its heartbeat.
const DefaultCheck = 5 * time.Second

// Forgotten is how long the row of a replica not heard from stays listed as gone before it is
// dropped.
const Forgotten = time.Hour

// Options configures a Replica. Store and Local are required.
type Options struct {
	Store *store.Store
	// Local is this replica's own bus: the live pages subscribe to it.
	Local events.Publisher
	// ID names this replica on the status page and its lead's session in the database (1 to
	// store.MaxLeadHolder printable ASCII bytes); default host-pid-random.
	ID      string
	Version string
	Check   time.Duration // default DefaultCheck
	Logger  *slog.Logger
	// Registerer gets toolq_replica_leader and toolq_replica_notices_total; nil registers nothing.
	Registerer prometheus.Registerer
	Now        func() time.Time
}

// Replica is this dashboard's part in a set of replicas.
type Replica struct {
	st      *store.Store
	local   events.Publisher
	id      string
	host    string
	version string
	check   time.Duration
	log     *slog.Logger
	now     func() time.Time
	shared  bool // on PostgreSQL: other replicas may exist

	started     time.Time
	leader      atomic.Bool
	leaderSince atomic.Int64 // unix ms; 0 while following
	outbox      chan events.Event

	leaderGauge prometheus.Gauge
	notices     *prometheus.CounterVec
}

// New returns a Replica; Run starts it.
func New(opts Options) *Replica {
	if opts.Store == nil || opts.Local == nil {
		panic("replicas: Options.Store and Options.Local are required")
	}
	host, _ := os.Hostname()
	r := &Replica{
		st:      opts.Store,
		local:   opts.Local,
		id:      cmp.Or(opts.ID, newID(host)),
		host:    host,
		version: opts.Version,
		check:   cmp.Or(opts.Check, DefaultCheck),
		log:     cmp.Or(opts.Logger, slog.New(slog.DiscardHandler)),
		now:     opts.Now,
		shared:  opts.Store.Dialect() == "postgres",
		outbox:  make(chan events.Event, 1024),
		leaderGauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "toolq_replica_leader",
			Help: "1 while this replica leads (runs the collector), else 0.",
		}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "toolq_replica_notices_total",
			Help: "Change notices between replicas, by direction: sent, received, or dropped (the outbox was full).",
		}, []string{"direction"}),
	}
	if r.now == nil {
		r.now = time.Now
	}
	r.started = r.now()
	for _, d := range []string{"sent", "received", "dropped"} {
		r.notices.WithLabelValues(d)
	}
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(r.leaderGauge, r.notices)
	}
	return r
}

// newID names a replica host-pid-random. The host is cut to maxIDHost bytes, so that the id
// fits in the lead's session name (store.MaxLeadHolder) with the pid and the random part whole.
func newID(host string) string {
	b := make([]byte, 3)
	rand.Read(b)
	host = strings.Map(func(r rune) rune {
		if r < 0x21 || r > 0x7e {
			return '-'
		}
		return r
	}, cmp.Or(host, "toolq"))
	return host[:min(len(host), maxIDHost)] + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b)
}

// maxIDHost is how much of the host name a replica's id keeps: with a pid of up to 7 digits and
// the random part, the id stays within store.MaxLeadHolder.
const maxIDHost = store.MaxLeadHolder - len("-1234567-abcdef")

// ID is this replica's name on the status page.
func (r *Replica) ID() string { return r.id }

// Leader reports whether this replica leads now.
func (r *Replica) Leader() bool { return r.leader.Load() }

// Publish puts e on this replica's bus and sends it to the others. It never blocks: when the
// outbox is full the notice is dropped (counted), which only delays the other replicas' pages
// to the next change.
func (r *Replica) Publish(e events.Event) {
	r.local.Publish(e)
	if !r.shared {
		return
	}
	select {
	case r.outbox <- e:
	default:
		r.notices.WithLabelValues("dropped").Inc()
	}
}

// notice is an event on the wire between replicas.
type notice struct {
	Replica string      `json:"r"`
	Kind    events.Kind `json:"k"`
	QueueID int64       `json:"q,omitempty"`
	At      int64       `json:"t"` // unix ms
}

// Run takes part until ctx ends: it heartbeats, relays notices and, while this replica holds the
// lead, runs lead with a context that ends when the lead is lost or ctx ends. lead must return
// once its context ends; Run waits for it before giving the lead up, so that two collectors
// never overlap on purpose.
func (r *Replica) Run(ctx context.Context, lead func(context.Context)) {
	done := make(chan struct{})
	if r.shared {
		go func() { r.listen(ctx); done <- struct{}{} }()
		go func() { r.send(ctx); done <- struct{}{} }()
	}
	r.lead(ctx, lead)
	if r.shared {
		<-done
		<-done
	}
	stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.st.DeleteReplicasBefore(stop, r.now().Add(-Forgotten), r.id); err != nil {
		r.log.Warn("replicas: remove this replica's row", "err", err)
	}
}

// lead is the election loop: follow until the lead is free, lead until it is lost, and again.
func (r *Replica) lead(ctx context.Context, lead func(context.Context)) {
	t := time.NewTicker(r.check)
	defer t.Stop()
	for ctx.Err() == nil {
		lease, err := r.st.TryLead(ctx, r.id)
		if err != nil && ctx.Err() == nil {
			r.log.Warn("replicas: try to lead", "err", err)
		}
		if lease != nil {
			r.holdLead(ctx, lease, lead, t.C)
		}
		r.heartbeat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// holdLead runs lead while the lease confirms, then stops it and releases the lease.
func (r *Replica) holdLead(ctx context.Context, lease *store.Lease, lead func(context.Context), tick <-chan time.Time) {
	r.setLeader(true)
	r.log.Info("replicas: this replica leads: the collector runs here", "replica", r.id)
	r.heartbeat(ctx)
	leadCtx, stopLead := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		lead(leadCtx)
	}()
	reason := ""
	for reason == "" {
		select {
		case <-ctx.Done():
			reason = "shutting down"
		case <-stopped:
			reason = "the collector returned"
		case <-tick:
			cctx, cancel := context.WithTimeout(ctx, r.check)
			err := lease.Confirm(cctx)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					reason = "shutting down"
				} else {
					reason = "the lead could not be confirmed: " + err.Error()
				}
				break
			}
			r.heartbeat(ctx)
		}
	}
	stopLead()
	<-stopped
	r.setLeader(false)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := lease.Release(rctx); err != nil {
		r.log.Warn("replicas: release the lead", "err", err)
	}
	r.log.Info("replicas: this replica no longer leads", "replica", r.id, "why", reason)
	r.heartbeat(rctx)
}

func (r *Replica) setLeader(on bool) {
	r.leader.Store(on)
	if on {
		r.leaderSince.Store(r.now().UnixMilli())
		r.leaderGauge.Set(1)
	} else {
		r.leaderSince.Store(0)
		r.leaderGauge.Set(0)
	}
}

// heartbeat writes this replica's row and drops the rows of replicas long gone.
func (r *Replica) heartbeat(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	now := r.now()
	row := store.Replica{ID: r.id, Host: r.host, Version: r.version, StartedAt: r.started, HeartbeatAt: now,
		Leader: r.leader.Load()}
	if since := r.leaderSince.Load(); since != 0 {
		row.LeaderSince = time.UnixMilli(since)
	}
	if err := r.st.SaveReplica(ctx, row); err != nil {
		r.log.Warn("replicas: heartbeat", "err", err)
	}
	if _, err := r.st.DeleteReplicasBefore(ctx, now.Add(-Forgotten), ""); err != nil {
		r.log.Warn("replicas: forget old replicas", "err", err)
	}
}

// send notifies the other replicas of each event in the outbox.
func (r *Replica) send(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-r.outbox:
			js, _ := json.Marshal(notice{Replica: r.id, Kind: e.Kind, QueueID: e.QueueID, At: e.At.UnixMilli()})
			if err := r.st.Notify(ctx, string(js)); err != nil {
				if ctx.Err() == nil {
					r.log.Warn("replicas: send a change notice", "err", err)
					r.notices.WithLabelValues("dropped").Inc()
				}
				continue
			}
			r.notices.WithLabelValues("sent").Inc()
		}
	}
}

// listen puts the other replicas' notices on this replica's bus, reconnecting with backoff.
// After a reconnect it publishes one event of every kind, since notices may have been missed.
func (r *Replica) listen(ctx context.Context) {
	backoff := time.Second
	for first := true; ; first = false {
		listening := func() {
			backoff = time.Second
			if !first {
				r.catchUp()
			}
		}
		err := r.st.Listen(ctx, listening, r.received)
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("replicas: listening for change notices failed; retrying", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (r *Replica) received(payload string) {
	var n notice
	if err := json.Unmarshal([]byte(payload), &n); err != nil || n.Kind == "" {
		r.log.Warn("replicas: a change notice that is not toolq's", "payload", payload)
		return
	}
	if n.Replica == r.id {
		return // already on this replica's bus
	}
	r.notices.WithLabelValues("received").Inc()
	r.local.Publish(events.Event{Kind: n.Kind, QueueID: n.QueueID, At: time.UnixMilli(n.At)})
}

// catchUp tells this replica's pages to read everything again.
func (r *Replica) catchUp() {
	at := r.now()
	for _, k := range []events.Kind{events.QueuesChanged, events.MetricsChanged, events.SampleTaken, events.MoveTasksChanged, events.AuditAppended, events.AlertsRaised} {
		r.local.Publish(events.Event{Kind: k, At: at})
	}
}
