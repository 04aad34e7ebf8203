package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/sqsim"
	"github.com/toolq/toolq/traffic"
)

// simConfig is the configuration of `dashboard sim`.
type simConfig struct {
	listen string
	region string
	// account is the id of the account of the ambient credentials: any request not signed
	// with credentials the simulator's STS issued.
	account string
	// roles are the --accounts items: ROLE_ARN, each optionally followed by external-id=ID.
	roles []string
	// seed is the traffic's; the simulator's ids and faults are drawn from it only when
	// seeded (--seed or its variable given), at random otherwise.
	seed    int64
	seeded  bool
	faults  string
	traffic bool
}

// defaultSimAccount is the account id of `dashboard sim` without --account, as other
// emulators use it.
const defaultSimAccount = "000000000000"

func runSimCommand(ctx context.Context, env *environment, args []string) error {
	var cfg simConfig
	var lf logFlags
	fl := newEnvFlags("sim", "sim [flags]",
		"Serves the embedded SQS and CloudWatch simulator alone, for any SQS client: the aws CLI,\n"+
			"an MCP worker, or another toolq pointed at it, in every region a client signs for, with STS\n"+
			"for its accounts. Queues live in memory and end with the process.",
		env.stderr)
	fl.String(&cfg.listen, "listen", "127.0.0.1:4566", "`address` the simulator listens on (SQS, CloudWatch, STS, Lambda and EventBridge on one port)")
	fl.Bool(&cfg.traffic, "traffic", false, "also create the demo queues and run synthetic MCP tool-call traffic on them")
	fl.String(&cfg.account, "account", defaultSimAccount, "`ID` of the simulated account that unsigned requests and any credentials the simulator did not issue belong to")
	fl.List(&cfg.roles, "accounts", nil, "another simulated account, reached by assuming the role `ROLE_ARN[,external-id=ID]` with STS (repeatable): arn:aws:iam::111111111111:role/toolq makes account 111111111111 and its role toolq")
	registerSimulatorFlags(fl, &cfg.region, &cfg.seed, &cfg.faults)
	lf.register(fl)
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return err
	}
	cfg.seeded = fl.given("seed", env.lookupEnv)
	log, err := lf.logger(env.stderr)
	if err != nil {
		return err
	}
	return runSim(ctx, cfg, log)
}

// runSim serves the simulator on cfg.listen until ctx ends, with the traffic if asked.
func runSim(ctx context.Context, cfg simConfig, log *slog.Logger) error {
	accounts, err := newSimAccounts(cfg, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return fmt.Errorf("sim: listen: %w", err)
	}
	return serveSim(ctx, cfg, accounts, ln, log)
}

// simAccounts are the accounts `dashboard sim` serves: their front door, which answers STS
// too, and each account's simulator, whose clock loop the command runs.
type simAccounts struct {
	front *sqsim.Accounts
	// home is the ambient credentials' account, where the traffic runs; all are every account,
	// home first.
	home *sqsim.Simulator
	all  []*sqsim.Simulator
}

// newSimAccounts builds the accounts of cfg: the --account one, and one for each account an
// --accounts role is in, each role assumable, every account with the faults of cfg injected.
func newSimAccounts(cfg simConfig, log *slog.Logger) (*simAccounts, error) {
	if !accountIDPattern.MatchString(cfg.account) {
		return nil, &usageError{err: fmt.Errorf("--account %q: an account id is 12 digits", cfg.account)}
	}
	roles, err := parseSimRoles(cfg.roles)
	if err != nil {
		return nil, &usageError{err: err}
	}
	home, err := newAccountSimulator(cfg.account, cfg.region, cfg.simulatorSeed(0), cfg.faults, log)
	if err != nil {
		return nil, err
	}
	accts := &simAccounts{home: home, all: []*sqsim.Simulator{home}}
	byID := map[string]bool{cfg.account: true}
	for i, r := range roles {
		if byID[r.account] {
			continue
		}
		byID[r.account] = true
		sim, err := newAccountSimulator(r.account, cfg.region, cfg.simulatorSeed(i+1), cfg.faults, log)
		if err != nil {
			return nil, err
		}
		accts.all = append(accts.all, sim)
	}
	accts.front = sqsim.NewAccounts(home, accts.all[1:]...)
	for _, r := range roles {
		if err := accts.front.AddRole(r.arn, r.externalID); err != nil {
			return nil, &usageError{err: fmt.Errorf("--accounts: %w", err)}
		}
	}
	if len(roles) > 0 {
		log.Info("simulated accounts", "ambient", cfg.account, "roles", strings.Join(cfg.roles, ","))
	}
	return accts, nil
}

