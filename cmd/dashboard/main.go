// Command dashboard is toolq's single binary: the dashboard server, the embedded SQS and
// CloudWatch simulator, and the demo that runs both with synthetic MCP tool-call traffic.
//
// Usage:
//
//	dashboard <command> [flags]
//
// Every flag can also be set by an environment variable: TOOLQ_ followed by the flag's name
// in upper case with dashes as underscores (--sim-listen is TOOLQ_SIM_LISTEN). Run
// `dashboard <command> --help` for a command's flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], &environment{stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv})
	stop()
	if err != nil {
		os.Exit(exitCode(err, os.Stderr))
	}
}

// environment is what a command takes from its process: output streams and variables.
type environment struct {
	stdout    io.Writer
	stderr    io.Writer
	lookupEnv lookupEnvFunc
}

// command is one subcommand of the binary.
type command struct {
	name    string
	summary string
	// run parses args (the words after the command's name) and runs until done or ctx ends.
	run func(ctx context.Context, env *environment, args []string) error
}

// commands lists the subcommands in the order the help shows them. A new subcommand is one
// more entry here and a run function in its own file.
func commands() []command {
	return []command{
		{name: "serve", summary: "run the collector and the dashboard against AWS or an SQS-compatible endpoint", run: runServeCommand},
		{name: "demo", summary: "run the simulator, synthetic tool-call traffic and the dashboard in one process", run: runDemoCommand},
		{name: "sim", summary: "serve the embedded SQS and CloudWatch simulator for any SQS client", run: runSimCommand},
		{name: "mcp", summary: "bridge an MCP client that speaks only stdio to a running toolq's /mcp", run: runMCPCommand},
		{name: "token", summary: "create, list and revoke API tokens (create prints the token on its last line)", run: runTokenCommand},
		{name: "version", summary: "print the version, commit and Go version", run: runVersionCommand},
	}
}

// run dispatches args to their subcommand.
func run(ctx context.Context, args []string, env *environment) error {
	cmds := commands()
	if len(args) == 0 {
		usage(env.stderr, cmds)
		return &usageError{err: errors.New("no command given"), reported: true}
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			usage(env.stdout, cmds)
			return nil
		}
		// "dashboard help demo" is "dashboard demo --help".
		name, rest = rest[0], []string{"--help"}
	}
	i := slices.IndexFunc(cmds, func(c command) bool { return c.name == name })
	if i < 0 {
		usage(env.stderr, cmds)
		return &usageError{err: fmt.Errorf("unknown command %q", name)}
	}
	return cmds[i].run(ctx, env, rest)
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintf(w, "toolq dashboard: watch the SQS queues that carry AI agents' tool calls.\n\nUsage: dashboard <command> [flags]\n\nCommands:\n")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nEvery flag can also be set by an environment variable: TOOLQ_ and the flag's name in upper\n"+
		"case with dashes as underscores (--sim-listen is TOOLQ_SIM_LISTEN).\n"+
		"Run 'dashboard <command> --help' for the flags of a command.\n")
}

// usageError is a mistake in the command line or the environment: exit status 2.
type usageError struct {
	err error
	// reported says the message has been printed already (with the usage).
	reported bool
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// exitCode reports err on w unless that was done, and returns the process's exit status:
// 0 after --help, 2 for a usage mistake, 1 for a failure.
func exitCode(err error, w io.Writer) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if ue, ok := errors.AsType[*usageError](err); ok {
		if !ue.reported {
			fmt.Fprintf(w, "dashboard: %v\n", ue.err)
		}
		return 2
	}
	fmt.Fprintf(w, "dashboard: %v\n", err)
	return 1
}
