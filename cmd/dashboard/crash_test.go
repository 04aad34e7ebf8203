package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/store"
)

// childEnv makes the test binary run `dashboard` instead of its tests (see TestMain), so that a
// test can run the real binary as a process of its own and kill it.
const childEnv = "TOOLQ_TEST_RUN_DASHBOARD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dashboardProcess is `dashboard serve` running as a child process.
type dashboardProcess struct {
	cmd    *exec.Cmd
	base   string
	exited chan struct{} // closed once the process ended and its log was read
}

// startDashboard runs `dashboard serve` with args in a process of its own and waits until it
// is ready. Its log goes to the test's output.
func startDashboard(t *testing.T, args ...string) *dashboardProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"serve", "--listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "info"}, args...)...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &dashboardProcess{cmd: cmd, exited: make(chan struct{})}
	listening := make(chan string, 1)
	var logs sync.WaitGroup
	logs.Go(func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var line struct{ Msg, URL string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "dashboard listening" {
				listening <- line.URL
			}
			t.Logf("child %d: %s", cmd.Process.Pid, sc.Text())
		}
	})
	go func() {
		logs.Wait()
		cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill(t) })
	select {
	case p.base = <-listening:
	case <-p.exited:
		t.Fatalf("dashboard ended before it listened: %v", cmd.ProcessState)
	case <-time.After(60 * time.Second):
		t.Fatal("dashboard did not listen within 60 s")
	}
	waitReady(t, p.base)
	return p
}

// kill ends the process with SIGKILL, as `kill -9` does, and waits for it.
func (p *dashboardProcess) kill(t *testing.T) {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("kill: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Error("the killed dashboard did not end")
	}
}

// TestKillBetweenIntentAndOutcome runs `dashboard serve` as a process, sends it a redrive and
// kills it with SIGKILL while its StartMessageMoveTask is in flight: after the simulator did the
// work, or before the call reached it. The database then holds the intent with no outcome. A new
// process settles it at start-up from the simulator's real move tasks, and the client's repeat
// of its press (same Idempotency-Key) is answered from that outcome without a second task.
func TestKillBetweenIntentAndOutcome(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the dashboard as a process")
	}
	tests := []struct {
		name       string
		reached    bool // whether StartMessageMoveTask reached the simulator before the kill
		wantResult string
		wantTasks  int
		wantStatus int // of the repeat
	}{
		{"after SQS started the task", true, store.AuditAccepted, 1, http.StatusAccepted},
		{"before the call reached SQS", false, store.AuditFailed, 0, http.StatusBadGateway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := actionstest.New(t)
			// The simulator's clock stands where the child's wall clock is, as AWS's and a
			// server's clocks agree (toolq allows a minute between them).
			w.Advance(time.Since(w.Now()))
			w.CreateQueue(t, "orders-dlq", "", nil)
			w.CreateQueue(t, "orders", "orders-dlq", nil)
			w.DeadLetter(t, "orders", 20)

			var mu sync.Mutex
			var child *dashboardProcess
			armed := true
			front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
				mu.Lock()
				kill := armed && r.Header.Get("X-Amz-Target") == "AmazonSQS.StartMessageMoveTask"
				if kill {
					armed = false
				}
				victim := child
				mu.Unlock()
				if !kill {
					w.Sim.ServeHTTP(rw, r)
					return
				}
				if tt.reached {
					w.Sim.ServeHTTP(httptest.NewRecorder(), r)
				}
				victim.kill(t)
				if conn, _, err := rw.(http.Hijacker).Hijack(); err == nil {
					conn.Close()
				}
			}))
			defer front.Close()

			db := filepath.Join(t.TempDir(), "toolq.db")
			args := []string{"--endpoint-url", front.URL, "--region", actionstest.Region, "--db", db, "--peek", "none"}
			first := startDashboard(t, args...)
			mu.Lock()
			child = first
			mu.Unlock()
			if code, body := postRedrive(t, first.base, "press-1"); code != 0 {
				t.Fatalf("the start answered %d %s; want the connection to break with the process", code, body)
			}
			<-first.exited

			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			pending, err := st.PendingIntents(context.Background())
			st.Close()
			if err != nil || len(pending) != 1 || pending[0].Action != actions.ActionStartRedrive || pending[0].IdempotencyKey != "press-1" {
				t.Fatalf("after the kill: pending intents %+v, %v; want the start's intent alone", pending, err)
			}
			w.Advance(time.Minute) // the task, if any, moves its messages meanwhile

			second := startDashboard(t, args...)
			st, err = store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			outcome, err := st.OutcomeOf(context.Background(), pending[0].ID)
			if err != nil {
				t.Fatalf("the new process did not settle the intent: %v", err)
			}
			if outcome.Result != tt.wantResult || !strings.HasPrefix(outcome.Detail, "settled from ListMessageMoveTasks") {
				t.Errorf("outcome = %s %q; want %s, settled from ListMessageMoveTasks", outcome.Result, outcome.Detail, tt.wantResult)
			}
			code, body := postRedrive(t, second.base, "press-1")
			if code != tt.wantStatus {
				t.Errorf("the repeated press: %d %s; want %d", code, body, tt.wantStatus)
			}
			out, err := w.SQS.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(w.ARN("orders-dlq"))})
			if err != nil || len(out.Results) != tt.wantTasks {
				t.Errorf("move tasks = %d, %v; want %d", len(out.Results), err, tt.wantTasks)
			}
			if got := w.Count(t, "orders") + w.Count(t, "orders-dlq"); got != 20 {
				t.Errorf("%d messages in orders and its DLQ; want the 20", got)
			}
		})
	}
}

// postRedrive asks a dashboard to redrive orders-dlq with an idempotency key; code 0 when the
// connection broke before an answer.
func postRedrive(t *testing.T, base, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/api/v1/queues/orders-dlq/redrives", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestServeRefusesAForeignDatabase: `dashboard serve` on a database that a newer toolq
// migrated, or that lost a table, stops at once with a message that says so.
func TestServeRefusesAForeignDatabase(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stmt, want string
	}{
		{"newer schema", "INSERT INTO goose_db_version (version_id, is_applied) VALUES (99, 1)", "newer than this toolq's"},
		{"missing table", "DROP TABLE audit_log", "lacks audit_log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "toolq.db")
			st, err := store.Open(context.Background(), db)
			if err != nil {
				t.Fatal(err)
			}
			st.Close()
			raw, err := sql.Open("sqlite", "file:"+db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := raw.Exec(tt.stmt); err != nil {
				t.Fatal(err)
			}
			raw.Close()
			_, _, err = runForTest(t, "serve", "--db", db, "--endpoint-url", "http://127.0.0.1:1", "--region", "us-east-1", "--listen", "127.0.0.1:0")
			if !errors.Is(err, store.ErrSchema) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serve = %v; want a refusal saying %q", err, tt.want)
			}
		})
	}
}
