package server

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// TestTriageMetrics: the DLQ's sample by tool and by dimension, bounded to the top 10 plus
// "(other)" however many tool names the messages bring; blocked groups by queue; a running move
// task's progress; the messages near maxReceiveCount; the collector's cost by loop; and every
// series clean under promtool's rules.
func TestTriageMetrics(t *testing.T) {
	t.Parallel()
	// A sample of 10,000 messages is 20 times the collector's cap; grouping it three ways takes
	// some seconds under the race detector, which the default scrape timeout does not allow for.
	h := newAPIHarness(t, harnessConfig{scrapeTimeout: time.Minute})
	ctx := context.Background()
	dlq, err := h.w.Store.GetQueueByARN(ctx, h.w.ARN("orders-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	// 10,000 distinct tool names (hostile ones among them, one called "(other)"), 12 servers.
	const distinct = 10000
	now := h.w.Now()
	msgs := make([]store.SampledMessage, 0, distinct+20)
	for i := range distinct {
		tool := fmt.Sprintf("tool_%05d", i)
		switch i {
		case 0:
			tool = "(other)"
		case 1:
			tool = `"} 1` + "\n" + `injected_metric 1`
		}
		msgs = append(msgs, store.SampledMessage{QueueID: dlq.ID, MessageID: fmt.Sprintf("x-%05d", i), SentAt: now, ToolName: tool,
			Dimensions: map[string]string{"mcpServer": fmt.Sprintf("server-%02d", i%12)}})
	}
	for i := range 20 { // the most frequent tool, and messages without one
		tool := "create_document"
		if i%2 == 0 {
			tool = ""
		}
		msgs = append(msgs, store.SampledMessage{QueueID: dlq.ID, MessageID: fmt.Sprintf("y-%02d", i), SentAt: now, ToolName: tool,
			Dimensions: map[string]string{"mcpServer": "server-00"}})
	}
	if _, err := h.w.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: now, Seen: len(msgs), ApproxVisible: int64(len(msgs))}, msgs, nil); err != nil {
		t.Fatal(err)
	}
	fifo, err := h.w.Store.GetQueueByARN(ctx, h.w.ARN("calls.fifo"))
	if err != nil {
		t.Fatal(err)
	}
	// Two of its messages have one delivery left of calls.fifo's maxReceiveCount.
	near := []store.SampledMessage{
		{QueueID: fifo.ID, MessageID: "near-1", ReceiveCount: 1, SentAt: now, NearMaxReceive: true},
		{QueueID: fifo.ID, MessageID: "near-2", ReceiveCount: 1, SentAt: now, NearMaxReceive: true},
		{QueueID: fifo.ID, MessageID: "fresh", SentAt: now},
	}
	if _, err := h.w.Store.SaveSample(ctx, store.Sample{QueueID: fifo.ID, Kind: store.SampleSource, At: now, Seen: 3, ApproxVisible: 3}, near,
		[]store.GroupBacklog{{GroupID: "sess_a", Messages: 2, HeadReceiveCount: 3, Blocked: true}, {GroupID: "sess_b", Messages: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := h.w.Store.SetCostEstimate(ctx, store.CostEstimate{At: now, TotalUSDPerDay: 1.5,
		Loops: []store.LoopCost{{Loop: "attributes", USD: 0.25}, {Loop: "metrics", USD: 1.25}}}); err != nil {
		t.Fatal(err)
	}
	if rec := h.do(t, apiRequest{method: "POST", target: "/api/v1/queues/orders-dlq/redrives", header: jsonPost(h.operator)}); rec.Code != 202 {
		t.Fatalf("start a redrive: %d %s", rec.Code, rec.Body)
	}

	body := h.do(t, apiRequest{target: "/metrics", header: bearer(h.viewer)}).Body.String()
	series := func(name, queue string) map[string]float64 {
		out := map[string]float64{}
		for line := range strings.SplitSeq(body, "\n") {
			if strings.HasPrefix(line, name+"{") && strings.Contains(line, `queue="`+queue+`"`) {
				i := strings.LastIndexByte(line, ' ')
				v, _ := strconv.ParseFloat(line[i+1:], 64)
				out[line[:i]] = v
			}
		}
		return out
	}
	tools := series("toolq_dlq_sampled_messages", "orders-dlq")
	var sum float64
	for _, v := range tools {
		sum += v
	}
	// The tool called "(other)" is among the others, not a second series of that name.
	if len(tools) > views.BreakdownTop+1 || sum != float64(len(msgs)) {
		t.Errorf("%d tool series summing to %v; want at most %d (top 10 and other) summing to %d:\n%v", len(tools), sum, views.BreakdownTop+1, len(msgs), tools)
	}
	for _, want := range []string{
		`toolq_dlq_sampled_messages{account="default",queue="orders-dlq",region="us-east-1",tool="create_document"} 10`,
		`toolq_dlq_sampled_messages{account="default",queue="orders-dlq",region="us-east-1",tool="(none)"} 10`,
		`toolq_dlq_sampled_messages_by_dimension{account="default",dimension="mcpServer",queue="orders-dlq",region="us-east-1",value="server-00"} 854`,
		`toolq_queue_blocked_groups{account="default",queue="calls.fifo",region="us-east-1"} 1`,
		`toolq_queue_near_max_receive_messages{account="default",queue="calls.fifo",region="us-east-1"} 2`,
		`toolq_queue_near_max_receive_messages{account="default",queue="orders",region="us-east-1"} 0`,
		`toolq_aws_cost_usd_per_day{loop="attributes"} 0.25`,
		`toolq_aws_cost_usd_per_day{loop="metrics"} 1.25`,
		`toolq_redrive_to_move_messages{account="default",queue="orders-dlq",region="us-east-1"} 5`,
		`toolq_redrive_moved_messages{account="default",queue="orders-dlq",region="us-east-1"} 0`,
		`toolq_triage_metrics_error 0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if servers := series("toolq_dlq_sampled_messages_by_dimension", "orders-dlq"); len(servers) != views.BreakdownTop+1 {
		t.Errorf("%d server series; want %d", len(servers), views.BreakdownTop+1)
	}
	if regexp.MustCompile(`(?m)^injected_metric`).MatchString(body) {
		t.Error("a tool name wrote a line of its own into /metrics")
	}
	if strings.Contains(body, `toolq_queue_blocked_groups{account="default",queue="orders"`) {
		t.Error("a standard queue has a blocked-groups gauge")
	}
	if strings.Contains(body, `toolq_queue_near_max_receive_messages{account="default",queue="orders-dlq"`) {
		t.Error("a queue without a redrive policy has a near-maxReceiveCount gauge")
	}

	mfs, err := h.registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "toolq_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
}
