package main

import (
	"bytes"
	"errors"
	"flag"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// runForTest runs the binary's run with args and no environment variables.
func runForTest(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(t.Context(), args, &environment{stdout: &out, stderr: &errOut, lookupEnv: env(nil)})
	return out.String(), errOut.String(), err
}

func TestCommandTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range commands() {
		if c.name == "" || c.summary == "" || c.run == nil {
			t.Errorf("incomplete command %+v", c)
		}
		if seen[c.name] {
			t.Errorf("command %s listed twice", c.name)
		}
		seen[c.name] = true
	}
	stdout, _, err := runForTest(t, "help")
	if err != nil {
		t.Fatalf("help: %v", err)
	}
	for name := range seen {
		if !strings.Contains(stdout, "  "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, stdout)
		}
	}
}

// TestCommandHelp runs --help of every subcommand: it must succeed, explain the command and
// name the environment variable of every flag.
func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range [][]string{{c.name, "--help"}, {"help", c.name}} {
				_, stderr, err := runForTest(t, args...)
				if !errors.Is(err, flag.ErrHelp) {
					t.Fatalf("%v: err = %v, want flag.ErrHelp", args, err)
				}
				if code := exitCode(err, &bytes.Buffer{}); code != 0 {
					t.Errorf("%v: exit code %d, want 0", args, code)
				}
				if !strings.Contains(stderr, "Usage: dashboard "+c.name) {
					t.Errorf("%v: help lacks its usage line:\n%s", args, stderr)
				}
				for _, line := range strings.Split(stderr, "\n") {
					if name, ok := strings.CutPrefix(line, "  --"); ok {
						name, _, _ = strings.Cut(name, " ")
						if !strings.Contains(stderr, "env "+envName(name)) {
							t.Errorf("flag --%s does not name %s", name, envName(name))
						}
					}
				}
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	stdout, _, err := runForTest(t, "version")
	if err != nil {
		t.Fatalf("version: %v", err)
	}
	for _, want := range []string{"dashboard " + version, "commit ", runtime.Version()} {
		if !strings.Contains(stdout, want) {
			t.Errorf("version output lacks %q:\n%s", want, stdout)
		}
	}
}

func TestUsageMistakes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantText string
	}{
		{name: "no command", args: nil, wantCode: 2, wantText: "Usage: dashboard <command>"},
		{name: "unknown command", args: []string{"serve-everything"}, wantCode: 2, wantText: `unknown command "serve-everything"`},
		{name: "unknown flag", args: []string{"version", "--verbose"}, wantCode: 2, wantText: "flag provided but not defined"},
		{name: "bad log level", args: []string{"sim", "--log-level", "loud"}, wantCode: 2, wantText: `--log-level "loud"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, err := runForTest(t, tt.args...)
			var report bytes.Buffer
			if code := exitCode(err, &report); code != tt.wantCode {
				t.Errorf("exit code %d, want %d (err %v)", code, tt.wantCode, err)
			}
			if all := stderr + report.String(); !strings.Contains(all, tt.wantText) {
				t.Errorf("output lacks %q:\n%s", tt.wantText, all)
			}
		})
	}
}

// TestMakeRunStampsTheVersion checks that `make run` builds the demo with the version and
// commit stamped into this package's version and commit variables, so that its pages do not
// say "dev" when git knows better. A dry run (make -n) prints the command without running it.
func TestMakeRunStampsTheVersion(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	cmd := exec.Command("make", "-s", "-n", "run")
	cmd.Dir = "../.." // the module root
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make -n run: %v\n%s", err, out)
	}
	line := strings.TrimSpace(string(out))
	for _, want := range []string{"-ldflags", "-X main.version=", "-X main.commit=", "./cmd/dashboard demo"} {
		if !strings.Contains(line, want) {
			t.Errorf("make run does not stamp the build (%q missing):\n%s", want, line)
		}
	}
	if strings.Contains(line, "main.version=dev ") {
		if err := exec.Command("git", "-C", "../..", "rev-parse", "HEAD").Run(); err == nil {
			t.Errorf("make run says version dev inside a git work tree:\n%s", line)
		}
	}
}
