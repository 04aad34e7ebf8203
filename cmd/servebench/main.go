// Command servebench measures what users of `dashboard serve` see, from outside the process:
// it starts `dashboard sim` and `dashboard serve` from a given binary, makes a fleet of queues on
// the simulator through the stock SDK, waits for the dashboard's first full cycle, then times
// real HTTP requests (GET / against GET /healthz in the same run), weighs the page, holds 100
// clients on it and reads the server's RSS, and, with -ws, connects websocket clients
// (permessage-deflate) to the overview and weighs and times its pushes across a minute's turn.
// Run it for an old and a new build one after the other (make bench-serve) to compare them in
// the same hour; every figure it prints is a median or a percentile over the run.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "servebench:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	binary   string
	label    string
	pairs    int
	holding  int // every holding-th dead-letter queue holds a message
	requests int
	clients  int
	ws       int
	wsFor    int // seconds of pushes to watch
}

func run(ctx context.Context, args []string) error {
	var cfg config
	fs := flag.NewFlagSet("servebench", flag.ContinueOnError)
	fs.StringVar(&cfg.binary, "dashboard", "bin/dashboard", "the `binary` to measure (its sim and serve)")
	fs.StringVar(&cfg.label, "label", "", "a name for the build in the output (default: the binary)")
	fs.IntVar(&cfg.pairs, "pairs", 500, "source queues, each with a dead-letter queue: 2×pairs queues")
	fs.IntVar(&cfg.holding, "holding", 2, "every Nth dead-letter queue holds a message (a problem that needs a person)")
	fs.IntVar(&cfg.requests, "requests", 100, "GET / and GET /healthz requests, one at a time, for their medians")
	fs.IntVar(&cfg.clients, "clients", 100, "HTTP clients at once on GET / while the server's RSS is read")
	fs.IntVar(&cfg.ws, "ws", 0, "websocket clients on the overview (0: none)")
	fs.IntVar(&cfg.wsFor, "ws-seconds", 75, "how long to watch the websocket pushes (at least a minute's turn)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if cfg.pairs < 1 || cfg.holding < 1 || cfg.requests < 1 || cfg.clients < 1 {
		return errors.New("-pairs, -holding, -requests and -clients must be at least 1")
	}
	if cfg.label == "" {
		cfg.label = cfg.binary
	}
	b, err := startBench(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.stop()
	return b.measure(ctx)
}
