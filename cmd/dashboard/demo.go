package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// demoConfig is the configuration of `dashboard demo`.
type demoConfig struct {
	listen    string
	simListen string
	region    string
	seed      int64
	faults    string
	// ready, when set, is called once every listener is bound, with the addresses they got
	// (tests listen on port 0).
	ready func(demoAddrs)
}

// demoAddrs are the URLs the demo serves on.
type demoAddrs struct {
	// Dashboard is the dashboard's base URL.
	Dashboard string
	// Simulator is the simulator's public endpoint; empty when --sim-listen is off or taken.
	Simulator string
}

func runDemoCommand(ctx context.Context, env *environment, args []string) error {
	var cfg demoConfig
	var lf logFlags
	fl := newEnvFlags("demo", "demo [flags]",
		"Runs the SQS and CloudWatch simulator, synthetic MCP tool-call traffic and the dashboard in one\n"+
			"process: a living demo with no AWS account. The simulator is also served on --sim-listen so\n"+
			"that the aws CLI or a local MCP worker can use the demo's queues.",
		env.stderr)
	fl.String(&cfg.listen, "listen", "127.0.0.1:8080", "`address` of the dashboard")
	fl.String(&cfg.simListen, "sim-listen", "127.0.0.1:4566", "`address` on which the simulator is also served; '' turns it off, a taken port is skipped")
	fl.Int64(&cfg.seed, "seed", 1, "`seed` of the simulator and the traffic: the same seed replays the same traffic")
	fl.String(&cfg.faults, "fault", "", "faults to inject into the simulator, as a `spec` like 'ReceiveMessage=throttle:0.2'")
	fl.String(&cfg.region, "region", "us-east-1", "`region` of the simulated account")
	lf.register(fl)
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return err
	}
	log, err := lf.logger(env.stderr)
	if err != nil {
		return err
	}
	return runDemo(ctx, cfg, log)
}

// runDemo wires the demo together and runs it until ctx ends. The steps are kept apart so
// that the dashboard's real server and collector replace step 4 and join step 3.
func runDemo(ctx context.Context, cfg demoConfig, log *slog.Logger) (err error) {
	// 1. Bind every listener first: a taken dashboard port fails before anything starts.
	dashLn, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("demo: listen: %w", err)
	}
	defer dashLn.Close() // after Serve it is closed already; this covers early returns
	// The traffic and the dashboard reach the simulator on a private loopback port, so the
	// demo works whether or not the public one is available.
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

	// 2. The simulator, served on its listeners.
	sim, err := newSimulator(cfg.region, cfg.seed, cfg.faults, log)
	if err != nil {
		simLn.Close()
		if publicLn != nil {
			publicLn.Close()
		}
		return err
	}
	simSrv := newSimServer(sim)
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
	// Shut down last: the traffic (and later the collector) talk to it until they stop.
	defer func() { err = errors.Join(err, shutdownHTTP(simSrv, log, "simulator")) }()

	client, err := newSimClient(ctx, endpointURL(simLn.Addr()), cfg.region)
	if err != nil {
		return err
	}

	// 3. Background loops, on a context of their own so that they stop after the HTTP
	// server, not with it.
	bg, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
	var loops sync.WaitGroup
	defer func() {
		stopLoops()
		loops.Wait()
	}()
	loops.Go(func() { sim.Run(bg) })
	loops.Go(func() { runTraffic(bg, client, cfg.seed, log) })

	// 4. The dashboard's HTTP server.
	dashSrv := &http.Server{Handler: demoHandler(client, log), ReadHeaderTimeout: 10 * time.Second}
	go serve("dashboard", dashSrv, dashLn)
	log.Info("demo ready", "dashboard", addrs.Dashboard, "simulator", addrs.Simulator, "seed", cfg.seed)
	if cfg.ready != nil {
		cfg.ready(addrs)
	}

	// 5. Run until a signal or a server failure, then stop in order: HTTP server, loops
	// (deferred above, waited for), simulator.
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err = <-serveErr:
	}
	return errors.Join(err, shutdownHTTP(dashSrv, log, "dashboard"))
}

// demoHandler serves the dashboard's probes until the real server takes its place:
// /healthz says the process is up, /readyz that the simulator answers.
func demoHandler(client *sqs.Client, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeProbe(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := client.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1)}); err != nil {
			log.Warn("readiness: simulator not answering", "err", err)
			writeProbe(w, http.StatusServiceUnavailable, "simulator not answering")
			return
		}
		writeProbe(w, http.StatusOK, "ready")
	})
	return mux
}

func writeProbe(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, text)
}
