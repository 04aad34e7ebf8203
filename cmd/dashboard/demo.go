package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/toolq/toolq/internal/app"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/sqsim"
	"github.com/toolq/toolq/traffic"
)

// demoConfig is the configuration of `dashboard demo`.
type demoConfig struct {
	// dashboard configures the dashboard part; its Regions are filled in with the simulator's,
	// and an empty DBPath means a temporary database removed at exit.
	dashboard app.Config
	simListen string
	region    string
	seed      int64
	faults    string
	// ready, when set, is called once every listener is bound, with the addresses they got
	// (tests listen on port 0).
	ready func(demoAddrs)
}

// The demo's accounts: agents, the simulator's default account (000000000000) reached with the
// ambient credentials, and tools-prod, reached through a role as `serve --account` reaches one.
const (
	demoAccount       = "agents"
	demoProdAccount   = "tools-prod"
	demoProdAccountID = "111111111111"
	demoProdRole      = "arn:aws:iam::" + demoProdAccountID + ":role/toolq-demo"
	// demoProdRate is the second account's tool calls per second: a little traffic beside the
	// first account's.
	demoProdRate = 0.3
	// demoProdPrefix starts the second account's queue names, so that the demo's pages and
	// links name every queue by its name alone, as the docs do (same-named queues of two
	// accounts are named by ARN).
	demoProdPrefix = "prod-"
)

// demoAddrs are the URLs the demo serves on.
type demoAddrs struct {
	// Dashboard is the dashboard's base URL.
	Dashboard string
	// Simulator is the simulator's public endpoint; empty when --sim-listen is off or taken.
	Simulator string
}

func runDemoCommand(ctx context.Context, env *environment, args []string) error {
	var cfg demoConfig
	var dash dashboardFlags
	var lf logFlags
	fl := newEnvFlags("demo", "demo [flags]",
		"Runs the SQS and CloudWatch simulator, synthetic MCP tool-call traffic and the dashboard in one\n"+
			"process: a living demo with no AWS account. The simulator is also served on --sim-listen so\n"+
			"that the aws CLI or a local MCP worker can use the demo's queues.",
		env.stderr)
	dash.register(fl, demoDefaults)
	fl.String(&cfg.simListen, "sim-listen", "127.0.0.1:4566", "`address` on which the simulator is also served; '' turns it off, a taken port is skipped")
	registerSimulatorFlags(fl, &cfg.region, &cfg.seed, &cfg.faults)
	lf.register(fl)
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return err
	}
	log, err := lf.logger(env.stderr)
	if err != nil {
		return err
	}
	version, commit := buildVersion()
	if cfg.dashboard, err = dash.config(env.lookupEnv, version, commit); err != nil {
		return err
	}
	return runDemo(ctx, cfg, log)
}

