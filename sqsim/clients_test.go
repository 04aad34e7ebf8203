package sqsim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/sqsim"
)

// The third-party client suites: the AWS SDK for JavaScript v3 and boto3 run
// the seeds' patterns against the simulator, as an MCP server's developer
// would. Their scripts and the pinned npm packages are in testdata/clients.
// A missing tool skips its suite with the reason, except under CI=true,
// where .ci/run has installed them and a missing one fails.

const clientsDir = "testdata/clients"

// requireTool skips the test, or fails it under CI, when a tool is
// missing.
func requireTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and "+format+" (.ci/run installs it)", args...)
	}
	t.Skipf(format+"; skipping (make test installs the npm packages; .ci/run installs the rest)", args...)
}

// clientServer serves a simulator on a manual clock, behind the Accounts
// front door that answers STS as `dashboard sim` does, and a test-only
// endpoint that moves the clock: POST /__clock?advance=<seconds>. The clock
// starts at the current minute so that clients reading the wall clock ask
// for the right times.
func clientServer(t *testing.T) (endpoint, clockURL string) {
	t.Helper()
	clock := sqsim.NewManualClock(time.Now().UTC().Truncate(time.Minute))
	sim := sqsim.New(sqsim.Options{Clock: clock, Seed: 1})
	mux := http.NewServeMux()
	mux.HandleFunc("POST /__clock", func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.Atoi(r.URL.Query().Get("advance"))
		if err != nil {
			http.Error(w, "advance=<seconds>", http.StatusBadRequest)
			return
		}
		clock.Advance(time.Duration(secs) * time.Second)
		sim.Tick()
	})
	mux.Handle("/", sqsim.NewAccounts(sim))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL, srv.URL + "/__clock"
}

// clientEnv is the environment of a client process: this one's, less
// anything that could point a client at real AWS credentials, settings or
// endpoints.
func clientEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return append(env, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}

var closingLine = regexp.MustCompile(`(?m)^(\d+) passed, (\d+) failed(, \d+ skipped)?$`)

// runSuite runs a suite's command with the simulator's addresses in its
// environment and checks that every one of its checks passed.
func runSuite(t *testing.T, name string, args []string, extraEnv ...string) string {
	t.Helper()
	endpoint, clockURL := clientServer(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = clientsDir
	cmd.Env = append(clientEnv(), append([]string{"SQSIM_ENDPOINT=" + endpoint, "SQSIM_CLOCK=" + clockURL}, extraEnv...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	t.Logf("%s %s (%v):\n%s", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond), out.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	m := closingLine.FindStringSubmatch(out.String())
	if m == nil || m[2] != "0" || m[1] == "0" {
		t.Fatalf("%s: no closing line with checks passed and none failed", name)
	}
	return out.String()
}

// TestJavaScriptSDK runs seeds.mjs with the pinned @aws-sdk/client-sqs and
// @aws-sdk/client-cloudwatch (AWS JSON 1.0 for both).
func TestJavaScriptSDK(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		requireTool(t, "node is not installed")
	}
	for _, pkg := range []string{"client-sqs", "client-cloudwatch"} {
		if _, err := os.Stat(filepath.Join(clientsDir, "node_modules", "@aws-sdk", pkg, "package.json")); err != nil {
			requireTool(t, "@aws-sdk/%s is not installed in %s (run 'npm ci' there, or 'make test')", pkg, clientsDir)
		}
	}
	runSuite(t, node, []string{"seeds.mjs"})
}

// pythonsWithBoto3 returns the Python interpreters on this machine that can
// import boto3, one per installation, with their botocore versions:
// python3 on the PATH (pyenv's botocore 1.43 here, AWS JSON 1.0) and
// Debian's /usr/bin/python3 with python3-boto3 (botocore 1.29, the Query
// protocol) speak different protocols, and both are run.
func pythonsWithBoto3(t *testing.T) map[string]string {
	t.Helper()
	found := map[string]string{} // executable -> botocore version
	candidates := []string{"python3", "/usr/bin/python3"}
	if p := os.Getenv("TOOLQ_PYTHON"); p != "" {
		candidates = []string{p}
	}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			continue
		}
		out, err := exec.Command(path, "-c", "import sys, boto3, botocore; print(sys.executable, botocore.__version__)").Output()
		if err != nil {
			continue
		}
		exe, version, _ := strings.Cut(strings.TrimSpace(string(out)), " ")
		if _, seen := found[exe]; !seen {
			found[exe] = version
		}
	}
	return found
}

