package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// runTokenCommand manages API tokens in the same database `serve` uses:
//
//	dashboard token create --name slackbot --role viewer [--db FILE]
//	dashboard token list [--db FILE]
//	dashboard token revoke --name slackbot [--db FILE]
func runTokenCommand(ctx context.Context, env *environment, args []string) error {
	const about = "Manages the API tokens bots and browsers authenticate with under --auth token.\n" +
		"Subcommands: create (prints the token once, alone on the last line), list, revoke."
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		// Help goes to stderr like every other command's, leaving stdout to the token alone.
		fmt.Fprintf(env.stderr, "Usage: dashboard token create|list|revoke [flags]\n\n%s\nRun `dashboard token create --help` for a subcommand's flags.\n", about)
		if len(args) == 0 {
			return &usageError{err: errors.New("token: no subcommand given"), reported: true}
		}
		return flag.ErrHelp
	}
	sub, rest := args[0], args[1:]
	var db, name, role string
	fl := newEnvFlags("token "+sub, "token "+sub+" [flags]", about, env.stderr)
	fl.String(&db, "db", serveDefaults.db, "the store `serve` uses: a SQLite file or a postgres:// URL")
	switch sub {
	case "create":
		fl.String(&name, "name", "", "the token's `name`, shown in the audit log (required)")
		fl.String(&role, "role", string(auth.RoleViewer), "`role`: viewer (reads) or operator (also starts and cancels redrives)")
	case "revoke":
		fl.String(&name, "name", "", "`name` of the token to revoke (required)")
	case "list":
	default:
		return &usageError{err: fmt.Errorf("token: unknown subcommand %q (want create, list or revoke)", sub)}
	}
	if err := fl.Parse(rest, env.lookupEnv); err != nil {
		return err
	}
	if sub != "list" && name == "" {
		return &usageError{err: fmt.Errorf("token %s: --name is required", sub)}
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()

	switch sub {
	case "create":
		plain, err := auth.CreateToken(ctx, st, name, auth.Role(role))
		if err != nil {
			return fmt.Errorf("token create: %w", err)
		}
		fmt.Fprintf(env.stdout, "Created %s token %q. It is shown only now; store it safely:\n%s\n", role, name, plain)
	case "revoke":
		if err := auth.RevokeToken(ctx, st, name); errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("token revoke: no live token named %q (see dashboard token list)", name)
		} else if err != nil {
			return fmt.Errorf("token revoke: %w", err)
		}
		fmt.Fprintf(env.stdout, "Revoked token %q.\n", name)
	case "list":
		tokens, err := auth.ListTokens(ctx, st)
		if err != nil {
			return fmt.Errorf("token list: %w", err)
		}
		w := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		// The id is how the audit log tells a token from a later one given the same name.
		fmt.Fprintln(w, "ID\tNAME\tROLE\tCREATED\tLAST USED\tREVOKED")
		for _, t := range tokens {
			fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, when(t.CreatedAt), when(t.LastUsedAt), when(t.RevokedAt))
		}
		return w.Flush()
	}
	return nil
}

// when formats a time for the token list; zero is "-".
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
