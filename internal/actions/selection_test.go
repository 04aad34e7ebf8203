package actions_test

import (
	"context"
	"testing"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
)

// TestSelectionRefusals: a selective redrive or a discard that cannot be run is refused before
// anything is received, each with its code, and changes no queue.
func TestSelectionRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A tier: a DLQ with a RedrivePolicy of its own.
	w.CreateQueue(t, "orders-dlq2", "", nil)
	w.CreateQueue(t, "tier-dlq", "orders-dlq2", nil)
	w.CreateQueue(t, "tiered", "tier-dlq", nil)
	w.Watch(t, "orders-dlq2", "tier-dlq", "tiered")
	// A sample that saw the whole of orders-dlq: 25 create_document calls.
	ctx := context.Background()
	q, err := w.Store.ResolveQueue(ctx, "orders-dlq")
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]store.SampledMessage, 25)
	for i := range msgs {
		msgs[i] = store.SampledMessage{QueueID: q.ID, MessageID: "m" + string(rune('a'+i)), ToolName: "create_document", SentAt: w.Now()}
	}
	if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: q.ID, Kind: store.SampleDeadLetter, At: w.Now(), Seen: 25, ApproxVisible: 25}, msgs, nil); err != nil {
		t.Fatal(err)
	}
	svc := w.Actions(actions.Options{Dimensions: []string{"mcpServer"}})
	sel := func(s engine.Selection) *engine.Selection { return &s }
	tests := []struct {
		name string
		req  actions.StartRedriveRequest
		code string
		kind actions.Kind
	}{
		{"empty", actions.StartRedriveRequest{Queue: "orders-dlq", Selection: sel(engine.Selection{})}, "empty_selection", actions.Unprocessable},
		{"unknown dimension", actions.StartRedriveRequest{Queue: "orders-dlq", Selection: sel(engine.Selection{Dimensions: map[string][]string{"region": {"x"}}})}, "unknown_dimension", actions.Unprocessable},
		{"groups on a standard DLQ", actions.StartRedriveRequest{Queue: "orders-dlq", Selection: sel(engine.Selection{Groups: []string{"sess_1"}})}, "groups_on_standard_queue", actions.Unprocessable},
		{"nothing in a whole sample", actions.StartRedriveRequest{Queue: "orders-dlq", Selection: sel(engine.Selection{Tools: []string{"web_search"}})}, "selection_matches_nothing", actions.Unprocessable},
		{"a tier not opted in", actions.StartRedriveRequest{Queue: "tier-dlq", Selection: sel(engine.Selection{Tools: []string{"x"}})}, "tier_dead_letter_queue", actions.Unprocessable},
		{"a destination in another account", actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "arn:aws:sqs:us-east-1:999999999999:orders", Selection: sel(engine.Selection{Tools: []string{"create_document"}})}, "destination_other_account", actions.Unprocessable},
		{"a discard without a selection", actions.StartRedriveRequest{Queue: "orders-dlq", Discard: true}, "empty_selection", actions.Unprocessable},
		{"a discard with a destination", actions.StartRedriveRequest{Queue: "orders-dlq", Discard: true, Destination: "orders", Selection: sel(engine.Selection{Tools: []string{"create_document"}})}, "invalid_discard", actions.Invalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.StartRedrive(ctx, operator, tt.req)
			wantRefusal(t, err, tt.code, tt.kind)
		})
	}
	if tasks, err := w.Store.ListMoveTasks(ctx, q.ID, 0); err != nil || len(tasks) != 0 {
		t.Errorf("redrives after the refusals: %v, %v; want none", tasks, err)
	}
	if n := w.Count(t, "orders-dlq"); n != 25 {
		t.Errorf("orders-dlq holds %d; want 25", n)
	}
	// A preview of a selection counts what it holds in the sample, by tool and destination.
	p, err := w.Actions(actions.Options{Confirmations: testSigner("key")}).PreviewRedrive(ctx, operator, actions.StartRedriveRequest{
		Queue: "orders-dlq", Selection: sel(engine.Selection{Tools: []string{"create_document"}})})
	if err != nil || p.InSample.Matched != 25 || !p.InSample.Complete || p.InSample.ByTool["create_document"] != 25 || p.Token == "" {
		t.Errorf("preview = %+v, %v", p.InSample, err)
	}
}
