package views_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/views"
)

// TestEventBridgeDLQTriagesByToolAndServer: EventBridge puts the whole event it could not deliver
// into the target's dead-letter queue, with its producer's fields in detail and none of its
// message attributes. The collector reads the tool name there, and a dimension read from a
// message attribute (the MCP server) from the detail's field of that name, so that such a DLQ
// is triaged by tool and server as a tool-call queue's DLQ is, not as "no tool name".
func TestEventBridgeDLQTriagesByToolAndServer(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, worldOptions{dims: []collector.Dimension{{Name: "mcpServer", Source: collector.FromAttribute, Path: "mcpServer"}}})
	w.queue("tool-events-dlq", nil)
	// The target names a queue that does not exist: every delivery fails into the DLQ.
	w.target("mcp-tool-calls", "gone-worker", ebtypes.Target{DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.acct + "tool-events-dlq")}})
	calls := []struct{ tool, server string }{
		{"web_search", "research"}, {"web_search", "research"}, {"web_search", "research"},
		{"read_file", "docs-legacy"}, {"read_file", "docs-legacy"},
	}
	for i, c := range calls {
		out, err := w.c.EventBridge.PutEvents(w.ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String("mcp-tool-calls"), Source: aws.String("mcp.tools"), DetailType: aws.String("ToolCallCompleted"),
			Detail: aws.String(fmt.Sprintf(`{"toolCallId":"tc_%03d","toolName":%q,"mcpServer":%q,"durationMs":12}`, i, c.tool, c.server)),
		}}})
		w.must(err)
		if out.FailedEntryCount != 0 {
			t.Fatalf("PutEvents refused an entry: %+v", out.Entries)
		}
	}
	w.round() // the topology names the DLQ an EventBridge target's
	w.round() // which is then sampled
	key, err := w.views.ResolveQueue(w.ctx, "tool-events-dlq")
	w.must(err)
	tr, err := w.views.Triage(w.ctx, key.ID)
	w.must(err)
	if tr.Seen != len(calls) {
		t.Fatalf("the sample saw %d events; want %d", tr.Seen, len(calls))
	}
	if want := []views.ToolCount{{ToolName: "web_search", Count: 3}, {ToolName: "read_file", Count: 2}}; !slices.Equal(tr.Tools, want) {
		t.Errorf("top tools = %+v; want %+v", tr.Tools, want)
	}
	var servers []string
	for _, d := range tr.Dimensions {
		for _, v := range d.Values {
			servers = append(servers, fmt.Sprintf("%s=%s %d", d.Name, v.Value, v.Count))
		}
	}
	if want := []string{"mcpServer=research 3", "mcpServer=docs-legacy 2"}; !slices.Equal(servers, want) {
		t.Errorf("top dimensions = %q; want %q", servers, want)
	}
	// The messages page groups and filters by them too.
	for _, tt := range []struct {
		q    views.MessageQuery
		want []string
	}{
		{views.MessageQuery{GroupBy: views.GroupToolName}, []string{"web_search 3", "read_file 2"}},
		{views.MessageQuery{GroupBy: "mcpServer", ToolName: "read_file"}, []string{"docs-legacy 2"}},
	} {
		page, err := w.views.Messages(w.ctx, key.ID, tt.q)
		w.must(err)
		var got []string
		for _, g := range page.Groups {
			got = append(got, fmt.Sprintf("%s %d", g.Value, g.Count))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%+v: groups %q; want %q", tt.q, got, tt.want)
		}
	}
}
