package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
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

	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// TestServeAgainstSimulator runs `dashboard serve` as the command line builds it, against an
// in-process simulator and a temporary database: it must become ready, store the queues its
// flags select (and the dead-letter queue of a selected source, selected or not), sample the
// dead-letter queue unless --peek none, never delete, and stop cleanly when its context ends.
func TestServeAgainstSimulator(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string // besides --endpoint-url, --region, --db and --listen
		wantQueues []string
		wantPeek   bool
	}{
		{"every queue", nil,
			[]string{"exports", "notifications", "web-search", "web-search-dlq"}, true},
		{"prefix and a queue by URL", []string{"--queue-prefix", "web-", "--queue", "{notifications}"},
			[]string{"notifications", "web-search", "web-search-dlq"}, true},
		{"the source alone brings its DLQ", []string{"--queue", "web-search"},
			[]string{"web-search", "web-search-dlq"}, true},
		{"peek none", []string{"--peek", "none"},
			[]string{"exports", "notifications", "web-search", "web-search-dlq"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := sqsim.New(sqsim.Options{Seed: 3})
			srv := httptest.NewServer(sim)
			defer srv.Close()
			client := newTestClient(t, srv.URL)
			urls := map[string]string{}
			create := func(name string, attrs map[string]string) string {
				out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
				if err != nil {
					t.Fatalf("CreateQueue %s: %v", name, err)
				}
				urls[name] = aws.ToString(out.QueueUrl)
				return urls[name]
			}
			dlqURL := create("web-search-dlq", nil)
			create("web-search", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:web-search-dlq","maxReceiveCount":3}`})
			create("notifications", nil)
			create("exports", nil)
			for i := range 3 {
				if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{
					QueueUrl: aws.String(dlqURL), MessageBody: aws.String(fmt.Sprintf(`{"toolName":"search","toolCallId":"tc_%d"}`, i)),
				}); err != nil {
					t.Fatal(err)
				}
			}

			db := filepath.Join(t.TempDir(), "toolq.db")
			args := []string{"--endpoint-url", srv.URL, "--region", "us-east-1", "--db", db, "--listen", "127.0.0.1:0", "--log-level", "warn"}
			for _, a := range tt.args {
				if a == "{notifications}" {
					a = urls["notifications"]
				}
				args = append(args, a)
			}
			base, stop := startServe(t, args)
			defer stop()

			st, err := store.Open(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			queues, err := st.ListQueues(t.Context(), store.QueueFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, q := range queues {
				names = append(names, q.Name)
			}
			if !slices.Equal(names, tt.wantQueues) {
				t.Errorf("stored queues = %v, want %v", names, tt.wantQueues)
			}
			if tt.wantPeek {
				dlq := storedQueue(t, queues, "web-search-dlq")
				waitForServe(t, "a sample of the dead-letter queue", func() bool {
					s, err := st.LatestSample(t.Context(), dlq.ID)
					return err == nil && s.Seen == 3
				})
			}

			if err := stop(); err != nil {
				t.Fatalf("runServe: %v", err)
			}
			if _, err := http.Get(base + "/healthz"); err == nil {
				t.Error("dashboard still answers after serve stopped")
			}
			if n := sim.CallCount("DeleteMessage"); n != 0 {
				t.Errorf("DeleteMessage calls = %d, want 0", n)
			}
			receives := sim.CallCount("ReceiveMessage")
			if tt.wantPeek != (receives > 0) {
				t.Errorf("ReceiveMessage calls = %d, want some: %v", receives, tt.wantPeek)
			}
			// Everything the peek took is visible again.
			snap, err := sim.Snapshot("web-search-dlq")
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range snap {
				if m.InFlight {
					t.Errorf("message %s left in flight", m.MessageID)
				}
				if tt.wantPeek != (m.ReceiveCount > 0) {
					t.Errorf("message %s received %d times, want some: %v", m.MessageID, m.ReceiveCount, tt.wantPeek)
				}
			}
			if len(snap) != 3 {
				t.Errorf("%d messages in the dead-letter queue, want the 3 sent", len(snap))
			}
		})
	}
}

func TestServeFlagsReachTheDashboard(t *testing.T) {
	t.Parallel()
	cfg, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, []string{
		"--region", "us-east-1", "--region", "eu-west-1",
		"--queue-prefix", "tool-", "--queue-prefix", "web-", "--queue", "exports",
		"--endpoint-url", "http://127.0.0.1:1", "--cloudwatch-endpoint-url", "http://127.0.0.1:2",
		"--peek-source", "tool-calls*", "--peek-source", "exports",
		"--oldest-age-warning", "2m", "--oldest-age-critical", "20m", "--dlq-depth-critical", "7",
		"--attributes-interval", "30s", "--aws-budget-per-day", "2.5", "--counters-interval", "3h", "--quiet-dlq-interval", "45s",
		"--lambda=false", "--advice-off", "no-dlq,short-polling", "--advice-off", "dlq-no-alarm",
		"--allowed-host", "Toolq.Internal,toolq.example.com",
	})
	if err != nil {
		t.Fatal(err)
	}
	th, peek := cfg.dashboard.Thresholds, cfg.dashboard.Collector.Peek
	checks := []struct {
		name      string
		got, want any
	}{
		{"regions", cfg.regions, []string{"us-east-1", "eu-west-1"}},
		{"prefixes", cfg.queuePrefixes, []string{"tool-", "web-"}},
		{"queues", cfg.queues, []string{"exports"}},
		{"endpoint", cfg.endpointURL, "http://127.0.0.1:1"},
		{"CloudWatch endpoint", cfg.cloudWatchEndpoint, "http://127.0.0.1:2"},
		{"static credentials implied", cfg.staticCredentials, true},
		{"peek sources", peek.Sources, []string{"tool-calls*", "exports"}},
		{"peek on", peek.Disabled, false},
		{"oldest warning", th.OldestAgeWarning, 2 * time.Minute},
		{"oldest critical", th.OldestAgeCritical, 20 * time.Minute},
		{"DLQ critical", th.DLQDepthCritical, int64(7)},
		{"stale after three attribute cycles", th.StaleAfter, 90 * time.Second},
		{"Lambda off", cfg.dashboard.Collector.DisableLambda, true},
		{"EventBridge on by default", cfg.dashboard.Collector.DisableEventBridge, false},
		{"advice off, comma list and repeated", cfg.dashboard.AdviceOff, []string{"no-dlq", "short-polling", "dlq-no-alarm"}},
		{"budget", cfg.dashboard.Collector.BudgetUSDPerDay, 2.5},
		{"counters", cfg.dashboard.Collector.CountersInterval, 3 * time.Hour},
		{"quiet dead-letter queues", cfg.dashboard.Collector.QuietDeadLetterInterval, 45 * time.Second},
		{"allowed hosts", cfg.dashboard.Auth.AllowedHosts, []string{"toolq.internal", "toolq.example.com"}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
	t.Run("--advice-off with no such rule", func(t *testing.T) {
		_, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, []string{"--advice-off", "no-dql"})
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "no-dlq") {
			t.Errorf("err = %v, want a usage error listing the rules", err)
		}
	})
	t.Run("--allowed-host with a port", func(t *testing.T) {
		_, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, []string{"--allowed-host", "toolq.example.com:443"})
		var usage *usageError
		if !errors.As(err, &usage) || !strings.Contains(err.Error(), "--allowed-host") {
			t.Errorf("err = %v, want a usage error naming --allowed-host", err)
		}
	})
	for _, tt := range []struct {
		peek    string
		wantOff bool
		wantErr bool
	}{{"none", true, false}, {"dlq", false, false}, {"all", false, true}} {
		t.Run("--peek "+tt.peek, func(t *testing.T) {
			cfg, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, []string{"--peek", tt.peek})
			var usage *usageError
			if tt.wantErr {
				if !errors.As(err, &usage) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil || cfg.dashboard.Collector.Peek.Disabled != tt.wantOff {
				t.Errorf("Disabled = %v, %v; want %v", cfg.dashboard.Collector.Peek.Disabled, err, tt.wantOff)
			}
		})
	}
}

