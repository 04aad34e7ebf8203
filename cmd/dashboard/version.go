package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set at build time: go build -ldflags "-X main.version=v1.2.3 -X main.commit=abc1234".
var (
	version = "dev"
	commit  = ""
)

// buildVersion returns the version and commit, falling back on what the Go toolchain
// recorded: the module version under `go install …@v1.2.3`, the VCS revision when built
// inside a work tree.
func buildVersion() (v, c string) {
	v, c = version, commit
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v, orUnknown(c)
	}
	if v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	if c == "" {
		dirty := ""
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				c = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					dirty = "-dirty"
				}
			}
		}
		if c != "" {
			c += dirty
		}
	}
	return v, orUnknown(c)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func runVersionCommand(ctx context.Context, env *environment, args []string) error {
	fl := newEnvFlags("version", "version", "Prints the version, the commit and the Go version this binary was built with.", env.stderr)
	if err := fl.Parse(args, env.lookupEnv); err != nil {
		return err
	}
	v, c := buildVersion()
	fmt.Fprintf(env.stdout, "dashboard %s\ncommit %s\n%s %s/%s\n", v, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
