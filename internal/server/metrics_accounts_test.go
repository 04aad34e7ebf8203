package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/store"
)

// TestMetricsTellAccountsApart: a queue and its dead-letter queue named alike in the same region
// of two accounts (the unnamed one and prod) are four queues, so /metrics answers 200 with each
// one's series, told apart by account. Without the label, two series of one name and labels
// fail the registry's Gather and the whole scrape.
func TestMetricsTellAccountsApart(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	ctx := t.Context()
	now := h.w.Now()
	arn := func(name string) string { return "arn:aws:sqs:us-east-1:111111111111:" + name }
	queue := func(name string) int64 {
		id, err := h.w.Store.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Account: "prod", Name: name,
			URL: "https://sqs.us-east-1.amazonaws.com/111111111111/" + name, ARN: arn(name), FirstSeen: now, LastSeen: now})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	dlq, source := queue("orders-dlq"), queue("orders")
	for _, a := range []store.QueueAttributes{
		{QueueID: dlq, At: now, Attributes: map[string]string{"QueueArn": arn("orders-dlq")},
			Depth: store.AttributeSample{QueueID: dlq, At: now, Visible: 7}},
		{QueueID: source, At: now, Attributes: map[string]string{"QueueArn": arn("orders"),
			"RedrivePolicy": `{"deadLetterTargetArn":"` + arn("orders-dlq") + `","maxReceiveCount":1}`},
			DeadLetterTargetARN: arn("orders-dlq"), MaxReceiveCount: 1, Depth: store.AttributeSample{QueueID: source, At: now, Visible: 2, InFlight: 1}},
	} {
		if err := h.w.Store.SaveQueueAttributes(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.w.Store.SaveSample(ctx, store.Sample{QueueID: dlq, Kind: store.SampleDeadLetter, At: now, Seen: 1, ApproxVisible: 7},
		[]store.SampledMessage{{QueueID: dlq, MessageID: "p-1", SentAt: now, ToolName: "create_document",
			Dimensions: map[string]string{"mcpServer": "docs-legacy"}}}, nil); err != nil {
		t.Fatal(err)
	}
	// A move task runs in each account's orders-dlq, remembering its sample as a started one does.
	for _, task := range []struct {
		queue  string
		id     int64
		handle string
	}{{h.w.ARN("orders-dlq"), 0, "default-task"}, {arn("orders-dlq"), dlq, "prod-task"}} {
		if task.id == 0 {
			q, err := h.w.Store.GetQueueByARN(ctx, task.queue)
			if err != nil {
				t.Fatal(err)
			}
			task.id = q.ID
		}
		id, err := h.w.Store.UpsertMoveTask(ctx, store.MoveTask{QueueID: task.id, TaskHandle: task.handle, Status: store.MoveTaskRunning,
			SourceARN: task.queue, Moved: 1, ToMove: 5, StartedAt: now, UpdatedAt: now, Kind: store.KindMoveTask})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.w.Store.RememberRedrive(ctx, id, now); err != nil {
			t.Fatal(err)
		}
	}

	rec := h.do(t, apiRequest{target: "/metrics", header: bearer(h.viewer)})
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`toolq_queue_visible_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_queue_visible_messages{account="prod",queue="orders-dlq",region="us-east-1"} 7`,
		`toolq_dlq_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_dlq_messages{account="prod",queue="orders-dlq",region="us-east-1"} 7`,
		`toolq_queue_visible_messages{account="default",queue="orders",region="us-east-1"} 0`,
		`toolq_queue_visible_messages{account="prod",queue="orders",region="us-east-1"} 2`,
		`toolq_queue_inflight_messages{account="prod",queue="orders",region="us-east-1"} 1`,
		`toolq_queue_health{account="default",queue="orders",region="us-east-1"}`,
		`toolq_queue_health{account="prod",queue="orders",region="us-east-1"}`,
		`toolq_queue_near_max_receive_messages{account="prod",queue="orders",region="us-east-1"} 0`,
		`toolq_dlq_sampled_messages{account="default",queue="orders-dlq",region="us-east-1",tool="create_document"} 1`,
		`toolq_dlq_sampled_messages{account="prod",queue="orders-dlq",region="us-east-1",tool="create_document"} 1`,
		`toolq_dlq_sampled_messages_by_dimension{account="default",dimension="mcpServer",queue="orders-dlq",region="us-east-1",value="docs-legacy"} 1`,
		`toolq_dlq_sampled_messages_by_dimension{account="prod",dimension="mcpServer",queue="orders-dlq",region="us-east-1",value="docs-legacy"} 1`,
		`toolq_redrive_to_move_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_redrive_to_move_messages{account="prod",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_redrive_moved_messages{account="prod",queue="orders-dlq",region="us-east-1"} 1`,
		`toolq_advice{account="default",queue="orders",region="us-east-1",rule="max-receive-count-1"} 1`,
		`toolq_advice{account="prod",queue="orders",region="us-east-1",rule="max-receive-count-1"} 1`,
		`toolq_redrive_outcome_remembered_messages{account="default",queue="orders-dlq",region="us-east-1"} 2`,
		`toolq_redrive_outcome_remembered_messages{account="prod",queue="orders-dlq",region="us-east-1"} 1`,
		`toolq_redrive_outcome_settled{account="default",queue="orders-dlq",region="us-east-1"} 0`,
		`toolq_redrive_outcome_settled{account="prod",queue="orders-dlq",region="us-east-1"} 0`,
		`toolq_queue_metrics_error 0`,
		`toolq_triage_metrics_error 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if _, err := h.registry.Gather(); err != nil {
		t.Errorf("gather: %v", err)
	}
}
