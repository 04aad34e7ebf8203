// Package app assembles the dashboard from its parts (store, collector, views, actions, HTTP
// server) so that `dashboard serve`, `dashboard demo` and the end-to-end tests build it the same
// way. It holds no logic of its own beyond the order things start and stop in.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/replicas"
	"github.com/toolq/toolq/internal/server"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/tracelink"
	"github.com/toolq/toolq/internal/views"
)

// Region is one AWS region the dashboard watches and acts on, with its clients: the collector
// reads with Clients.SQS, Clients.CloudWatch (nil: no CloudWatch metrics or alarms for this
// region), Clients.Lambda and Clients.EventBridge (nil: none of their consumers or rules), the
// actions act with Clients.ActionsSQS, which has a retry quota of its own. SQS and ActionsSQS
// are required.
//
// Account names the AWS account the clients reach when the dashboard watches several
// (--account NAME=…): one Region per account and region, the pair unique. "" without configured
// accounts. AccountID is the account's id when known in advance (a role ARN's). With an Account,
// the collector checks once which account Clients.STS reaches before it lists anything.
type Region struct {
	Name      string
	Account   string
	AccountID string
	awsconf.Clients
}

// Config is everything the dashboard needs. DBPath, Listen and at least one Region are required.
type Config struct {
	// DBPath is the database: a SQLite file, or a postgres:// URL that several dashboards
	// (replicas) can share, one of them collecting at a time (see package replicas).
	DBPath  string
	Listen  string
	Regions []Region
	Logger  *slog.Logger
	Version string
	Commit  string

	// Collector carries the collector's cadences, queue selection and peek settings. Its
	// Regions, Store, Publisher, Logger and Registerer are filled in here.
	Collector collector.Options
	// Thresholds of the health rules; zero fields take the defaults.
	Thresholds views.Thresholds
	// AdviceOff are the advisor's rules not to check (--advice-off), by id.
	AdviceOff []string

	// PprofListen, when set, is a loopback address on which net/http/pprof is served, apart
	// from the dashboard (--pprof). Empty: no profiling endpoint.
	PprofListen string

	Auth                auth.Config // Store, Logger filled in here
	AllowInsecureNoAuth bool
	ReadOnly            bool
	FrameAncestors      []string

	// ErrorDimension names the dimension (of Collector.Dimensions) that says why a tool call
	// failed; "" or a name no dimension has: none.
	ErrorDimension string
	// PublicURL is the address people reach the dashboard at, for every link toolq writes;
	// empty: the request's address, and for notifications http://Listen when Listen names a host.
	PublicURL string
	// TraceURL links a message's trace to the tracing system (--trace-url): on its page, in
	// get_message and in the alerts; the zero Template links none.
	TraceURL tracelink.Template
	// Notify configures the notifier: its targets and timing. Its stores, views, bus, links and
	// metrics are filled in here.
	Notify notify.Options
}

// Dashboard is an assembled, not yet running dashboard.
type Dashboard struct {
	cfg     Config
	log     *slog.Logger
	Store   *store.Store
	Bus     *events.Bus
	Views   *views.Service
	Actions *actions.Service
	// Engine runs the selective redrives, on the replica that leads.
	Engine    *engine.Engine
	Collector *collector.Collector
	Notifier  *notify.Service
	Server    *server.Server
	// Replica elects the one dashboard of a PostgreSQL database that runs the collector, and
	// relays every change to the others' live pages. On SQLite it always leads.
	Replica *replicas.Replica
}