// TestBoto3 runs seeds.py with every boto3 on the machine.
func TestBoto3(t *testing.T) {
	t.Parallel()
	pythons := pythonsWithBoto3(t)
	if len(pythons) == 0 {
		requireTool(t, "no python3 with boto3 is installed")
	}
	for exe, version := range pythons {
		t.Run("botocore-"+version, func(t *testing.T) {
			runSuite(t, exe, []string{"seeds.py"})
		})
	}
}

// TestMotoDifferential runs differential.py against moto server and the
// simulator and compares the two transcripts step by step. Every step whose
// answers differ must be listed in moto_differences.txt with the side that
// matches AWS and why.
func TestMotoDifferential(t *testing.T) {
	t.Parallel()
	python := pythonWithMoto(t)
	motoURL := startMoto(t, python)
	simURL, _ := clientServer(t)
	motoSteps := transcript(t, python, motoURL)
	simSteps := transcript(t, python, simURL)
	allowed := readAllowlist(t)
	names := slices.Sorted(maps.Keys(simSteps))
	differ := 0
	for _, step := range names {
		got, want := simSteps[step], motoSteps[step]
		if reflect.DeepEqual(got, want) {
			if _, ok := allowed[step]; ok {
				t.Logf("%s: listed as a difference, but moto and the simulator now agree", step)
			}
			continue
		}
		differ++
		if _, ok := allowed[step]; !ok {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s differs and is not in moto_differences.txt:\n  sqsim: %s\n  moto:  %s", step, g, w)
		}
	}
	t.Logf("%d steps, %d differ (all listed with the side that matches AWS)", len(names), differ)
	if len(names) < 40 || len(motoSteps) != len(names) {
		t.Errorf("transcripts of %d (sqsim) and %d (moto) steps, want the same 40 or more", len(names), len(motoSteps))
	}
}

// pythonWithMoto finds a python3 that imports boto3 and moto's server.
func pythonWithMoto(t *testing.T) string {
	t.Helper()
	for exe := range pythonsWithBoto3(t) {
		if exec.Command(exe, "-c", "import moto.server").Run() == nil {
			return exe
		}
	}
	requireTool(t, "no python3 with boto3 and moto is installed")
	return ""
}

// startMoto starts moto server on a free loopback port and stops it when
// the test ends.
func startMoto(t *testing.T, python string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Env = clientEnv()
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start moto: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto server not answering on %s within 30s: %v\n%s", url, err, logs.String())
		}
		time.Sleep(100 * time.Millisecond) // polls a starting process, not the clock
	}
}

func transcript(t *testing.T, python, endpoint string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "differential.py")
	cmd.Dir = clientsDir
	cmd.Env = append(clientEnv(), "SQSIM_ENDPOINT="+endpoint)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("differential.py against %s: %v\n%s", endpoint, err, stderr.String())
	}
	var steps map[string]any
	if err := json.Unmarshal(out, &steps); err != nil {
		t.Fatalf("differential.py against %s: %v\n%s", endpoint, err, out)
	}
	return steps
}

// allowlistLine is "step: side: why", side being sqsim, moto or neither:
// the side whose answer matches AWS's.
var allowlistLine = regexp.MustCompile(`^([a-z0-9_.]+): (sqsim|moto|neither): (\S.*)$`)

func readAllowlist(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(clientsDir, "moto_differences.txt"))
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := allowlistLine.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("moto_differences.txt:%d: want 'step: sqsim|moto|neither: why', got %q", i+1, line)
		}
		allowed[m[1]] = m[2]
	}
	return allowed
}
