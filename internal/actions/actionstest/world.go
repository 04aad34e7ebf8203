// Package actionstest builds a small world for tests of the actions and the HTTP server: the
// simulator behind the stock SQS client, a real store in a temporary directory filled as the
// collector would fill it, and the views over it. No SDK mocks, no fake stores.
package actionstest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// Region is the world's one region.
const Region = "us-east-1"

// Start is the world's clock at creation.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// World is a simulator, an SQS client on it, a store and the views.
type World struct {
	Clock  *sqsim.ManualClock
	Sim    *sqsim.Simulator
	SQS    *sqs.Client
	Store  *store.Store
	Views  *views.Service
	Events *Recorder
	// DBPath is the store's file, or its postgres:// URL.
	DBPath string
}

// New returns an empty World on a SQLite file, closed when the test ends.
func New(tb testing.TB) *World {
	tb.Helper()
	return NewOn(tb, storetest.Path(tb))
}

// NewOn returns an empty World on the database db names (a SQLite file, or a postgres:// URL
// such as pgtest.DB gives), closed when the test ends.
func NewOn(tb testing.TB, db string) *World {
	tb.Helper()
	clock := sqsim.NewManualClock(Start)
	sim := sqsim.New(sqsim.Options{Clock: clock, Region: Region, Seed: 1})
	srv := httptest.NewServer(sim)
	tb.Cleanup(srv.Close)
	client := sqs.New(sqs.Options{
		Region:       Region,
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		Retryer:      aws.NopRetryer{}, // a refused call must fail at once, not sleep through backoff
	})
	dbPath := db
	st, err := store.Open(context.Background(), dbPath)
	if err != nil {
		tb.Fatalf("store.Open: %v", err)
	}
	tb.Cleanup(func() { st.Close() })
	w := &World{Clock: clock, Sim: sim, SQS: client, Store: st, Events: &Recorder{ch: make(chan events.Event, 1024)}, DBPath: dbPath}
	w.Views = views.New(views.Options{Store: st, Now: clock.Now})
	return w
}

// Now is the world's clock.
func (w *World) Now() time.Time { return w.Clock.Now() }

// Actions returns an actions.Service on the world, with opts' ReadOnly, Logger and Registerer.
func (w *World) Actions(opts actions.Options) *actions.Service {
	opts.Clients = map[string]actions.SQSAPI{Region: w.SQS}
	opts.Store = w.Store
	if opts.Publisher == nil {
		opts.Publisher = w.Events
	}
	opts.Now = w.Clock.Now
	return actions.New(opts)
}

// CreateQueue creates a queue in the simulator (FIFO when the name ends in .fifo) and returns
// its ARN. A non-empty dlq gives it a RedrivePolicy to that queue with maxReceiveCount 1.
func (w *World) CreateQueue(tb testing.TB, name, dlq string, attrs map[string]string) string {
	tb.Helper()
	ctx := context.Background()
	a := map[string]string{}
	for k, v := range attrs {
		a[k] = v
	}
	if filepath.Ext(name) == ".fifo" {
		a["FifoQueue"] = "true"
	}
	if dlq != "" {
		policy, _ := json.Marshal(map[string]any{"deadLetterTargetArn": w.arn(dlq), "maxReceiveCount": 1})
		a["RedrivePolicy"] = string(policy)
	}
	if _, err := w.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: a}); err != nil {
		tb.Fatalf("CreateQueue(%s): %v", name, err)
	}
	return w.arn(name)
}

// SetAttributes changes a queue's attributes in the simulator.
func (w *World) SetAttributes(tb testing.TB, name string, attrs map[string]string) {
	tb.Helper()
	if _, err := w.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{
		QueueUrl: aws.String(w.url(tb, name)), Attributes: attrs,
	}); err != nil {
		tb.Fatalf("SetQueueAttributes(%s): %v", name, err)
	}
}

// arn returns the ARN of a queue of the world.
func (w *World) arn(name string) string { return "arn:aws:sqs:" + Region + ":000000000000:" + name }

// ARN returns the ARN of a queue of the world.
func (w *World) ARN(name string) string { return w.arn(name) }

// url returns a queue's URL from the simulator.
func (w *World) url(tb testing.TB, name string) string {
	tb.Helper()
	out, err := w.SQS.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		tb.Fatalf("GetQueueUrl(%s): %v", name, err)
	}
	return aws.ToString(out.QueueUrl)
}

