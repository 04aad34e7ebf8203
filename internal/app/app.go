// Package app assembles the dashboard from its parts (store, collector, views, actions, HTTP
// server) so that `dashboard serve`, `dashboard demo` and the end-to-end tests build it the same
// way. It holds no logic of its own beyond the order things start and stop in.
package app

import (
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
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/server"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Region is one AWS region the dashboard watches and acts on, with its clients: the collector
// reads with Clients.SQS and Clients.CloudWatch (nil: no CloudWatch metrics for this region), the
// actions act with Clients.ActionsSQS, which has a retry quota of its own. SQS and ActionsSQS
// are required.
type Region struct {
	Name string
	awsconf.Clients
}

// Config is everything the dashboard needs. DBPath, Listen and at least one Region are required.
type Config struct {
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

	// PprofListen, when set, is a loopback address on which net/http/pprof is served, apart
	// from the dashboard (--pprof). Empty: no profiling endpoint.
	PprofListen string

	Auth                auth.Config // Store, Logger filled in here
	AllowInsecureNoAuth bool
	ReadOnly            bool
	FrameAncestors      []string
}

// Dashboard is an assembled, not yet running dashboard.
type Dashboard struct {
	cfg       Config
	log       *slog.Logger
	Store     *store.Store
	Bus       *events.Bus
	Views     *views.Service
	Actions   *actions.Service
	Collector *collector.Collector
	Server    *server.Server
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
	vs := views.New(views.Options{Store: st, Thresholds: cfg.Thresholds})

	clients := make(map[string]actions.SQSAPI, len(cfg.Regions))
	regions := make([]collector.Region, 0, len(cfg.Regions))
	for _, r := range cfg.Regions {
		if r.SQS == nil || r.ActionsSQS == nil {
			return nil, fmt.Errorf("app: region %q: the collector's and the actions' SQS clients are required", r.Name)
		}
		clients[r.Name] = r.ActionsSQS
		cr := collector.Region{Name: r.Name, SQS: r.SQS}
		if r.CloudWatch != nil {
			cr.CloudWatch = r.CloudWatch
		}
		regions = append(regions, cr)
	}
	acts := actions.New(actions.Options{
		Clients: clients, Store: st, Publisher: bus,
		ReadOnly: cfg.ReadOnly, Logger: log.With("part", "actions"), Registerer: reg,
	})

	copts := cfg.Collector
	copts.Regions = regions
	copts.Store = st
	copts.Publisher = bus
	copts.Logger = log.With("part", "collector")
	copts.Registerer = reg
	coll, err := collector.New(copts)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}

	acfg := cfg.Auth
	acfg.Store = st
	acfg.Logger = log.With("part", "auth")
	authn, err := auth.New(acfg)
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	srv, err := server.New(server.Options{
		Views: vs, Actions: acts, Bus: bus, Logger: log.With("part", "server"),
		Auth: authn, Listen: cfg.Listen, AllowInsecureNoAuth: cfg.AllowInsecureNoAuth,
		ReadOnly: cfg.ReadOnly, FrameAncestors: cfg.FrameAncestors, Version: cfg.Version, Commit: cfg.Commit,
		Metrics: reg,
	})
	if err != nil {
		return nil, fmt.Errorf("app: %w", err)
	}
	return &Dashboard{cfg: cfg, log: log, Store: st, Bus: bus, Views: vs, Actions: acts, Collector: coll, Server: srv}, nil
}

// Run serves HTTP on ln and runs the collector until ctx ends, then stops in order: the HTTP
// server, the collector (waited for), the websocket hub, the database.
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

	loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoops()
	var wg sync.WaitGroup
	// The collector does not stop on a failure (each cycle records its own and the next tries
	// again) and Run returns nil once loops ends, so it is only waited for below: the dashboard
	// stops on ctx or a failed listener, never on the collector.
	wg.Go(func() { _ = d.Collector.Run(loops) })

	httpSrv := &http.Server{
		Handler:           d.Server.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		// Bounds a slow request body too. Websockets are not cut by it: their read pump sets
		// its own deadline on every pong once the connection is upgraded.
		ReadTimeout: 30 * time.Second,
		IdleTimeout: 2 * time.Minute,
		ErrorLog:    slog.NewLogLogger(d.log.Handler(), slog.LevelWarn),
	}
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
	d.log.Info("shutdown: collector stopped")
	if e := d.Server.Close(shutdownCtx); e != nil {
		err = errors.Join(err, fmt.Errorf("app: close websockets: %w", e))
	}
	d.log.Info("shutdown: websockets closed")
	return err
}
