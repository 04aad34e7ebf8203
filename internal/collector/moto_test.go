package collector

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// startMoto starts moto's server (a Python AWS emulator nobody here wrote) on a free loopback
// port for the test and returns its URL. Without python3 or moto it skips, except under CI=true,
// where .ci/run has installed them and their absence is a failure.
func startMoto(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("moto is required under CI: %s", why)
		}
		t.Skipf("moto server unavailable (%s): install it with `pip install 'moto[server]'` or run .ci/run", why)
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		missing("no python3 on PATH")
	}
	if out, err := exec.Command(python, "-c", "import moto.server").CombinedOutput(); err != nil {
		missing("python3 cannot import moto.server: " + string(out))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(python, "-m", "moto.server", "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatalf("start moto: %v", err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get(url + "/moto-api/")
		if err == nil {
			res.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto did not answer within 30 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAgainstMoto runs the collector's cycles against moto over a standard and a FIFO queue, each
// with a DLQ, and a tier (a DLQ with a DLQ of its own): the pairing is found, the final DLQs are
// sampled and handed back, and nothing is received from the sources or the tier, nor moved.
// moto speaks no CBOR, so CloudWatch is left out.
func TestAgainstMoto(t *testing.T) {
	t.Parallel()
	url := startMoto(t)
	ctx := context.Background()
	clients, err := awsconf.Load(ctx, awsconf.Options{Region: "us-east-1", EndpointURL: url, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond})
	must(t, err)
	sq := clients.SQS
	create := func(name string, attrs map[string]string) (string, string) {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		must(t, err)
		a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
		must(t, err)
		return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
	}
	policy := func(arn string, max int) string {
		return fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":%d}`, arn, max)
	}
	fifo := map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
	webDLQ, webDLQARN := create("web-search-dlq", nil)
	web, _ := create("web-search", map[string]string{"RedrivePolicy": policy(webDLQARN, 3)})
	callsDLQ, callsDLQARN := create("tool-calls-dlq.fifo", fifo)
	calls, _ := create("tool-calls.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "RedrivePolicy": policy(callsDLQARN, 3)})
	_, finalARN := create("exports-dlq2", nil)
	tier, tierARN := create("exports-dlq", map[string]string{"RedrivePolicy": policy(finalARN, 2)})
	exports, _ := create("exports", map[string]string{"RedrivePolicy": policy(tierARN, 3)})

	send := func(u string, n int, group bool) {
		for i := range n {
			in := &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(fmt.Sprintf(`{"toolName":"t%d","toolCallId":"tc_%d","sessionId":"s"}`, i, i))}
			if group {
				in.MessageGroupId = aws.String("sess_1")
			}
			_, err := sq.SendMessage(ctx, in)
			must(t, err)
		}
	}
	// The DLQs' messages are sent there directly: what matters here is what toolq does with them.
	send(web, 2, false)
	send(calls, 2, true)
	send(exports, 2, false)
	send(webDLQ, 3, false)
	send(callsDLQ, 2, true)
	send(tier, 2, false)

	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolq.db"))
	must(t, err)
	t.Cleanup(func() { st.Close() })
	clock := sqsim.NewManualClock(time.Now())
	c, err := New(Options{Regions: []Region{{Name: "us-east-1", SQS: sq}}, Store: st, Now: clock.Now, Backfill: -1})
	must(t, err)
	must(t, c.Discover(ctx))
	for range 6 {
		must(t, c.CycleAttributes(ctx))
		must(t, c.PeekDue(ctx))
		clock.Advance(5 * time.Minute)
	}

	queues, err := st.ListQueues(ctx, store.QueueFilter{})
	must(t, err)
	byName := map[string]store.Queue{}
	for _, q := range queues {
		byName[q.Name] = q
	}
	for dlq, src := range map[string]string{"web-search-dlq": "web-search", "tool-calls-dlq.fifo": "tool-calls.fifo", "exports-dlq": "exports", "exports-dlq2": "exports-dlq"} {
		if !slices.Contains(byName[dlq].SourceARNs, byName[src].ARN) {
			t.Errorf("%s sources = %v, want %s", dlq, byName[dlq].SourceARNs, src)
		}
	}
	for name, want := range map[string]int{"web-search-dlq": 3, "tool-calls-dlq.fifo": 2, "exports-dlq2": 0} {
		s, err := st.LatestSample(ctx, byName[name].ID)
		if err != nil || s.Seen != want {
			t.Errorf("%s sample = %+v, %v; want %d seen", name, s, err, want)
		}
	}
	for _, name := range []string{"web-search", "tool-calls.fifo", "exports", "exports-dlq"} {
		if _, err := st.LatestSample(ctx, byName[name].ID); err == nil {
			t.Errorf("%s was sampled: only final dead-letter queues are, by default", name)
		}
	}
	if q := byName["exports-dlq"]; !q.IsDeadLetterQueue() || q.PeekEnabled {
		t.Errorf("the tier: dead-letter queue %v, sampled %v; want a DLQ that is not sampled", q.IsDeadLetterQueue(), q.PeekEnabled)
	}

	// Nothing moved: every queue holds what was sent to it. And the first receive now is the
	// first ever of each source and tier message: toolq never received them.
	for u, want := range map[string]int{web: 2, calls: 2, exports: 2, webDLQ: 3, callsDLQ: 2, tier: 2} {
		a, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		must(t, err)
		visible, _ := strconv.Atoi(a.Attributes["ApproximateNumberOfMessages"])
		inFlight, _ := strconv.Atoi(a.Attributes["ApproximateNumberOfMessagesNotVisible"])
		if visible != want || inFlight != 0 {
			t.Errorf("%s: %d visible, %d in flight; want %d and 0", u, visible, inFlight, want)
		}
	}
	for _, u := range []string{web, exports, tier} {
		out, err := sq.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(u), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameApproximateReceiveCount}})
		must(t, err)
		for _, m := range out.Messages {
			if n := m.Attributes["ApproximateReceiveCount"]; n != "1" {
				t.Errorf("%s: message received %s times by now, want 1 (this receive): toolq received it", u, n)
			}
		}
	}
}

