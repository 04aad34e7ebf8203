package collector

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/sqsim"
)

// TestMain stops the PostgreSQL server the benchmarks started, if any.
func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// t0 starts the tests' manual clocks at the beginning of a minute, so that metric minutes are
// easy to reason about.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// env is a simulator on a manual clock, the stock SDK clients pointed at it through awsconf
// over in-memory connections, and a real store in a temporary directory.
type env struct {
	t     testing.TB
	ctx   context.Context
	clock *sqsim.ManualClock
	sim   *sqsim.Simulator
	sqs   *sqs.Client
	cw    *cloudwatch.Client
	fn    *lambda.Client
	eb    *eventbridge.Client
	store *store.Store
	db    string // the store's file, kept over a restart
	bus   *recorder
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	clock := sqsim.NewManualClock(t0)
	sim := sqsim.New(sqsim.Options{Clock: clock, Seed: 7})
	clients, err := awsconf.Load(ctx, inMemory(t, sim, awsconf.Options{
		Region: "us-east-1", StaticCredentials: true,
		// Backoff in real time is not what these tests measure.
		MaxAttempts: 3, MaxBackoff: time.Millisecond,
	}))
	if err != nil {
		t.Fatalf("awsconf.Load: %v", err)
	}
	e := &env{t: t, ctx: ctx, clock: clock, sim: sim, sqs: clients.SQS, cw: clients.CloudWatch, fn: clients.Lambda, eb: clients.EventBridge, db: storetest.Path(t), bus: &recorder{}}
	e.store = e.openStore()
	return e
}

// inMemory serves h over in-memory connections (net.Pipe) and returns opts with the endpoint
// and the HTTP client that reach it. These tests count the calls the collector makes: between
// the SDK and the simulator there is HTTP and nothing else, no ports and no loopback.
func inMemory(t testing.TB, h http.Handler, opts awsconf.Options) awsconf.Options {
	t.Helper()
	l := &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	opts.EndpointURL = "http://sqsim.test"
	opts.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
		tr.DialContext = l.dial
		tr.MaxIdleConnsPerHost = awsconf.MaxIdleConnsPerHost
	})
	return opts
}

// pipeListener is a net.Listener whose connections are the server ends of net.Pipes, the
// client ends of which dial returns.
type pipeListener struct {
	conns     chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "sqsim.test" }

func (e *env) openStore() *store.Store {
	e.t.Helper()
	st, err := store.Open(e.ctx, e.db)
	if err != nil {
		e.t.Fatalf("store.Open: %v", err)
	}
	e.t.Cleanup(func() { st.Close() })
	return st
}

