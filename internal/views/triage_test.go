package views

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// triageFixture is a DLQ whose sample holds calls of two MCP servers, some with an error
// dimension, one an EventBridge event that could not be delivered.
func triageFixture(t *testing.T) (*fixture, int64) {
	f := newFixture(t)
	f.svc = New(Options{Store: f.store, Now: func() time.Time { return now }, Dimensions: []string{"mcpServer", "error"}, ErrorDimension: "error"})
	dlq := f.queue("web-search-dlq")
	f.queue("web-search")
	f.attrs("web-search-dlq", "", 0, 1209600, now, 6)
	msgs := toolMessages(6, "web-search")
	for i := range msgs {
		msgs[i].Dimensions = map[string]string{"mcpServer": "docs-legacy"}
		if i == 1 || i == 3 {
			msgs[i].Dimensions["mcpServer"] = "research"
		}
	}
	msgs[0].Dimensions["error"] = "connection_refused"
	msgs[2].Dimensions["error"] = "connection_refused"
	msgs[3].Attributes = append(msgs[3].Attributes,
		store.MessageAttribute{Name: "ERROR_CODE", DataType: "String", Value: "NO_RESOURCE"},
		store.MessageAttribute{Name: "ERROR_MESSAGE", DataType: "String", Value: "The specified queue does not exist."},
		store.MessageAttribute{Name: "RULE_ARN", DataType: "String", Value: "arn:aws:events:us-east-1:123456789012:rule/tools"},
		store.MessageAttribute{Name: "TARGET_ARN", DataType: "String", Value: account + "gone"},
		store.MessageAttribute{Name: "RETRY_ATTEMPTS", DataType: "Number", Value: "0"})
	_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: dlq, Kind: store.SampleDeadLetter, At: now, Seen: 6, ApproxVisible: 8}, msgs, nil)
	f.must(err)
	return f, dlq
}

func TestMessageReasons(t *testing.T) {
	t.Parallel()
	f, dlq := triageFixture(t)
	page, err := f.svc.Messages(f.ctx, dlq, MessageQuery{})
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, m := range page.Messages {
		if m.Reason != nil {
			reasons[m.MessageID] = m.Reason.Source + " " + m.Reason.Text()
		}
		if m.Dimensions == nil {
			t.Errorf("%s: dimensions nil", m.MessageID)
		}
	}
	want := map[string]string{
		"msg-000": "dimension connection_refused",
		"msg-002": "dimension connection_refused",
		"msg-003": "eventbridge NO_RESOURCE: The specified queue does not exist.",
	}
	if len(reasons) != len(want) {
		t.Errorf("reasons = %v; want %v", reasons, want)
	}
	for id, w := range want {
		if reasons[id] != w {
			t.Errorf("%s: reason %q; want %q", id, reasons[id], w)
		}
	}
	m, err := f.svc.Message(f.ctx, dlq, "msg-003")
	if err != nil {
		t.Fatal(err)
	}
	if r := m.Reason; r == nil || r.RuleARN == "" || r.TargetARN != account+"gone" || r.RetryAttempts == nil || *r.RetryAttempts != 0 {
		t.Errorf("EventBridge reason = %+v", m.Reason)
	}
}

func TestMessagesGroupAndFilterByDimension(t *testing.T) {
	t.Parallel()
	f, dlq := triageFixture(t)
	tests := []struct {
		name    string
		q       MessageQuery
		matched int
		groups  []string
		err     error
	}{
		{"group by server", MessageQuery{GroupBy: "mcpServer"}, 6, []string{"docs-legacy 4", "research 2"}, nil},
		{"group by tool", MessageQuery{GroupBy: GroupToolName}, 6, []string{"append_section 3", "create_document 3"}, nil},
		{"filter by server", MessageQuery{Dimensions: map[string]string{"mcpServer": "research"}}, 2, nil, nil},
		{"filter and group", MessageQuery{Dimensions: map[string]string{"mcpServer": "docs-legacy"}, GroupBy: "error"}, 4, []string{"connection_refused 2", " 2"}, nil},
		{"search", MessageQuery{Search: "doc 5"}, 1, nil, nil},
		{"unknown group", MessageQuery{GroupBy: "nope"}, 0, nil, ErrUnknownDimension},
		{"unknown filter", MessageQuery{Dimensions: map[string]string{"nope": "x"}}, 0, nil, ErrUnknownDimension},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := f.svc.Messages(f.ctx, dlq, tt.q)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v; want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if page.Matched != tt.matched || len(page.Messages) != tt.matched {
				t.Errorf("matched %d, %d messages; want %d", page.Matched, len(page.Messages), tt.matched)
			}
			var groups []string
			for _, g := range page.Groups {
				groups = append(groups, g.Value+" "+strconv.Itoa(g.Count))
				if g.FirstSentAt == nil || g.LastSentAt == nil || g.LastSentAt.Before(*g.FirstSentAt) {
					t.Errorf("group %q sent from %v to %v", g.Value, g.FirstSentAt, g.LastSentAt)
				}
			}
			if len(tt.groups) > 0 && !slices.Equal(groups, tt.groups) {
				t.Errorf("groups = %q; want %q", groups, tt.groups)
			}
			if len(page.Dimensions) != 2 {
				t.Errorf("dimensions = %v", page.Dimensions)
			}
		})
	}
}

func TestTriage(t *testing.T) {
	t.Parallel()
	f, dlq := triageFixture(t)
	tr, err := f.svc.Triage(f.ctx, dlq)
	if err != nil {
		t.Fatal(err)
	}
	if tr.SampledAt == nil || tr.Seen != 6 || tr.Coverage != 0.75 {
		t.Errorf("triage coverage = %+v", tr)
	}
	if len(tr.Dimensions) != 2 || tr.Dimensions[0].Name != "mcpServer" || tr.Dimensions[0].Values[0].Value != "docs-legacy" || tr.Dimensions[0].Values[0].Count != 4 {
		t.Errorf("dimensions = %+v", tr.Dimensions)
	}
	if len(tr.Reasons) != 2 || tr.Reasons[0].Value != "connection_refused" || tr.Reasons[0].Count != 2 {
		t.Errorf("reasons = %+v", tr.Reasons)
	}
	if line := tr.Line(); line != "tools: append_section 3, create_document 3; mcpServer: docs-legacy 4, research 2; error: connection_refused 2; reasons: connection_refused 2, NO_RESOURCE 1" {
		t.Errorf("Line() = %q", line)
	}
	// Before a sample: empty, never null.
	empty, err := f.svc.Triage(f.ctx, f.ids["web-search"])
	if err != nil || empty.SampledAt != nil || empty.Tools == nil || empty.Dimensions == nil || empty.Reasons == nil || empty.Line() != "" {
		t.Errorf("triage without a sample = %+v, %v", empty, err)
	}
}
