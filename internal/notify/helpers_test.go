package notify_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/server"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/tracelink"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// t0 is the worlds' start: the manual clock drives the simulator, the collector, the views and
// the notifier alike.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// world is the simulator behind the stock SQS client, the real collector writing a real store,
// the views over it, and a notifier whose targets post to a real local HTTP receiver.
type world struct {
	t      *testing.T
	ctx    context.Context
	clock  *sqsim.ManualClock
	sim    *sqsim.Simulator
	sqs    *sqs.Client
	simURL string
	dbPath string
	store  *store.Store
	views  *views.Service
	coll   *collector.Collector
	bus    *events.Bus
	recv   *receiver
	// traceURL is the views' --trace-url; set it with withTraceURL.
	traceURL tracelink.Template
}

// dlqAttributes keep a DLQ's messages 14 days, longer than its source's 4: a healthy DLQ.
var dlqAttributes = map[string]string{"MessageRetentionPeriod": "1209600"}

var testDimensions = []collector.Dimension{
	{Name: "mcpServer", Source: collector.FromAttribute, Path: "mcpServer"},
	{Name: "error", Source: collector.FromJSON, Path: "error.code"},
}

func newWorld(t *testing.T) *world {
	t.Helper()
	return newWorldBehind(t, nil)
}

// newWorldBehind is newWorld with the simulator behind front (nil: none), an http.Handler that
// passes requests on to it: a test can hold one of its answers back.
func newWorldBehind(t *testing.T, front func(http.Handler) http.Handler) *world {
	t.Helper()
	w := &world{t: t, ctx: context.Background(), clock: sqsim.NewManualClock(t0), bus: events.NewBus(), recv: newReceiver(t)}
	w.sim = sqsim.New(sqsim.Options{Clock: w.clock, Seed: 3})
	var h http.Handler = w.sim
	if front != nil {
		h = front(w.sim)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	clients, err := awsconf.Load(w.ctx, awsconf.Options{Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true, MaxAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	w.sqs, w.simURL = clients.SQS, srv.URL
	w.dbPath = storetest.Path(t)
	w.open()
	return w
}

// open opens the store and builds the views and the collector over it (again after a restart).
func (w *world) open() {
	w.t.Helper()
	st, err := store.Open(w.ctx, w.dbPath)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { st.Close() })
	w.store = st
	w.views = w.newViews()
	w.coll, err = collector.New(collector.Options{
		Regions: []collector.Region{{Name: "us-east-1", SQS: w.sqs}}, Store: st, Publisher: w.bus, Now: w.clock.Now,
		Backfill: -1, Dimensions: testDimensions,
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

// newViews builds the views over the world's store.
func (w *world) newViews() *views.Service {
	return views.New(views.Options{Store: w.store, Now: w.clock.Now, Dimensions: []string{"mcpServer", "error"}, ErrorDimension: "error",
		TraceURL: w.traceURL})
}

// withTraceURL runs the views under --trace-url template from now on.
func (w *world) withTraceURL(template string) {
	w.t.Helper()
	tmpl, err := tracelink.ParseTemplate(template)
	w.must(err)
	w.traceURL = tmpl
	w.views = w.newViews()
}

// notifier builds a notifier over the world with targets, changed by mod.
func (w *world) notifier(targets []notify.Target, mod func(*notify.Options)) *notify.Service {
	w.t.Helper()
	opts := notify.Options{Views: w.views, Store: w.store, Bus: w.bus, Publisher: w.bus, Targets: targets,
		PublicURL: "https://toolq.example.com", ChatSafe: server.ChatSafe, Now: w.clock.Now, RetryBase: time.Second}
	if mod != nil {
		mod(&opts)
	}
	n, err := notify.New(opts)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := n.Start(w.ctx); err != nil {
		w.t.Fatal(err)
	}
	return n
}

func (w *world) must(err error) {
	w.t.Helper()
	if err != nil {
		w.t.Fatal(err)
	}
}

// pair creates a source queue with maxReceiveCount 1 and its dead-letter queue.
func (w *world) pair(source, dlq string) string {
	w.t.Helper()
	return w.pairWith(source, dlq, dlqAttributes)
}

// pairWith is pair with the dead-letter queue's own attributes.
func (w *world) pairWith(source, dlq string, dlqAttrs map[string]string) string {
	w.t.Helper()
	out, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String(dlq), Attributes: dlqAttrs})
	w.must(err)
	attrs, err := w.sqs.GetQueueAttributes(w.ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	w.must(err)
	src, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String(source), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, attrs.Attributes["QueueArn"]),
	}})
	w.must(err)
	return aws.ToString(src.QueueUrl)
}

// deadLetter sends n tool calls of an MCP server to a source and fails them into its DLQ.
func (w *world) deadLetter(sourceURL, server string, n int) {
	w.t.Helper()
	for i := 0; i < n; i += 10 {
		var batch []types.SendMessageBatchRequestEntry
		for j := i; j < min(n, i+10); j++ {
			batch = append(batch, types.SendMessageBatchRequestEntry{
				Id:          aws.String(fmt.Sprint(j)),
				MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":"tc_%s_%d","toolName":"create_document","error":{"code":"connection_refused"}}`, server, j)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(server)},
				},
			})
		}
		_, err := w.sqs.SendMessageBatch(w.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(sourceURL), Entries: batch})
		w.must(err)
	}
	// Each receive raises the count to maxReceiveCount 1; the next moves the message on.
	for range 4*n/10 + 4 {
		_, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(sourceURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1})
		w.must(err)
		w.advance(2 * time.Second)
	}
}