// simulatorSeed is the seed of the simulator of the nth account: 0, drawing ids and faults at
// random, unless the command was seeded. A fresh simulator hands out fresh ids, as AWS's are
// unique: a consumer that keeps the ids it processed across runs would otherwise take a new
// run's messages for old ones.
func (cfg simConfig) simulatorSeed(n int) int64 {
	if !cfg.seeded {
		return 0
	}
	return cfg.seed + int64(n)
}

// accountIDPattern is what an AWS account id is: twelve digits.
var accountIDPattern = regexp.MustCompile(`^[0-9]{12}$`)

// simRole is one role of --accounts.
type simRole struct {
	arn, account, externalID string
}

// parseSimRoles reads the --accounts values: ROLE_ARN, or ROLE_ARN followed by an item
// external-id=ID, as `serve --account` writes them without the account's name. The list flag
// splits on commas, so an external-id item belongs to the role before it.
func parseSimRoles(items []string) ([]simRole, error) {
	var out []simRole
	for _, item := range items {
		if id, ok := strings.CutPrefix(item, "external-id="); ok {
			if len(out) == 0 || out[len(out)-1].externalID != "" || id == "" {
				return nil, fmt.Errorf("--accounts: %q must follow a ROLE_ARN, once", item)
			}
			out[len(out)-1].externalID = id
			continue
		}
		role, err := arn.ParseRole(item)
		if err != nil {
			return nil, fmt.Errorf("--accounts: %w", err)
		}
		out = append(out, simRole{arn: item, account: role.Account})
	}
	return out, nil
}

// serveSim serves the accounts on ln until ctx ends or serving fails, which stops the
// simulators' clock loops and the traffic too, so that a broken listener ends the command
// instead of leaving it waiting for a signal.
func serveSim(ctx context.Context, cfg simConfig, accts *simAccounts, ln net.Listener, log *slog.Logger) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	endpoint := endpointURL(ln.Addr())
	srv := newSimServer(accts.front)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	logEndpoint(log, endpoint, cfg.region)

	var loops sync.WaitGroup
	for _, sim := range accts.all {
		loops.Go(func() { sim.Run(ctx) })
	}
	if cfg.traffic {
		clients, err := newSimClients(ctx, endpoint, cfg.region)
		if err != nil {
			stop()
			loops.Wait()
			return errors.Join(err, shutdownHTTP(srv, log, "simulator"))
		}
		loops.Go(func() { runTraffic(ctx, clients, cfg.seed, log) })
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("sim: serve: %w", err)
		log.Error("simulator stopped serving", "err", err)
	}
	// The loops end with ctx; the traffic's requests are canceled before the server closes.
	stop()
	loops.Wait()
	return errors.Join(err, shutdownHTTP(srv, log, "simulator"))
}

// registerSimulatorFlags declares the flags sim and demo share: the simulated account's home
// region, the seed of the simulator and the traffic, and the faults to inject.
func registerSimulatorFlags(f *envFlags, region *string, seed *int64, faults *string) {
	f.Int64(seed, "seed", 1, "`seed` of the traffic: the same seed replays the same traffic. Given to sim, it also makes the simulator's message ids, receipt and task handles and injected faults reproducible, for tests; without it sim draws them at random, unique across runs as AWS's ids are")
	f.String(faults, "fault", "", "faults to inject into the simulator, as a `spec` like 'ReceiveMessage=throttle:0.2,latency:20ms;*=latency:5ms;SendMessageBatch=deny' (deny: every call answered AccessDenied)")
	f.String(region, "region", "us-east-1", "home `region`: of unsigned requests and the traffic; a client signing for another region gets that region's queues")
}

