package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/openapitest"
	"github.com/toolq/toolq/sqsim"
)

// records keeps the messages of the log records it handles, in order.
type records struct {
	mu   sync.Mutex
	msgs []string
	bad  []string // warnings and errors
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Message)
	if rec.Level >= slog.LevelWarn {
		line := rec.Message
		rec.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
		r.bad = append(r.bad, line)
	}
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// TestDashboardRunsAndStopsInOrder assembles the dashboard against the simulator, serves it on a
// loopback port until it is ready and shows the simulator's queue, then stops it: Run returns
// nil; the HTTP server stops first, then the collector, then the websockets (an open one is told
// 1012 and the hub is gone), then the database, after everything that used it (nothing logs a
// failed write).
func TestDashboardRunsAndStopsInOrder(t *testing.T) {
	sim := httptest.NewServer(sqsim.New(sqsim.Options{}))
	defer sim.Close()
	ctx := t.Context()
	clients, err := awsconf.Load(ctx, awsconf.Options{Region: "us-east-1", EndpointURL: sim.URL, StaticCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tool-calls")}); err != nil {
		t.Fatal(err)
	}
	logs := &records{}
	d, err := New(ctx, Config{
		DBPath:  filepath.Join(t.TempDir(), "toolq.db"),
		Listen:  "127.0.0.1:0",
		Regions: []Region{{Name: "us-east-1", Clients: clients}},
		Auth:    auth.Config{Mode: auth.ModeNone},
		Logger:  slog.New(logs),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx, ln) }()

	waitFor(t, base+"/readyz", "")
	waitFor(t, base+"/api/v1/queues", `"name":"tool-calls"`)
	// Every loop of the collector has reported, and the status says so as the document does.
	waitFor(t, base+"/api/v1/status", `"loop":"topology"`)
	waitFor(t, base+"/api/v1/summary", `"sight"`)
	waitFor(t, base+"/metrics", "toolq_aws_calls_total")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(base, "http")+"/ws?topic=overview", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return within 15 s of cancel")
	}
	if err := d.Store.Ping(context.Background()); err == nil {
		t.Error("the database is still open after Run returned")
	}
	for {
		_ = ws.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, _, err := ws.ReadMessage(); err != nil {
			if !websocket.IsCloseError(err, live.CloseServiceRestart) {
				t.Errorf("the open websocket ended with %v, want close %d", err, live.CloseServiceRestart)
			}
			break
		}
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	var steps []string
	for _, m := range logs.msgs {
		if strings.HasPrefix(m, "shutdown: ") {
			steps = append(steps, strings.TrimPrefix(m, "shutdown: "))
		}
	}
	want := []string{"HTTP server stopped", "collector, notifier and snapshots stopped", "websockets closed", "database closed"}
	if !slices.Equal(steps, want) {
		t.Errorf("shutdown steps = %q, want %q", steps, want)
	}
	if len(logs.bad) > 0 {
		t.Errorf("warnings while running and stopping: %q", logs.bad)
	}
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	if _, err := New(t.Context(), Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("New without a database path and regions: no error")
	}
}

// api is the tests' HTTP client: each answer of /api/v1 it gets must be one the OpenAPI document
// describes, or the request fails with the reason.
var api = sync.OnceValue(func() *http.Client { return openapitest.Client("../server/openapi.json") })

// waitFor polls url until it answers 200 with a body containing want (an API answer as the
// OpenAPI document describes it).
func waitFor(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := api().Get(url)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(body), want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: no 200 with %q within 15 s (last error %v)", url, want, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