// send puts n tool calls of an MCP server straight into a queue (by name), as EventBridge
// puts its failed events into a target's DLQ.
func (w *world) send(queue, server string, n int) {
	w.t.Helper()
	for i := 0; i < n; i += 10 {
		var batch []types.SendMessageBatchRequestEntry
		for j := i; j < min(n, i+10); j++ {
			batch = append(batch, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(j)),
				MessageBody:       aws.String(fmt.Sprintf(`{"toolCallId":"tc_%s_%d","toolName":"fetch_url"}`, server, j)),
				MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(server)}}})
		}
		_, err := w.sqs.SendMessageBatch(w.ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: batch})
		w.must(err)
	}
}

// receive plays a consumer that takes one message and fails it: it never deletes, and the
// message is visible again a second later.
func (w *world) receive(queueURL string) {
	w.t.Helper()
	_, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(queueURL), MaxNumberOfMessages: 1, VisibilityTimeout: 1})
	w.must(err)
}

// advance moves the clock and lets the simulator do what fell due.
func (w *world) advance(d time.Duration) {
	w.clock.Advance(d)
	w.sim.Tick()
}

// collect runs the collector's cycles as its loops would: discovery, attributes, and the
// samples that are due.
func (w *world) collect(peek bool) {
	w.t.Helper()
	w.must(w.coll.Discover(w.ctx))
	w.must(w.coll.CycleAttributes(w.ctx))
	if peek {
		w.must(w.coll.PeekDue(w.ctx))
	}
}

// sampleAndCheck lets the collector see what reached the DLQs (the attribute cycle, then the
// samples due a second later), and the notifier check and send what that changed.
func (w *world) sampleAndCheck(n *notify.Service) []views.Alert {
	w.t.Helper()
	w.collect(false)
	w.advance(time.Second)
	w.must(w.coll.PeekDue(w.ctx))
	alerts, err := n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
	return alerts
}

// receiver is a real local HTTP server that keeps every request it gets; status decides each
// answer (default 200).
type receiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []received
	status func(n int) int
}

type received struct {
	path   string
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{path: req.URL.Path, header: req.Header.Clone(), body: body})
		n := len(r.got)
		status := r.status
		r.mu.Unlock()
		code := http.StatusOK
		if status != nil {
			code = status(n)
		}
		rw.WriteHeader(code)
		io.WriteString(rw, "ok")
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// requests returns what the receiver got at path, in order.
func (r *receiver) requests(path string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		if g.path == path {
			out = append(out, g)
		}
	}
	return out
}

// target returns a target of kind posting to the receiver at path.
func (w *world) target(t *testing.T, kind, path, options string) notify.Target {
	t.Helper()
	spec := kind + ":" + w.recv.srv.URL + path
	if options != "" {
		spec += "#" + options
	}
	tg, err := notify.ParseTarget(spec)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// slackMessage is what a Slack incoming webhook takes: the fallback text and Block Kit blocks.
type slackMessage struct {
	Text   string `json:"text"`
	Blocks []struct {
		Type   string `json:"type"`
		Text   *struct{ Type, Text string }
		Fields []struct{ Type, Text string }
	} `json:"blocks"`
}

func decodeSlack(t *testing.T, body []byte) slackMessage {
	t.Helper()
	var m slackMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("Slack payload: %v: %s", err, body)
	}
	return m
}

// allText is every text of a Slack message, for searching.
func (m slackMessage) allText() string {
	s := m.Text
	for _, b := range m.Blocks {
		if b.Text != nil {
			s += "\n" + b.Text.Text
		}
		for _, f := range b.Fields {
			s += "\n" + f.Text
		}
	}
	return s
}

// header is the text of the message's header block.
func (m slackMessage) header() string {
	for _, b := range m.Blocks {
		if b.Type == "header" && b.Text != nil {
			return b.Text.Text
		}
	}
	return ""
}

// saidTwice returns the lines of a Slack message's sections and fields that the header or
// another line already says (severity marks aside).
func (m slackMessage) saidTwice() []string {
	unmarked := func(s string) string {
		if mark, rest, ok := strings.Cut(s, " "); ok && strings.HasPrefix(mark, ":") && strings.HasSuffix(mark, ":") {
			return rest
		}
		return s
	}
	seen := map[string]bool{unmarked(m.header()): true}
	var twice []string
	for _, b := range m.Blocks {
		if b.Type != "section" {
			continue
		}
		texts := []string{}
		if b.Text != nil {
			texts = append(texts, b.Text.Text)
		}
		for _, f := range b.Fields {
			_, value, _ := strings.Cut(f.Text, "\n") // a field's first line is its label
			texts = append(texts, value)
		}
		for _, t := range texts {
			for line := range strings.SplitSeq(t, "\n") {
				if line = unmarked(line); seen[line] {
					twice = append(twice, line)
				}
				seen[line] = true
			}
		}
	}
	return twice
}