// runDemo wires the demo together and runs it until ctx ends: listeners first (a taken port
// fails before anything starts), then the simulator, the dashboard watching it, and the
// traffic; it stops them in the reverse order.
func runDemo(ctx context.Context, cfg demoConfig, log *slog.Logger) (err error) {
	// 1. Bind every listener first: a taken dashboard port fails before anything starts.
	dashLn, err := net.Listen("tcp", cfg.dashboard.Listen)
	if err != nil {
		return fmt.Errorf("demo: listen: %w", err)
	}
	defer dashLn.Close() // after Serve it is closed already; this covers early returns
	// A private loopback port for the simulator, so that the demo works whether or not the
	// public one is available.
	simLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("demo: listen for the simulator: %w", err)
	}
	var publicLn net.Listener
	if cfg.simListen != "" {
		publicLn, err = net.Listen("tcp", cfg.simListen)
		if err != nil {
			log.Warn("simulator port unavailable; going on without it", "address", cfg.simListen, "err", err)
			publicLn = nil
		}
	}

	// 2. The simulator, served on its listeners: the demo's two accounts, the second reached
	// through a role, as `serve --account` reaches real ones.
	sim, err := newSimulator(cfg.region, cfg.seed, cfg.faults, log)
	if err != nil {
		simLn.Close()
		if publicLn != nil {
			publicLn.Close()
		}
		return err
	}
	prodSim := sqsim.New(sqsim.Options{Region: cfg.region, Seed: cfg.seed + 1, AccountID: demoProdAccountID, Logger: log.With("component", "sqsim", "account", demoProdAccount)})
	accounts := sqsim.NewAccounts(sim, prodSim)
	if err := accounts.AddRole(demoProdRole, ""); err != nil {
		simLn.Close()
		if publicLn != nil {
			publicLn.Close()
		}
		return fmt.Errorf("demo: %w", err)
	}
	simSrv := newSimServer(accounts)
	serveErr := make(chan error, 3)
	serve := func(name string, srv *http.Server, ln net.Listener) {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			serveErr <- fmt.Errorf("demo: serve %s: %w", name, err)
		}
	}
	go serve("simulator", simSrv, simLn)
	addrs := demoAddrs{Dashboard: endpointURL(dashLn.Addr())}
	if publicLn != nil {
		go serve("simulator", simSrv, publicLn)
		addrs.Simulator = endpointURL(publicLn.Addr())
		logEndpoint(log, addrs.Simulator, cfg.region)
	}
	// Shut down last: the traffic and the collector talk to it until they stop.
	defer func() { err = errors.Join(err, shutdownHTTP(simSrv, log, "simulator")) }()

	// 3. The dashboard, watching the simulator. The demo opts its own source queues in to
	// message sampling, so that every view has something to show.
	dcfg := cfg.dashboard
	if dcfg.DBPath == "" {
		dir, err := os.MkdirTemp("", "toolq-demo-")
		if err != nil {
			return fmt.Errorf("demo: temporary database: %w", err)
		}
		defer os.RemoveAll(dir)
		dcfg.DBPath = filepath.Join(dir, "toolq.db")
	}
	if len(dcfg.Collector.Peek.Sources) == 0 {
		dcfg.Collector.Peek.Sources = traffic.SourceQueueNames()
	}
	// The dashboard and the traffic talk to the simulator on its public address when it has
	// one, so that the queue URLs it answers (and the pages, the API and the advisor's commands
	// show) name the address an operator's aws CLI reaches; on the private one otherwise.
	simEndpoint := endpointURL(simLn.Addr())
	if publicLn != nil {
		simEndpoint = addrs.Simulator
	}
	simOpts := awsconf.Options{Region: cfg.region, EndpointURL: simEndpoint, StaticCredentials: true}
	clients, err := awsconf.Load(ctx, simOpts)
	if err != nil {
		return fmt.Errorf("demo: simulator clients: %w", err)
	}
	prodClients, err := awsconf.LoadAssumed(ctx, simOpts, demoProdRole, "")
	if err != nil {
		return fmt.Errorf("demo: simulator clients of %s: %w", demoProdAccount, err)
	}
	// The demo's queues exist before the collector's first discovery, so the first page
	// already lists them all.
	topo, err := traffic.Setup(ctx, clients.SQS)
	if err != nil {
		return fmt.Errorf("demo: create the demo queues: %w", err)
	}
	// And the bus, rule, Lambda consumer and alarm, so that the first topology cycle finds them.
	integrations := traffic.Integrations{EventBridge: clients.EventBridge, Lambda: clients.Lambda, CloudWatch: clients.CloudWatch}
	if err := traffic.Integrate(ctx, topo, integrations); err != nil {
		return fmt.Errorf("demo: set up the demo's EventBridge, Lambda and alarm: %w", err)
	}
	// The second account runs the same queues, prefixed, with a little traffic of its own.
	if _, err := traffic.SetupPrefixed(ctx, prodClients.SQS, demoProdPrefix); err != nil {
		return fmt.Errorf("demo: create the %s queues: %w", demoProdAccount, err)
	}
	dcfg.Regions = []app.Region{
		{Name: cfg.region, Account: demoAccount, Clients: clients},
		{Name: cfg.region, Account: demoProdAccount, AccountID: demoProdAccountID, Clients: prodClients},
	}
	dcfg.Logger = log
	dash, err := app.New(ctx, dcfg)
	if err != nil {
		return err
	}

	// 4. Background loops, on a context of their own so that they stop after the dashboard,
	// not with it.
	bg, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	defer func() {
		stopLoops()
		loops.Wait()
	}()
	loops.Go(func() { sim.Run(bg) })
	loops.Go(func() { prodSim.Run(bg) })
	loops.Go(func() { runTraffic(bg, clients, cfg.seed, log) })
	loops.Go(func() {
		opts := traffic.Options{Seed: cfg.seed + 1, Rate: demoProdRate, QueuePrefix: demoProdPrefix, Logger: log.With("account", demoProdAccount)}
		if err := traffic.New(prodClients.SQS, opts).Run(bg); err != nil {
			log.Error("traffic stopped", "account", demoProdAccount, "err", err)
		}
	})

	// 5. The dashboard runs until a signal, then stops in order (HTTP server, collector,
	// websockets, database); the traffic and the simulator stop after it (deferred above).
	runCtx, stopDashboard := context.WithCancel(ctx)
	defer stopDashboard()
	dashDone := make(chan error, 1)
	go func() { dashDone <- dash.Run(runCtx, dashLn) }()
	log.Info("demo ready", "dashboard", addrs.Dashboard, "simulator", addrs.Simulator, "seed", cfg.seed)
	if cfg.ready != nil {
		cfg.ready(addrs)
	}
	select {
	case err = <-dashDone:
	case err = <-serveErr:
		// The simulator's listener failed: stop the dashboard too.
		stopDashboard()
		err = errors.Join(err, <-dashDone)
	}
	return err
}
