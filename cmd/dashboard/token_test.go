package main

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// TestTokenCommands creates, lists and revokes a token through the CLI, in the database file
// `serve` would use, and checks that the printed token is the one the store knows.
func TestTokenCommands(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "toolq.db")

	out, _, err := runForTest(t, "token", "create", "--name", "slackbot", "--role", "operator", "--db", db)
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	plain := lines[len(lines)-1]
	if !strings.HasPrefix(plain, "tq_") || strings.ContainsAny(plain, " \t") {
		t.Fatalf("last line %q is not a token alone", plain)
	}

	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := st.TokenByHash(t.Context(), auth.HashToken(plain))
	st.Close()
	if err != nil || tok.Name != "slackbot" || auth.Role(tok.Role) != auth.RoleOperator {
		t.Fatalf("stored token: %+v, %v", tok, err)
	}

	if _, _, err := runForTest(t, "token", "create", "--name", "slackbot", "--db", db); err == nil {
		t.Error("a second live token of the same name was accepted")
	}
	if _, _, err := runForTest(t, "token", "create", "--name", "x", "--role", "admin", "--db", db); err == nil {
		t.Error("role admin was accepted")
	}

	out, _, err = runForTest(t, "token", "list", "--db", db)
	if err != nil || !regexp.MustCompile(fmt.Sprintf(`(?m)^%d\s+slackbot\s`, tok.ID)).MatchString(out) || strings.Contains(out, plain) {
		t.Fatalf("token list: err %v, output:\n%s", err, out)
	}
	if _, _, err := runForTest(t, "token", "revoke", "--name", "slackbot", "--db", db); err != nil {
		t.Fatalf("token revoke: %v", err)
	}
	if _, _, err := runForTest(t, "token", "revoke", "--name", "slackbot", "--db", db); err == nil {
		t.Error("revoking a revoked token succeeded")
	}
	for _, args := range [][]string{{"token"}, {"token", "rotate"}, {"token", "create", "--db", db}} {
		if _, _, err := runForTest(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}
