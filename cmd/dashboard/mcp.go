package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/toolq/toolq/internal/mcpbridge"
)

// tokenEnv holds the bridge's token when no file does: a token on the command line would show
// in ps and in the client's configuration, so there is no --token flag.
const tokenEnv = "TOOLQ_TOKEN"

// runMCPCommand bridges a client that speaks MCP only over stdio to a running toolq:
//
//	dashboard mcp --url https://toolq.example.com [--token-file FILE]
//
// Standard output carries the protocol; logs go to standard error.
func runMCPCommand(ctx context.Context, env *environment, args []string) error {
	const about = "Serves a running toolq's MCP tools on standard input and output, for MCP clients that\n" +
		"speak only stdio: every call goes to the dashboard's /mcp as it is, under the token's role,\n" +
		"and nothing is stored here. The token comes from --token-file or the environment variable\n" +
		tokenEnv + " (none under --auth none)."
	var url, tokenFile string
	var logs logFlags
	fl := newEnvFlags("mcp", "mcp --url URL [flags]", about, env.stderr)
	fl.String(&url, "url", "", "the toolq to reach: its `address` (https://toolq.example.com) or its /mcp endpoint (required)")
	fl.String(&tokenFile, "token-file", "", "a `file` holding the API token, alone (instead of "+tokenEnv+")")
	logs.format = "text"
	fl.String(&logs.level, "log-level", "warn", "minimum `level` logged to standard error: debug, info, warn or error")
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return err
	}
	if url == "" {
		return &usageError{err: errors.New("mcp: --url is required")}
	}
	if _, err := mcpbridge.Endpoint(url); err != nil {
		return &usageError{err: fmt.Errorf("mcp: --url: %w", err)}
	}
	token, err := bridgeToken(tokenFile, env.lookupEnv)
	if err != nil {
		return err
	}
	log, err := logs.logger(env.stderr)
	if err != nil {
		return err
	}
	v, _ := buildVersion()
	return mcpbridge.Run(ctx, mcpbridge.Options{URL: url, Token: token, Version: v, Logger: log}, &mcpbridge.LineTransport{In: os.Stdin, Out: os.Stdout})
}

// bridgeToken reads the bridge's token: from the file, or from TOOLQ_TOKEN, not both.
func bridgeToken(file string, lookupEnv lookupEnvFunc) (string, error) {
	fromEnv, inEnv := lookupEnv(tokenEnv)
	if file == "" {
		return strings.TrimSpace(fromEnv), nil
	}
	if inEnv {
		return "", &usageError{err: fmt.Errorf("mcp: the token comes from --token-file or %s, not both", tokenEnv)}
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("mcp: read the token: %w", err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" || strings.ContainsAny(token, " \t\r\n") {
		return "", fmt.Errorf("mcp: %s must hold the token alone", file)
	}
	return token, nil
}