// given reports whether flag name was set, on the command line or by its variable.
func (f *envFlags) given(name string, lookupEnv lookupEnvFunc) bool {
	set := false
	f.fs.Visit(func(fl *flag.Flag) { set = set || fl.Name == name })
	_, inEnv := lookupEnv(envName(name))
	return set || inEnv
}

// newSimulator builds the simulator of the default account with the faults of spec injected.
func newSimulator(region string, seed int64, spec string, log *slog.Logger) (*sqsim.Simulator, error) {
	return newAccountSimulator("", region, seed, spec, log)
}

// newAccountSimulator builds the simulator of an account ("": the simulator's default) with the
// faults of spec injected.
func newAccountSimulator(account, region string, seed int64, spec string, log *slog.Logger) (*sqsim.Simulator, error) {
	log = log.With("component", "sqsim")
	if account != "" {
		log = log.With("account", account)
	}
	sim := sqsim.New(sqsim.Options{AccountID: account, Region: region, Seed: seed, Logger: log})
	if spec == "" {
		return sim, nil
	}
	faults, err := sqsim.ParseFaults(spec)
	if err != nil {
		return nil, &usageError{err: fmt.Errorf("--fault: %w", err)}
	}
	for op, f := range faults {
		sim.SetFault(op, f)
	}
	log.Info("faults injected", "spec", spec)
	return sim, nil
}

// newSimServer wraps the simulator (or its accounts) in an http.Server. No write timeout: long
// polls hold a request for up to 20 s.
func newSimServer(sim http.Handler) *http.Server {
	return &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
}

// newSimClients returns the stock clients for the simulator at endpoint.
func newSimClients(ctx context.Context, endpoint, region string) (awsconf.Clients, error) {
	clients, err := awsconf.Load(ctx, awsconf.Options{Region: region, EndpointURL: endpoint, StaticCredentials: true})
	if err != nil {
		return awsconf.Clients{}, fmt.Errorf("simulator client: %w", err)
	}
	return clients, nil
}

// runTraffic runs the synthetic traffic until ctx ends, with the demo's EventBridge bus, Lambda
// consumer and alarm; a failure is logged, not fatal, since the simulator stays useful without it.
func runTraffic(ctx context.Context, clients awsconf.Clients, seed int64, log *slog.Logger) {
	in := traffic.Integrations{EventBridge: clients.EventBridge, Lambda: clients.Lambda, CloudWatch: clients.CloudWatch}
	if err := traffic.New(clients.SQS, traffic.Options{Seed: seed, Logger: log, Integrations: in}).Run(ctx); err != nil {
		log.Error("traffic stopped", "err", err)
	}
}

// logEndpoint tells how to reach the simulator with the aws CLI, which needs credentials of
// some kind even though the simulator checks none.
func logEndpoint(log *slog.Logger, endpoint, region string) {
	log.Info("simulator listening", "endpoint", endpoint, "region", region)
	log.Info("try it",
		"command", fmt.Sprintf("AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test aws --endpoint-url %s --region %s sqs list-queues", endpoint, region))
}

// endpointURL is the URL clients on this machine use for a listener: a wildcard address
// (0.0.0.0, ::) is reached on loopback.
func endpointURL(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return "http://" + addr.String()
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, fmt.Sprint(tcp.Port))
}

// shutdownTimeout bounds a graceful shutdown; a long poll from an outside client can hold
// its connection for 20 s, which is not worth waiting for.
const shutdownTimeout = 5 * time.Second

// shutdownHTTP stops srv gracefully, then forcibly once shutdownTimeout has passed.
func shutdownHTTP(srv *http.Server, log *slog.Logger, name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		log.Warn("closing connections that outlived the shutdown", "server", name, "timeout", shutdownTimeout)
		err = srv.Close()
	}
	if err != nil {
		return fmt.Errorf("shut down %s server: %w", name, err)
	}
	return nil
}