// topologyFacts is what the topology loop stored, with account ids and UUIDs left out, so that
// two endpoints' readings of the same world compare equal.
type topologyFacts struct {
	Watched         []string
	Mappings        []string
	Targets         []string
	EventBridgeDLQs []string
}

func readTopologyFacts(t *testing.T, st *store.Store) topologyFacts {
	t.Helper()
	ctx := context.Background()
	var f topologyFacts
	queues, err := st.ListQueues(ctx, store.QueueFilter{})
	must(t, err)
	for _, q := range queues {
		f.Watched = append(f.Watched, q.Name)
		if q.IsEventBridgeDeadLetterQueue() {
			f.EventBridgeDLQs = append(f.EventBridgeDLQs, q.Name)
		}
	}
	mappings, err := st.EventSourceMappings(ctx)
	must(t, err)
	for _, m := range mappings {
		f.Mappings = append(f.Mappings, fmt.Sprintf("%s ← %s: state %s, batch %d, window %d, item failures %v, max concurrency %d, timeout %d",
			arnName(m.QueueARN), arnName(m.FunctionARN), m.State, m.BatchSize, m.BatchingWindowSeconds, m.ReportBatchItemFailures, m.MaximumConcurrency, m.FunctionTimeoutSeconds))
	}
	targets, err := st.EventBridgeTargets(ctx)
	must(t, err)
	for _, tg := range targets {
		f.Targets = append(f.Targets, fmt.Sprintf("%s/%s (%s) → %s [%s], DLQ %s, max age %d, retries %d",
			tg.BusName, tg.RuleName, tg.RuleState, arnName(tg.TargetARN), tg.TargetID, arnName(tg.DeadLetterARN), tg.MaxEventAgeSeconds, tg.MaxRetryAttempts))
	}
	slices.Sort(f.Mappings)
	slices.Sort(f.Targets)
	return f
}

// arnName is the last field of an ARN (a queue's or a function's name).
func arnName(a string) string {
	if i := strings.LastIndexByte(a, ':'); i >= 0 {
		return a[i+1:]
	}
	return a
}

// motoRole creates the IAM role moto requires of a Lambda function. toolq has no IAM client: the
// request is IAM's query protocol by hand, which moto routes by the service of its credential
// scope (it checks no signature).
func motoRole(t *testing.T, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader("Action=CreateRole&Version=2010-05-08&RoleName=web-search-worker&AssumeRolePolicyDocument=%7B%7D"))
	must(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0")
	res, err := http.DefaultClient.Do(req)
	must(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("moto CreateRole: %d %s", res.StatusCode, body)
	}
	return "arn:aws:iam::123456789012:role/web-search-worker"
}

// TestTopologyAgreesWithMoto builds the same Lambda consumer and EventBridge rule in the
// simulator and in moto and runs discovery and the topology loop against each through the stock
// clients: what toolq stores of both (mappings with their function's timeout, targets with their
// dead-letter queues and retry policies, which queue is an EventBridge target's DLQ, that it is
// watched though outside the selection) is the same. moto speaks no CBOR, so alarms are left out
// on both sides.
func TestTopologyAgreesWithMoto(t *testing.T) {
	t.Parallel()
	url := startMoto(t)
	ctx := context.Background()
	moto, err := awsconf.Load(ctx, awsconf.Options{Region: "us-east-1", EndpointURL: url, StaticCredentials: true, MaxAttempts: 2, MaxBackoff: time.Millisecond})
	must(t, err)
	moto.CloudWatch = nil
	setupTopology(t, ctx, moto, motoRole(t, url))

	e := newEnv(t)
	setupTopology(t, ctx, awsconf.Clients{SQS: e.sqs, Lambda: e.fn, EventBridge: e.eb}, "arn:aws:iam::000000000000:role/web-search-worker")

	read := func(st *store.Store, r Region) topologyFacts {
		c, err := New(Options{Regions: []Region{r}, Store: st, Now: e.clock.Now, Backfill: -1, QueuePrefixes: []string{"web-search", "audit"}})
		must(t, err)
		must(t, c.Discover(ctx))
		must(t, c.CycleTopology(ctx))
		return readTopologyFacts(t, st)
	}
	motoStore, err := store.Open(ctx, filepath.Join(t.TempDir(), "moto.db"))
	must(t, err)
	t.Cleanup(func() { motoStore.Close() })
	gotMoto := read(motoStore, Region{Name: "us-east-1", SQS: moto.SQS, Lambda: moto.Lambda, EventBridge: moto.EventBridge})
	gotSim := read(e.store, Region{Name: "us-east-1", SQS: e.sqs, Lambda: e.fn, EventBridge: e.eb})

	if fmt.Sprint(gotMoto) != fmt.Sprint(gotSim) {
		t.Errorf("moto and the simulator disagree:\nmoto      %+v\nsimulator %+v", gotMoto, gotSim)
	}
	if !slices.Equal(gotSim.EventBridgeDLQs, []string{"failed-audit-events"}) || len(gotSim.Mappings) != 1 || len(gotSim.Targets) != 1 {
		t.Errorf("simulator's reading = %+v", gotSim)
	}
	st, err := motoStore.OperationStatuses(ctx)
	must(t, err)
	for _, o := range st {
		if o.Failing() {
			t.Errorf("against moto %s fails: %s %s", o.Operation, o.FailureCode, o.FailureMessage)
		}
	}
}