// New opens the store (applying migrations) and builds every part. It makes no AWS call.
func New(ctx context.Context, cfg Config) (*Dashboard, error) {
	if cfg.DBPath == "" || len(cfg.Regions) == 0 {
		return nil, errors.New("app: a database path and at least one region are required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := store.Open(ctx, cfg.DBPath)
	if err != nil {
		return nil, err
	}
	d, err := assemble(cfg, log, st)
	if err != nil {
		st.Close()
		return nil, err
	}
	return d, nil
}

func assemble(cfg Config, log *slog.Logger, st *store.Store) (*Dashboard, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	bus := events.NewBus()
	// The collector and the actions publish through the replica, which also tells the other
	// replicas; the live pages listen on this replica's bus.
	// A follower tries to take the lead every half attribute interval (at most every 5 s), and a
	// new leader's collector reads every queue at once: a takeover costs at most two intervals.
	check := replicas.DefaultCheck
	if a := cfg.Collector.AttributesInterval; a > 0 {
		check = min(check, max(a/2, 100*time.Millisecond))
	}
	rep := replicas.New(replicas.Options{
		Store: st, Local: bus, Version: cfg.Version, Check: check, Logger: log.With("part", "replicas"), Registerer: reg,
	})
	var dims []string
	for _, d := range cfg.Collector.Dimensions {
		dims = append(dims, d.Name)
	}
	// The read side follows this replica's bus: the collector's and the actions' changes, and
	// those the other replicas relay.
	vs := views.New(views.Options{Store: st, Thresholds: cfg.Thresholds, AdviceOff: cfg.AdviceOff,
		Dimensions: dims, ErrorDimension: cfg.ErrorDimension, Changes: bus, Logger: log.With("part", "views"),
		ArchiveRetention: cfg.Collector.ArchiveRetention, TraceURL: cfg.TraceURL})

	clients := make(map[string]actions.SQSAPI, len(cfg.Regions))
	engineClients := make(map[string]engine.SQSAPI, len(cfg.Regions))
	regions := make([]collector.Region, 0, len(cfg.Regions))
	for _, r := range cfg.Regions {
		if r.SQS == nil || r.ActionsSQS == nil {
			return nil, fmt.Errorf("app: region %q: the collector's and the actions' SQS clients are required", r.Name)
		}
		clients[store.Scope(r.Account, r.Name)] = r.ActionsSQS
		engineClients[store.Scope(r.Account, r.Name)] = r.ActionsSQS
		cr := collector.Region{Name: r.Name, SQS: r.SQS, Account: r.Account, AccountID: r.AccountID}
		if r.Account != "" && r.STS != nil {
			cr.STS = r.STS
		}
		// Typed nils would make non-nil interfaces: set each client only when there is one.
		if r.CloudWatch != nil {
			cr.CloudWatch = r.CloudWatch
		}
		if r.Lambda != nil {
			cr.Lambda = r.Lambda
		}
		if r.EventBridge != nil {
			cr.EventBridge = r.EventBridge
		}
		regions = append(regions, cr)
	}
	acfg := cfg.Auth
	acfg.Store = st
	acfg.Logger = log.With("part", "auth")
	authn, err := auth.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	copts := cfg.Collector
	copts.Regions = regions
	copts.Store = st
	copts.Publisher = rep
	copts.Logger = log.With("part", "collector")
	copts.Registerer = reg
	coll, err := collector.New(copts)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	// The engine reads a message as the collector's samples do, so that a selection matches
	// what the pages group; it runs on the replica that leads, as the collector does.
	eng := engine.New(engine.Options{
		Clients: engineClients, Store: st, Read: coll.ReadMessage, ErrorDimension: cfg.ErrorDimension,
		Publisher: rep, Logger: log.With("part", "engine"),
	})
	// The actions sign the confirmations of two-step starts (the MCP tool's) with the key that
	// signs sessions, so that replicas sharing --session-key accept each other's.
	acts := actions.New(actions.Options{
		Clients: clients, Store: st, Publisher: rep, Confirmations: authn,
		ReadOnly: cfg.ReadOnly, Logger: log.With("part", "actions"), Registerer: reg,
		Engine: eng, Dimensions: dims, ErrorDimension: cfg.ErrorDimension, OptedIn: coll.OptedIn,
	})

	nopts := cfg.Notify
	nopts.Views, nopts.Store, nopts.Bus, nopts.Publisher = vs, st, bus, rep
	nopts.PublicURL = cmp.Or(cfg.PublicURL, listenURL(cfg.Listen))
	nopts.ChatSafe = server.ChatSafe
	nopts.Logger = log.With("part", "notify")
	nopts.Registerer = reg
	if len(nopts.Targets) > 0 && nopts.PublicURL == "" {
		log.Warn("notifications will carry no links: the dashboard listens on every address; set --public-url", "listen", cfg.Listen)
	}
	nt, err := notify.New(nopts)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	srv, err := server.New(server.Options{
		Views: vs, Actions: acts, Bus: bus, Logger: log.With("part", "server"),
		Auth: authn, Listen: cfg.Listen, AllowInsecureNoAuth: cfg.AllowInsecureNoAuth,
		ReadOnly: cfg.ReadOnly, FrameAncestors: cfg.FrameAncestors, Version: cfg.Version, Commit: cfg.Commit,
		Metrics: reg, PublicURL: cfg.PublicURL, Notifier: nt,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return &Dashboard{cfg: cfg, log: log, Store: st, Bus: bus, Views: vs, Actions: acts, Engine: eng, Collector: coll, Notifier: nt, Server: srv, Replica: rep}, nil
}

// listenURL is the dashboard's address from its listener, for the links of notifications when
// no public URL is given: "" when it listens on every address, which names no host to link to.
func listenURL(listen string) string {
	host, _, err := net.SplitHostPort(listen)
	if err != nil || host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return ""
	}
	return "http://" + listen
}

// reconcileTimeout bounds the start-up settling of unfinished actions.
const reconcileTimeout = 30 * time.Second

// Run settles the actions a stopped process left unfinished, serves HTTP on ln and runs the
// collector until ctx ends, then stops in order: the HTTP server, the collector (waited for),
// the websocket hub, the database.
func (d *Dashboard) Run(ctx context.Context, ln net.Listener) (err error) {
	defer func() {
		err = errors.Join(err, d.Store.Close())
		d.log.Info("shutdown: database closed")
	}()

	if d.cfg.PprofListen != "" {
		stopPprof, err := listenPprof(d.cfg.PprofListen, d.log)
		if err != nil {
			return err
		}
		defer func() {
			stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			err = errors.Join(err, stopPprof(stopCtx))
		}()
	}
	// An action whose process stopped between its call to AWS and its outcome (a crash, a kill)
	// left an intent alone in the audit log: settle it from ListMessageMoveTasks before anyone
	// can act again. What cannot be settled now (AWS unreachable) is settled before its queue's
	// next action.
	rctx, cancelReconcile := context.WithTimeout(ctx, reconcileTimeout)
	if e := d.Actions.Reconcile(rctx); e != nil {
		d.log.Warn("actions: unfinished actions not settled at start-up; each is settled before its queue's next action", "err", e)
	}
	cancelReconcile()

	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var wg sync.WaitGroup
	// Every replica keeps its own snapshot of what the pages, the API and the notifier show.
	wg.Go(func() { _ = d.Views.Run(loops) })
	// The collector, the notifier and the engine run while this dashboard leads (always, on
	// SQLite): one replica reads AWS, sends notifications and runs the selective redrives (a new
	// leader resumes them from their journals). None stops on a failure (each cycle records its
	// own and the next tries again) and each returns nil once its context ends, so they are only
	// waited for below: the dashboard stops on ctx or a failed listener, never on them.
	wg.Go(func() {
		d.Replica.Run(loops, func(lead context.Context) {
			var all sync.WaitGroup
			all.Go(func() { _ = d.Collector.Run(lead) })
			all.Go(func() { _ = d.Notifier.Run(lead) })
			all.Go(func() { _ = d.Engine.Run(lead) })
			all.Wait()
		})
	})

	httpSrv := &http.Server{
		Handler:           d.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds a slow request body too. Websockets are not cut by it: their read pump sets
		// its own deadline on every pong once the connection is upgraded.
		ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
	// Shutdown waits for active requests; the event streams never end by themselves.
	httpSrv.RegisterOnShutdown(d.Server.EndStreams)
	serveErr := make(chan error, 1)
	go func() {
		if err := httpSrv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr <- fmt.Errorf("app: serve: %w", err)
		}
	}()
	d.log.Info("dashboard listening", "url", "http://"+ln.Addr().String())

	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if e := httpSrv.Shutdown(shutdownCtx); e != nil {
		err = errors.Join(err, fmt.Errorf("app: shut down HTTP: %w", e))
	}
	d.log.Info("shutdown: HTTP server stopped")
	stopLoops()
	wg.Wait()
	d.log.Info("shutdown: collector, notifier and snapshots stopped")
	if e := d.Server.Close(shutdownCtx); e != nil {
		err = errors.Join(err, fmt.Errorf("app: close websockets: %w", e))
	}
	d.log.Info("shutdown: websockets closed")
	return err
}
