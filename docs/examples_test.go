// Package docs_test runs the examples of README.md and docs/*.md against a running demo: an
// example a user copies is either run here or says, on its first line, that it is illustrative
// (`# illustrative: why` in a shell or Python block, `// illustrative: why` in Go or
// JavaScript, `-- illustrative: why` in SQL). JSON blocks are parsed, and the API's examples
// checked against the OpenAPI document. Blocks without a language are output and wire formats,
// not something to copy; they are left alone.
package docs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// block is one fenced example of a Markdown file.
type block struct {
	file string // relative to the module root
	line int    // of the opening fence
	lang string
	text string // without the fences and the indentation of the opening fence
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.file, b.line) }

// firstLine is the block's first line, trimmed.
func (b block) firstLine() string {
	first, _, _ := strings.Cut(strings.TrimSpace(b.text), "\n")
	return strings.TrimSpace(first)
}

// illustrative says whether the block's first line marks it so, in its language's comments.
func (b block) illustrative() bool {
	first := b.firstLine()
	for _, comment := range []string{"#", "//", "--"} {
		if strings.HasPrefix(first, comment+" illustrative:") {
			return true
		}
	}
	return false
}

var fence = regexp.MustCompile("^( *)```(\\S*)\\s*$")

// blocksOf reads the fenced blocks of a Markdown file.
func blocksOf(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", file))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, b := m[1], block{file: file, line: i + 1, lang: m[2]}
		var body []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			body = append(body, strings.TrimPrefix(lines[i], indent))
		}
		if i == len(lines) {
			t.Fatalf("%s: a fence that is never closed", b)
		}
		b.text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// documents are the Markdown files whose examples are checked.
func documents(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(strings.TrimPrefix(d, "../")))
	}
	return out
}

// run is an example that TestExamples runs, found by its file and the start of its first line.
type run struct {
	file, first string
	check       func(t *testing.T, d *demo, b block)
}

var runs = []run{
	{"README.md", "dashboard token create --name slackbot", checkTokens("/var/lib/toolq/toolq.db")},
	{"docs/api.md", "dashboard token create --name deploy-bot", checkTokens("")},
	{"README.md", "export AWS_ACCESS_KEY_ID=test", checkShell},
	{"README.md", "import boto3", checkBoto3},
	{"README.md", `import { SQSClient, ReceiveMessageCommand }`, checkJavaScript},
	{"docs/api.md", "API=http://127.0.0.1:8080/api/v1", checkShell},
	{"docs/api.md", "curl -s $API/advice", checkShell},
	{"docs/api.md", `curl -s "$API/queues/tool-calls-dlq.fifo/messages?groupBy=mcpServer"`, checkShell},
	{"docs/api.md", "import base64, hashlib, hmac, time", checkWebhookVerification},
}

func (r run) matches(b block) bool {
	return b.file == r.file && strings.HasPrefix(b.firstLine(), r.first)
}

// TestEveryExampleIsRunOrIllustrative: no example escapes this test unnoticed.
func TestEveryExampleIsRunOrIllustrative(t *testing.T) {
	used := make([]bool, len(runs))
	for _, file := range documents(t) {
		for _, b := range blocksOf(t, file) {
			i := slices.IndexFunc(runs, func(r run) bool { return r.matches(b) })
			if i >= 0 {
				used[i] = true
			}
			switch {
			case b.lang == "" || b.lang == "json":
			case b.illustrative() && i >= 0:
				t.Errorf("%s: marked illustrative, and run by this test", b)
			case b.illustrative() || i >= 0:
			default:
				t.Errorf("%s: a ```%s example neither run by docs/examples_test.go nor marked illustrative on its first line (%q)", b, b.lang, b.firstLine())
			}
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("no example of %s starts with %q any more: the test runs nothing there", runs[i].file, runs[i].first)
		}
	}
}

// TestJSONExamples parses every JSON block; those of the API's documents are checked against
// the OpenAPI document's schema that they show.
func TestJSONExamples(t *testing.T) {
	schemas := map[string]string{ // file and first line → the schema it shows
		`docs/api.md {"id":42,"at":"2026-11-30T12:00:31Z","kind":"dlq.arrival"`:                                     "Alert",
		`docs/api.md {"state":"settled","source":"samples","checkedAt":"2026-11-30T12:14:02Z","checkedCoverage":1,`: "RedriveOutcome",
	}
	spec := openAPI(t)
	for _, file := range documents(t) {
		for _, b := range blocksOf(t, file) {
			if b.lang != "json" {
				continue
			}
			var v any
			if err := json.Unmarshal([]byte(b.text), &v); err != nil {
				t.Errorf("%s: not JSON: %v", b, err)
				continue
			}
			key := b.file + " " + b.firstLine()
			if i := strings.Index(key, `,"severity"`); i > 0 {
				key = key[:i]
			}
			if name, ok := schemas[key]; ok {
				delete(schemas, key)
				for _, problem := range spec.check(v, map[string]any{"$ref": "#/components/schemas/" + name}, "$") {
					t.Errorf("%s: against the OpenAPI schema %s: %s", b, name, problem)
				}
			}
		}
	}
	for at, name := range schemas {
		t.Errorf("%s: no JSON block there any more to check against %s", at, name)
	}
}