// TestServeNotifySecrets: a webhook secret keeps its "+", "/" and "=" from the flag and from
// TOOLQ_NOTIFY alike, and a whsec_ secret that does not decode stops serve at start, with an
// error that does not repeat the secret.
func TestServeNotifySecrets(t *testing.T) {
	t.Parallel()
	secret := "whsec_" + base64.StdEncoding.EncodeToString(append([]byte{0xfb, 0xef, 0xff}, "twenty-nine more bytes of key"...))
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"flag", []string{"--notify", "webhook:https://bot.example/hook#name=bot&secret=" + secret}, nil},
		{"environment", nil, map[string]string{"TOOLQ_NOTIFY": "slack:https://hooks.slack.com/services/T/B/X,webhook:https://bot.example/hook#name=bot&kinds=dlq+redrive&secret=" + secret}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(tt.env)}, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			targets := cfg.dashboard.Notify.Targets
			i := slices.IndexFunc(targets, func(tg notify.Target) bool { return tg.Name == "bot" })
			if i < 0 || targets[i].Secret != secret {
				t.Errorf("targets %+v; want bot with secret %q", targets, secret)
			}
		})
	}
	broken := strings.ReplaceAll(secret, "+", " ") // what a query string makes of a "+"
	_, _, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, []string{"--notify", "webhook:https://bot.example/hook#secret=" + broken})
	var usage *usageError
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "not base64") || strings.Contains(err.Error(), broken[len("whsec_"):]) {
		t.Errorf("err = %v; want a usage error saying the secret is not base64, without the secret", err)
	}
}

// startServe runs `dashboard serve` with args as the command line parses them until it is
// ready, and returns its base URL and a stop function that ends it and returns what runServe
// returned (stopping twice is fine).
func startServe(t *testing.T, args []string) (base string, stop func() error) {
	t.Helper()
	cfg, log, err := parseServe(&environment{stderr: t.Output(), lookupEnv: env(nil)}, args)
	if err != nil {
		t.Fatalf("parseServe: %v", err)
	}
	ready := make(chan string, 1)
	cfg.ready = func(addr string) { ready <- addr }
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, cfg, log) }()
	select {
	case addr := <-ready:
		base = "http://" + addr
	case err := <-done:
		cancel()
		t.Fatalf("serve ended before it listened: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("serve did not listen within 20 s")
	}
	var once sync.Once
	var result error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case result = <-done:
			case <-time.After(20 * time.Second):
				result = errors.New("serve did not stop within 20 s of its context's end")
			}
		})
		return result
	}
	t.Cleanup(func() { stop() })
	waitReady(t, base)
	return base, stop
}

// storedQueue returns the queue of that name from queues.
func storedQueue(t *testing.T, queues []store.Queue, name string) store.Queue {
	t.Helper()
	for _, q := range queues {
		if q.Name == name {
			return q
		}
	}
	t.Fatalf("queue %s not stored", name)
	return store.Queue{}
}

// waitForServe polls cond until it holds: it waits for the collector's goroutines to have done
// something, not for time to pass.
func waitForServe(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