// collector returns a collector over the simulator with test-friendly defaults, changed by mod:
// no backfill, and idle move-task polls every attribute interval (the default is the discovery
// interval), which the move-task and backoff tests step through.
func (e *env) collector(mod func(*Options)) *Collector {
	e.t.Helper()
	opts := Options{
		Regions:           []Region{{Name: "us-east-1", SQS: e.sqs, CloudWatch: e.cw, Lambda: e.fn, EventBridge: e.eb}},
		Store:             e.store,
		Publisher:         e.bus,
		Now:               e.clock.Now,
		Backfill:          -1,
		MoveTasksInterval: DefaultAttributesInterval,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := New(opts)
	if err != nil {
		e.t.Fatalf("New: %v", err)
	}
	return c
}

// advance moves the clock and lets the simulator do the work that fell due.
func (e *env) advance(d time.Duration) {
	e.clock.Advance(d)
	e.sim.Tick()
}

func (e *env) createQueue(name string, attrs map[string]string) (url, arn string) {
	e.t.Helper()
	out, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		e.t.Fatalf("CreateQueue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	got, err := e.sqs.GetQueueAttributes(e.ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		e.t.Fatalf("GetQueueAttributes %s: %v", name, err)
	}
	return url, got.Attributes["QueueArn"]
}

// createPair creates a source queue with a dead-letter queue and returns their URLs.
func (e *env) createPair(source, dlq string, maxReceiveCount int) (sourceURL, dlqURL string) {
	e.t.Helper()
	fifo := map[string]string{}
	if filepath.Ext(source) == ".fifo" {
		fifo["FifoQueue"] = "true"
	}
	dlqURL, dlqARN := e.createQueue(dlq, fifo)
	attrs := map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"%d"}`, dlqARN, maxReceiveCount),
	}
	for k, v := range fifo {
		attrs[k] = v
	}
	sourceURL, _ = e.createQueue(source, attrs)
	return sourceURL, dlqURL
}

func (e *env) send(url, body string, opts ...func(*sqs.SendMessageInput)) {
	e.t.Helper()
	in := &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}
	for _, o := range opts {
		o(in)
	}
	if _, err := e.sqs.SendMessage(e.ctx, in); err != nil {
		e.t.Fatalf("SendMessage: %v", err)
	}
}

func inGroup(group, dedup string) func(*sqs.SendMessageInput) {
	return func(in *sqs.SendMessageInput) {
		in.MessageGroupId = aws.String(group)
		in.MessageDeduplicationId = aws.String(dedup)
	}
}

// consume plays a consumer that fails: it receives up to ten messages with a one-second
// visibility timeout and never deletes them, then lets the timeout run out.
func (e *env) consume(url string) []types.Message {
	e.t.Helper()
	out, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 1,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		e.t.Fatalf("ReceiveMessage: %v", err)
	}
	e.advance(2 * time.Second)
	return out.Messages
}

// deadLetter sends n tool calls to a source queue and fails them until all n are in the
// dead-letter queue dlqName.
func (e *env) deadLetter(sourceURL, dlqName string, n int) {
	e.t.Helper()
	for i := range n {
		e.send(sourceURL, toolCallBody("fetch_page", i, "sess_1"))
	}
	for range 100 {
		if len(e.snapshot(dlqName)) >= n {
			return
		}
		e.consume(sourceURL)
	}
	e.t.Fatalf("messages did not reach %s", dlqName)
}

func (e *env) snapshot(queue string) []sqsim.MessageSnapshot {
	e.t.Helper()
	snap, err := e.sim.Snapshot(queue)
	if err != nil {
		e.t.Fatalf("Snapshot: %v", err)
	}
	return snap
}

func toolCallBody(tool string, i int, session string) string {
	return fmt.Sprintf(`{"toolCallId":"tc_%03d","toolName":%q,"toolArgs":{"q":"x"},"sessionId":%q,"sequenceNumber":%d,"sentAt":1764460000000}`, i, tool, session, i)
}

// queueNamed returns the stored queue of that name.
func (e *env) queueNamed(name string) store.Queue {
	e.t.Helper()
	qs, err := e.store.GetQueuesByName(e.ctx, name)
	if err != nil || len(qs) != 1 {
		e.t.Fatalf("GetQueuesByName %s = %v, %v; want one queue", name, qs, err)
	}
	return qs[0]
}

func (e *env) errors(queueID int64) []store.CollectorError {
	e.t.Helper()
	errs, err := e.store.ErrorsSince(e.ctx, queueID, t0.Add(-time.Hour))
	if err != nil {
		e.t.Fatalf("ErrorsSince: %v", err)
	}
	return errs
}

// newestRun reads the calls and errors of the newest finished run of a kind straight from the
// database: the store's LatestRun skips, by design, the runs whose every call failed.
func (e *env) newestRun(kind string) (calls, errs int) {
	e.t.Helper()
	db, err := sql.Open("sqlite", "file:"+e.db+"?mode=ro")
	if err != nil {
		e.t.Fatal(err)
	}
	defer db.Close()
	err = db.QueryRowContext(e.ctx, `SELECT calls, errors FROM collector_runs
		WHERE kind = ? AND finished_at > 0 ORDER BY finished_at DESC, id DESC LIMIT 1`, kind).Scan(&calls, &errs)
	if err != nil {
		e.t.Fatalf("newest %s run: %v", kind, err)
	}
	return calls, errs
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// recorder is an events.Publisher that keeps what it was given.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
}

func (r *recorder) Publish(ev events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// count returns how many events of kind were published (about queueID, unless it is 0).
func (r *recorder) count(kind events.Kind, queueID int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Kind == kind && (queueID == 0 || ev.QueueID == queueID) {
			n++
		}
	}
	return n
}
