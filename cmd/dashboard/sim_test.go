package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/toolq/toolq/internal/awsconf"
)

// endpointWriter collects a command's log and hands over the endpoint of the first
// "simulator listening" record.
type endpointWriter struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	endpoint chan string
	found    bool
}

var endpointPattern = regexp.MustCompile(`msg="simulator listening" endpoint=(\S+)`)

func (w *endpointWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := endpointPattern.FindSubmatch(w.buf.Bytes()); m != nil && !w.found {
		w.found = true
		w.endpoint <- string(m[1])
	}
	return len(p), nil
}

func (w *endpointWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestSimFaultFlag runs `dashboard sim` as the binary does, from its flags or their
// environment variables, and checks that the injected fault reaches an SDK client: the
// faulty operation is throttled, the others are not.
func TestSimFaultFlag(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  map[string]string
	}{
		{name: "flag", args: []string{"--fault", "SendMessage=throttle:1"}},
		{name: "environment", env: map[string]string{"TOOLQ_FAULT": "SendMessage=throttle:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			logs := &endpointWriter{endpoint: make(chan string, 1)}
			args := append([]string{"sim", "--listen", "127.0.0.1:0"}, tt.args...)
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, args, &environment{stdout: logs, stderr: logs, lookupEnv: env(tt.env)})
			}()
			var endpoint string
			select {
			case endpoint = <-logs.endpoint:
			case err := <-done:
				t.Fatalf("sim ended before listening: %v\n%s", err, logs)
			case <-time.After(20 * time.Second):
				t.Fatalf("sim not listening within 20s:\n%s", logs)
			}

			base := newTestClient(t, endpoint)
			client := sqs.New(base.Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 1 })
			out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
			if err != nil {
				t.Fatalf("CreateQueue, which has no fault: %v", err)
			}
			_, err = client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("x")})
			if _, ok := errors.AsType[*types.RequestThrottled](err); !ok {
				t.Errorf("SendMessage: err = %v, want RequestThrottled", err)
			}

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("sim: %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("sim did not stop within 20s of its context's end")
			}
		})
	}
}

// TestSimBadFault checks that a malformed --fault is a usage mistake, found before
// anything listens.
func TestSimBadFault(t *testing.T) {
	t.Parallel()
	_, stderr, err := runForTest(t, "sim", "--listen", "127.0.0.1:0", "--fault", "SendMessage=throttle:2")
	if code := exitCode(err, &bytes.Buffer{}); code != 2 {
		t.Errorf("exit code %d, want 2 (err %v)", code, err)
	}
	if bytes.Contains([]byte(stderr), []byte("simulator listening")) {
		t.Error("the simulator listened despite a bad --fault")
	}
}

// brokenListener accepts nothing: its Accept fails at once with a permanent error, as a
// listener whose socket was closed under it does.
type brokenListener struct {
	net.Listener
}

func (l brokenListener) Accept() (net.Conn, error) {
	return nil, errors.New("accept: the listener broke")
}

// TestSimEndsWhenItsListenerFails checks that `dashboard sim` returns the serving error
// when its listener fails, with or without traffic, instead of waiting for a signal that
// may never come.
func TestSimEndsWhenItsListenerFails(t *testing.T) {
	t.Parallel()
	for _, withTraffic := range []bool{false, true} {
		t.Run(fmt.Sprintf("traffic=%v", withTraffic), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			cfg := simConfig{region: "us-east-1", account: defaultSimAccount, seed: 1, traffic: withTraffic}
			accounts, err := newSimAccounts(cfg, log)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- serveSim(t.Context(), cfg, accounts, brokenListener{ln}, log) }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "the listener broke") {
					t.Errorf("err = %v, want the listener's error", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("sim still running 20s after its listener failed")
			}
		})
	}
}

// TestSimAccounts runs `dashboard sim --account … --accounts …` and reaches its accounts as
// `serve --account` reaches AWS's, through toolq's own clients: the ambient credentials are in
// --account, each role's credentials in the role's account, in the region the client signs for.
func TestSimAccounts(t *testing.T) {
	t.Parallel()
	endpoint := startSim(t, "--account", "123456789012",
		"--accounts", "arn:aws:iam::111111111111:role/toolq,external-id=ext-1", "--accounts", "arn:aws:iam::222222222222:role/ops")
	ctx := t.Context()
	opts := awsconf.Options{Region: "us-east-1", EndpointURL: endpoint, StaticCredentials: true, MaxAttempts: 1}
	ambient, err := awsconf.Load(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	who, err := ambient.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(who.Account) != "123456789012" || aws.ToString(who.Arn) != "arn:aws:iam::123456789012:root" {
		t.Errorf("GetCallerIdentity with the ambient credentials = %+v, %v", who, err)
	}
	for _, tt := range []struct {
		role, externalID, region, wantARN string
	}{
		{"arn:aws:iam::111111111111:role/toolq", "ext-1", "us-east-1", "arn:aws:sqs:us-east-1:111111111111:tool-calls"},
		{"arn:aws:iam::111111111111:role/toolq", "ext-1", "eu-west-1", "arn:aws:sqs:eu-west-1:111111111111:tool-calls"},
		{"arn:aws:iam::222222222222:role/ops", "", "us-east-1", "arn:aws:sqs:us-east-1:222222222222:tool-calls"},
	} {
		o := opts
		o.Region = tt.region
		clients, err := awsconf.LoadAssumed(ctx, o, tt.role, tt.externalID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tool-calls")})
		if err != nil {
			t.Fatalf("CreateQueue as %s in %s: %v", tt.role, tt.region, err)
		}
		attrs, err := clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		if err != nil || attrs.Attributes["QueueArn"] != tt.wantARN {
			t.Errorf("as %s in %s: QueueArn %v, %v; want %s", tt.role, tt.region, attrs, err, tt.wantARN)
		}
	}
	wrong, err := awsconf.LoadAssumed(ctx, opts, "arn:aws:iam::111111111111:role/toolq", "not-ext-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.SQS.ListQueues(ctx, &sqs.ListQueuesInput{}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("a wrong external id: %v, want AccessDenied", err)
	}
}

// TestSimBadAccounts: a malformed --account or --accounts is a usage mistake, found before
// anything listens.
func TestSimBadAccounts(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--account", "12345"},
		{"--accounts", "arn:aws:iam::111111111111:user/alice"},
		{"--accounts", "external-id=ext-1"},
		{"--accounts", "arn:aws:iam::111111111111:role/a,external-id=x,external-id=y"},
	} {
		_, stderr, err := runForTest(t, append([]string{"sim", "--listen", "127.0.0.1:0"}, args...)...)
		if code := exitCode(err, &bytes.Buffer{}); code != 2 {
			t.Errorf("%v: exit code %d, want 2 (err %v)", args, code, err)
		}
		if strings.Contains(stderr, "simulator listening") {
			t.Errorf("%v: the simulator listened", args)
		}
	}
}
