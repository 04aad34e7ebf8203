package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/sqsim"
)

// TestDashboardRunsAndStopsInOrder assembles the dashboard against the simulator, serves it on a
// loopback port until it is ready and shows the simulator's queue, then stops it: Run returns
// nil and the database is closed after everything that used it.
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
	d, err := New(ctx, Config{
		DBPath:  filepath.Join(t.TempDir(), "toolq.db"),
		Listen:  "127.0.0.1:0",
		Regions: []Region{{Name: "us-east-1", Clients: clients}},
		Auth:    auth.Config{Mode: auth.ModeNone},
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
	waitFor(t, base+"/metrics", "toolq_aws_calls_total")

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
}

func TestNewRefusesIncompleteConfig(t *testing.T) {
	if _, err := New(t.Context(), Config{Listen: "127.0.0.1:0"}); err == nil {
		t.Error("New without a database path and regions: no error")
	}
}

// waitFor polls url until it answers 200 with a body containing want.
func waitFor(t *testing.T, url, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(url)
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