// Watch stores the named queues as the collector's discovery and attribute passes would:
// queue rows, latest attributes with the parsed redrive policy, a depth sample, and a finished
// discovery and attributes run. Call it again to refresh.
func (w *World) Watch(tb testing.TB, names ...string) {
	tb.Helper()
	ctx := context.Background()
	now := w.Now()
	discovery, err := w.Store.StartRun(ctx, store.RunDiscovery, now)
	if err != nil {
		tb.Fatalf("StartRun: %v", err)
	}
	if err := w.Store.FinishRun(ctx, store.CollectorRun{ID: discovery, Kind: store.RunDiscovery, StartedAt: now, FinishedAt: now, Queues: len(names), Calls: 1}); err != nil {
		tb.Fatalf("FinishRun: %v", err)
	}
	runID, err := w.Store.StartRun(ctx, store.RunAttributes, now)
	if err != nil {
		tb.Fatalf("StartRun: %v", err)
	}
	for _, name := range names {
		u := w.url(tb, name)
		out, err := w.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
			QueueUrl: aws.String(u), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll},
		})
		if err != nil {
			tb.Fatalf("GetQueueAttributes(%s): %v", name, err)
		}
		attrs := out.Attributes
		id, err := w.Store.UpsertQueue(ctx, store.Queue{
			Region: Region, Name: name, URL: u, ARN: attrs["QueueArn"], FIFO: attrs["FifoQueue"] == "true",
			FirstSeen: now, LastSeen: now,
		})
		if err != nil {
			tb.Fatalf("UpsertQueue(%s): %v", name, err)
		}
		var dlq string
		var maxReceive int
		if rp := attrs["RedrivePolicy"]; rp != "" {
			var p struct {
				DeadLetterTargetArn string          `json:"deadLetterTargetArn"`
				MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
			}
			if err := json.Unmarshal([]byte(rp), &p); err != nil {
				tb.Fatalf("RedrivePolicy of %s: %v", name, err)
			}
			dlq = p.DeadLetterTargetArn
			s, _ := strconv.Unquote(string(p.MaxReceiveCount))
			if s == "" {
				s = string(p.MaxReceiveCount)
			}
			maxReceive, _ = strconv.Atoi(s)
		}
		sample := store.AttributeSample{QueueID: id, At: now,
			Visible: atoi(attrs["ApproximateNumberOfMessages"]), InFlight: atoi(attrs["ApproximateNumberOfMessagesNotVisible"]),
			Delayed: atoi(attrs["ApproximateNumberOfMessagesDelayed"])}
		if err := w.Store.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: id, At: now, Attributes: attrs, DeadLetterTargetARN: dlq, MaxReceiveCount: maxReceive, Depth: sample}); err != nil {
			tb.Fatalf("SaveQueueAttributes(%s): %v", name, err)
		}
	}
	if err := w.Store.FinishRun(ctx, store.CollectorRun{ID: runID, Kind: store.RunAttributes, StartedAt: now, FinishedAt: now, Queues: len(names)}); err != nil {
		tb.Fatalf("FinishRun: %v", err)
	}
}

// TargetDeadLetter stores, as the collector's topology loop would, an EventBridge rule whose
// target delivers to the queue target and sends its failed events to the queue dlq.
func (w *World) TargetDeadLetter(tb testing.TB, target, dlq string) {
	tb.Helper()
	ctx := context.Background()
	targets, err := w.Store.EventBridgeTargets(ctx)
	if err != nil {
		tb.Fatalf("EventBridgeTargets: %v", err)
	}
	targets = append(targets, store.EventBridgeTarget{
		Region: Region, BusName: "mcp", RuleName: "tool-call-completed", RuleARN: "arn:aws:events:" + Region + ":000000000000:rule/mcp/tool-call-completed",
		RuleState: "ENABLED", TargetID: target + "-to-" + dlq, TargetARN: w.arn(target), DeadLetterARN: w.arn(dlq), MaxEventAgeSeconds: 3600, MaxRetryAttempts: 3, ReadAt: w.Now(),
	})
	if err := w.Store.ReplaceEventBridgeTargets(ctx, Region, targets); err != nil {
		tb.Fatalf("ReplaceEventBridgeTargets: %v", err)
	}
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// DeadLetter sends n tool-call messages to source (which must have maxReceiveCount 1) and
// receives them until they fail into its dead-letter queue.
func (w *World) DeadLetter(tb testing.TB, source string, n int) {
	tb.Helper()
	ctx := context.Background()
	u := w.url(tb, source)
	fifo := filepath.Ext(source) == ".fifo"
	for i := 0; i < n; i++ {
		body := fmt.Sprintf(`{"toolCallId":"tc_%03d","toolName":"create_document","sessionId":"sess_%d","sequenceNumber":%d}`, i, i%3, i)
		in := &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String(body)}
		if fifo {
			in.MessageGroupId = aws.String(fmt.Sprintf("sess_%d", i%3))
			in.MessageDeduplicationId = aws.String(fmt.Sprintf("tc_%03d", i))
		}
		if _, err := w.SQS.SendMessage(ctx, in); err != nil {
			tb.Fatalf("SendMessage(%s): %v", source, err)
		}
	}
	// Each message is received once (its count reaches maxReceiveCount 1), becomes visible again
	// when its visibility timeout ends, and moves to the DLQ at its next receive.
	for round := 0; round < 4*n+10; round++ {
		left, err := w.Sim.Snapshot(source)
		if err != nil {
			tb.Fatalf("Snapshot(%s): %v", source, err)
		}
		if len(left) == 0 {
			return
		}
		if _, err := w.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(u), MaxNumberOfMessages: 10, VisibilityTimeout: 1,
		}); err != nil {
			tb.Fatalf("ReceiveMessage(%s): %v", source, err)
		}
		w.Advance(2 * time.Second)
	}
	tb.Fatalf("DeadLetter(%s): messages did not reach the DLQ", source)
}

// Advance moves the clock and lets the simulator do what fell due.
func (w *World) Advance(d time.Duration) {
	w.Clock.Advance(d)
	w.Sim.Tick()
}

// Count returns how many messages a queue holds, without receiving them.
func (w *World) Count(tb testing.TB, name string) int {
	tb.Helper()
	msgs, err := w.Sim.Snapshot(name)
	if err != nil {
		tb.Fatalf("Snapshot(%s): %v", name, err)
	}
	return len(msgs)
}

// Recorder is an events.Publisher that keeps what it was given.
type Recorder struct {
	ch chan events.Event
}

// Publish implements events.Publisher.
func (r *Recorder) Publish(e events.Event) {
	if r.ch == nil {
		return
	}
	select {
	case r.ch <- e:
	default:
	}
}

// Kinds returns the kinds published since the last call.
func (r *Recorder) Kinds() []events.Kind {
	var out []events.Kind
	for {
		select {
		case e := <-r.ch:
			out = append(out, e.Kind)
		default:
			return out
		}
	}
}