// TestExamples runs the examples of runs against one demo.
func TestExamples(t *testing.T) {
	d := startDemo(t)
	for _, file := range documents(t) {
		for _, b := range blocksOf(t, file) {
			for _, r := range runs {
				if r.matches(b) {
					t.Run(b.String(), func(t *testing.T) { r.check(t, d, b) })
				}
			}
		}
	}
}

// need finds a program or skips the test, except under CI=true, where .ci/run installs it.
func need(t *testing.T, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no %s on PATH (.ci/run installs it)", program)
		}
		t.Skipf("no %s on PATH; skipping", program)
	}
	return path
}

// shell runs script with bash, -e and pipefail, in dir, with the demo's binary on PATH as
// `dashboard`, and returns its standard output.
func shell(t *testing.T, d *demo, dir, script string, env ...string) string {
	t.Helper()
	cmd := exec.Command(need(t, "bash"), "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(d.env(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	if strings.Contains(stderr.String(), "jq: error") || strings.Contains(stdout.String(), `"code":"internal"`) {
		t.Errorf("script:\n%s\nstdout:\n%s\nstderr:\n%s", script, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// checkShell runs a shell example against the demo: the simulator's documented address is the
// demo's, and so is the API's.
func checkShell(t *testing.T, d *demo, b block) {
	need(t, "curl")
	need(t, "jq")
	script := d.localize(b.text)
	out := shell(t, d, t.TempDir(), script, "API="+d.api)
	t.Logf("%s", out)
	if strings.TrimSpace(out) == "" {
		t.Errorf("the example printed nothing")
	}
}

// checkTokens runs the token commands on a database of their own (in place of dbPath, when the
// example names one) and checks what they print: the token on the last line of create, its
// name in the list, and no token left usable after revoke.
func checkTokens(dbPath string) func(t *testing.T, d *demo, b block) {
	return func(t *testing.T, d *demo, b block) {
		dir := t.TempDir()
		db := filepath.Join(dir, "toolq.db")
		script := b.text
		if dbPath != "" {
			script = strings.ReplaceAll(script, dbPath, db)
		}
		out := shell(t, d, dir, script, "TOOLQ_DB="+db)
		name := regexp.MustCompile(`--name (\S+)`).FindStringSubmatch(b.text)[1]
		if !regexp.MustCompile(`(?mi)^tq_[a-z2-7]{52}$`).MatchString(out) || !strings.Contains(out, name) {
			t.Errorf("the token commands printed:\n%s\nwant a tq_ token alone on a line and %s listed", out, name)
		}
	}
}

// checkBoto3 runs the Python example with the variables of the shell example above it.
func checkBoto3(t *testing.T, d *demo, b block) {
	python := need(t, "python3")
	if err := exec.Command(python, "-c", "import boto3").Run(); err != nil {
		need(t, "a python3 with boto3")
	}
	shell(t, d, t.TempDir(), python+" - <<'EOF'\n"+d.localize(b.text)+"EOF\n",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_DEFAULT_REGION=us-east-1")
}

// checkJavaScript runs the JavaScript example with the SDK the simulator's client suite pins
// (make's npm ci in sqsim/testdata/clients).
func checkJavaScript(t *testing.T, d *demo, b block) {
	node := need(t, "node")
	clients, err := filepath.Abs("../sqsim/testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(clients, "node_modules", "@aws-sdk", "client-sqs")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no @aws-sdk/client-sqs in %s (make test-docs runs npm ci)", clients)
		}
		t.Skipf("no @aws-sdk/client-sqs in %s (make test-docs runs npm ci): %v", clients, err)
	}
	script := filepath.Join(clients, fmt.Sprintf("docs-example-%d.mjs", os.Getpid()))
	source := d.localize(b.text) + "\nconsole.log(JSON.stringify({received: (Messages ?? []).length}));\n"
	if err := os.WriteFile(script, []byte(source), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(script) })
	out := shell(t, d, clients, node+" "+script)
	if !strings.Contains(out, `"received":`) {
		t.Errorf("node printed %q", out)
	}
}

// checkWebhookVerification feeds the Python verification snippet a real delivery: the demo
// sends a test notification to a webhook target here, signed with its secret, and the snippet
// must accept it as it came and refuse it with one byte of the body changed.
func checkWebhookVerification(t *testing.T, d *demo, b block) {
	python := need(t, "python3")
	if _, err := http.Post(d.api+"/notifications/test", "application/json", strings.NewReader(`{"target":"docs"}`)); err != nil {
		t.Fatal(err)
	}
	var delivery webhookDelivery
	select {
	case delivery = <-d.deliveries:
	case <-time.After(60 * time.Second):
		t.Fatal("no webhook delivery within 60 s of POST /api/v1/notifications/test")
	}
	dir := t.TempDir()
	headers, err := json.Marshal(map[string]string{
		"webhook-id":        delivery.header.Get("webhook-id"),
		"webhook-timestamp": delivery.header.Get("webhook-timestamp"),
		"webhook-signature": delivery.header.Get("webhook-signature"),
	})
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(delivery.body)
	tampered[len(tampered)/2] ^= 1
	for name, data := range map[string][]byte{"headers.json": headers, "body": delivery.body, "tampered": tampered} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script := b.text + `
import json
headers = json.load(open("headers.json"))
print(verify(SECRET, headers, open("body", "rb").read()), verify(SECRET, headers, open("tampered", "rb").read()))
`
	out := shell(t, d, dir, python+" - <<'EOF'\n"+strings.ReplaceAll(script, "SECRET", fmt.Sprintf("%q", webhookSecret))+"EOF\n")
	if strings.TrimSpace(out) != "True False" {
		t.Errorf("verify(delivery), verify(tampered delivery) = %s; want True False", out)
	}
}

// webhookSecret signs the demo's deliveries to the test's receiver, as Standard Webhooks write
// secrets.
const webhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

type webhookDelivery struct {
	header http.Header
	body   []byte
}

// demo is `dashboard demo` running as a process of its own, on free ports, with a webhook
// target that delivers here.
type demo struct {
	binDir     string // holds the binary as `dashboard`
	api        string
	simAddr    string
	deliveries chan webhookDelivery
}

// env is the examples' environment: this process's, less TOOLQ_ variables (which the binary
// would read as flags) and AWS ones (the examples set their own), with the binary on PATH.
func (d *demo) env() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TOOLQ_") || strings.HasPrefix(kv, "AWS_")
	})
	return append(env, "PATH="+d.binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// localize points an example at this demo: the documented addresses of the simulator and
// the dashboard become the demo's.
func (d *demo) localize(text string) string {
	text = strings.ReplaceAll(text, "127.0.0.1:4566", d.simAddr)
	return strings.ReplaceAll(text, "http://127.0.0.1:8080/api/v1", d.api)
}

// startDemo builds the binary and runs its demo until the test ends.
func startDemo(t *testing.T) *demo {
	t.Helper()
	need(t, "go")
	dir := t.TempDir()
	d := &demo{binDir: dir, deliveries: make(chan webhookDelivery, 16)}
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "dashboard"), "./cmd/dashboard")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dashboard: %v\n%s", err, out)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case d.deliveries <- webhookDelivery{r.Header.Clone(), body}:
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	dashAddr, simAddr := freeAddr(t), freeAddr(t)
	d.api, d.simAddr = "http://"+dashAddr+"/api/v1", simAddr
	var log bytes.Buffer
	var logMu sync.Mutex
	cmd := exec.Command(filepath.Join(dir, "dashboard"), "demo", "--listen", dashAddr, "--sim-listen", simAddr,
		"--seed", "7", "--db", filepath.Join(dir, "toolq.db"),
		"--notify", "webhook:"+receiver.URL+"/toolq#name=docs&secret="+webhookSecret)
	cmd.Env = d.env()
	cmd.Stdout, cmd.Stderr = lockedWriter{&logMu, &log}, lockedWriter{&logMu, &log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			logMu.Lock()
			t.Logf("demo log:\n%s", log.String())
			logMu.Unlock()
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+dashAddr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		select {
		case <-ctx.Done():
			logMu.Lock()
			defer logMu.Unlock()
			t.Fatalf("the demo was not ready within 90 s: %v\n%s", errors.Join(err, ctx.Err()), log.String())
		case <-time.After(200 * time.Millisecond): // polling /readyz, the demo's own signal
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
