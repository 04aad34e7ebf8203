package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/sqsim"
)

// sendGate holds every SendMessageBatch on its way to the simulator until it is opened, so that
// a selective redrive stays RUNNING for as long as a test needs, whichever replica runs it.
type sendGate struct {
	sim         http.Handler
	arrived     chan struct{} // closed when the first SendMessageBatch arrives
	open        chan struct{}
	arrivedOnce sync.Once
	openOnce    sync.Once
}

func newSendGate(sim http.Handler) *sendGate {
	return &sendGate{sim: sim, arrived: make(chan struct{}), open: make(chan struct{})}
}

func (g *sendGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") == "AmazonSQS.SendMessageBatch" {
		g.arrivedOnce.Do(func() { close(g.arrived) })
		select {
		case <-g.open:
		case <-r.Context().Done():
			return
		}
	}
	g.sim.ServeHTTP(w, r)
}

func (g *sendGate) release() { g.openOnce.Do(func() { close(g.open) }) }

// TestReplicasRefuseASecondRedriveOfOneDLQ runs two `dashboard serve` processes on one
// PostgreSQL database: a selective redrive started on one (held at its first send, on whichever
// replica leads and runs it) makes the other refuse a move task of the same DLQ, and a second
// selection, with 409 task_running; and the other way round, a move task started on the second
// makes the first refuse a selection. One redrive of a DLQ at a time holds across replicas, not
// only within one process.
func TestReplicasRefuseASecondRedriveOfOneDLQ(t *testing.T) {
	t.Parallel()
	if suite.unavailable != "" {
		t.Skip(suite.unavailable)
	}
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	db := pgtest.DB(t)

	sim := sqsim.New(sqsim.Options{Seed: 12})
	ctx, stopSim := context.WithCancel(context.Background())
	defer stopSim()
	go sim.Run(ctx)
	gate := newSendGate(sim)
	defer gate.release() // before the replicas stop: a held send would hold their shutdown
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(simSrv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	dlq, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("crawl-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String("crawl"), Attributes: map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:crawl-dlq","maxReceiveCount":3}`}}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		tool := []string{"fetch_url", "web_search", "read_file"}[i%3]
		if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf(`{"toolName":%q,"toolCallId":"tc_%d"}`, tool, i))}); err != nil {
			t.Fatal(err)
		}
	}

	a := startReplica(t, "a", db, gate)
	b := startReplica(t, "b", db, gate)
	for _, r := range []*replica{a, b} {
		eventually(t, 30*time.Second, r.name+" knowing crawl-dlq as a dead-letter queue", func() (bool, string, error) {
			code, body, err := httpGet(t.Context(), r.url+"/api/v1/queues/crawl-dlq")
			var q struct {
				IsDeadLetterQueue bool `json:"isDeadLetterQueue"`
			}
			if err == nil && code == http.StatusOK {
				err = json.Unmarshal(body, &q)
			}
			return q.IsDeadLetterQueue, fmt.Sprintf("%d %.200s", code, body), err
		})
	}
	const (
		redrives  = "/api/v1/queues/crawl-dlq/redrives"
		selection = `{"destination":"crawl","selection":{"tools":["fetch_url"]}}`
		moveTask  = `{"destination":"crawl","maxMessagesPerSecond":1}`
	)
	refused := func(r *replica, body, beside string) {
		t.Helper()
		code, answer, err := r.post(t.Context(), redrives, body)
		if err != nil || code != http.StatusConflict || !strings.Contains(answer, `"task_running"`) {
			t.Errorf("%s: start %s beside %s = %d, %v: %s; want 409 task_running", r.name, body, beside, code, err, answer)
		}
	}

	// A selection started on a, running (held at its first send) on the leader.
	code, body, err := a.post(t.Context(), redrives, selection)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("a: start the selection = %d, %v: %s", code, err, body)
	}
	select {
	case <-gate.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the selection sent nothing within 60 s")
	}
	refused(b, moveTask, "a selection started on a")
	refused(b, selection, "a selection started on a")
	gate.release()
	eventually(t, 60*time.Second, "the selection ending", func() (bool, string, error) {
		code, body, err := httpGet(t.Context(), b.url+redrives)
		return code == http.StatusOK && !strings.Contains(string(body), `"running":true`), string(body), err
	})

	// The other way round: a move task started on b, running in SQS at one message a second.
	code, body, err = b.post(t.Context(), redrives, moveTask)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("b: start the move task = %d, %v: %s", code, err, body)
	}
	refused(a, selection, "a move task started on b")
	refused(a, moveTask, "a move task started on b")
	if code, body, err := b.post(t.Context(), redrives+"/cancel", `{}`); err != nil || code != http.StatusOK {
		t.Errorf("b: cancel the move task = %d, %v: %s", code, err, body)
	}
}
