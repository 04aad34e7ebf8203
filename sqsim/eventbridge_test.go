package sqsim

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/smithy-go"
)

func (h *harness) eventBridge() *eventbridge.Client {
	return eventbridge.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1,
	}, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(h.url) })
}

// TestEventBridgeTopology configures the seeds' pub/sub pattern through
// the stock client and reads it back as a dashboard would: buses, their
// rules, each rule's targets with their dead-letter queues.
func TestEventBridgeTopology(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	eb := h.eventBridge()
	auditARN := h.queueARN(t, h.createQueue(t, "tool-call-audit", nil))
	dlqARN := h.queueARN(t, h.createQueue(t, "tool-call-audit-dlq", nil))

	bus, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("mcp")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(bus.EventBusArn) != "arn:aws:events:us-east-1:000000000000:event-bus/mcp" {
		t.Errorf("bus ARN %s", aws.ToString(bus.EventBusArn))
	}
	rule, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String("tool-call-completed"), EventBusName: aws.String("mcp"),
		EventPattern: aws.String(`{"source":["mcp.tools"],"detail-type":["ToolCallCompleted"]}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(rule.RuleArn) != "arn:aws:events:us-east-1:000000000000:rule/mcp/tool-call-completed" {
		t.Errorf("rule ARN %s", aws.ToString(rule.RuleArn))
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("tool-call-completed"), EventBusName: aws.String("mcp"), Targets: []ebtypes.Target{{
		Id: aws.String("audit"), Arn: aws.String(auditARN),
		DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)},
		RetryPolicy:      &ebtypes.RetryPolicy{MaximumRetryAttempts: aws.Int32(3), MaximumEventAgeInSeconds: aws.Int32(3600)},
	}}}); err != nil {
		t.Fatal(err)
	}

	buses, err := eb.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range buses.EventBuses {
		names = append(names, aws.ToString(b.Name))
	}
	if !slices.Equal(names, []string{"default", "mcp"}) {
		t.Errorf("buses %v, want default and mcp", names)
	}
	rules, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{EventBusName: aws.String("mcp")})
	if err != nil || len(rules.Rules) != 1 || aws.ToString(rules.Rules[0].Name) != "tool-call-completed" ||
		rules.Rules[0].State != ebtypes.RuleStateEnabled || aws.ToString(rules.Rules[0].EventBusName) != "mcp" {
		t.Fatalf("ListRules: %v %+v", err, rules)
	}
	if other, err := eb.ListRules(ctx, &eventbridge.ListRulesInput{}); err != nil || len(other.Rules) != 0 {
		t.Errorf("default bus rules: %v %d", err, len(other.Rules))
	}
	targets, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("tool-call-completed"), EventBusName: aws.String("mcp")})
	if err != nil || len(targets.Targets) != 1 {
		t.Fatalf("ListTargetsByRule: %v %+v", err, targets)
	}
	tg := targets.Targets[0]
	if aws.ToString(tg.Arn) != auditARN || tg.DeadLetterConfig == nil || aws.ToString(tg.DeadLetterConfig.Arn) != dlqARN ||
		aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != 3600 {
		t.Errorf("target %+v", tg)
	}

	var notFound *ebtypes.ResourceNotFoundException
	if _, err := eb.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String("nope")}); !errors.As(err, &notFound) {
		t.Errorf("unknown rule: %v", err)
	}
	var exists *ebtypes.ResourceAlreadyExistsException
	if _, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("mcp")}); !errors.As(err, &exists) {
		t.Errorf("second bus: %v", err)
	}
	var badPattern *ebtypes.InvalidEventPatternException
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("r"), EventPattern: aws.String(`{"source":"mcp.tools"}`)}); !errors.As(err, &badPattern) {
		t.Errorf("pattern without an array: %v", err)
	}
	// ValidationException is not in the model: the client's generic error
	// carries its code.
	var apiErr smithy.APIError
	if _, err := eb.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String("tool-call-completed"), EventBusName: aws.String("mcp")}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Errorf("deleting a rule with targets: %v", err)
	}
}

// TestEventBridgeDelivery puts events through the stock client and checks
// where each lands: matching events on the SQS target, others nowhere, and
// events the target refuses (too large, queue gone) on the target's DLQ
// with EventBridge's failure attributes.
func TestEventBridgeDelivery(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	eb := h.eventBridge()
	auditURL := h.createQueue(t, "tool-call-audit", map[string]string{"MaximumMessageSize": "1024"})
	auditARN := h.queueARN(t, auditURL)
	dlqURL := h.createQueue(t, "tool-call-audit-dlq", nil)
	dlqARN := h.queueARN(t, dlqURL)
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String("tool-call-completed"),
		EventPattern: aws.String(`{"source":["mcp.tools"],"detail-type":["ToolCallCompleted"],"detail":{"toolName":[{"prefix":"web_"}],"durationMs":[{"numeric":[">=",0]}]}}`)}); err != nil {
		t.Fatal(err)
	}
	put := func(rule string, targets ...ebtypes.Target) {
		t.Helper()
		out, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), Targets: targets})
		if err != nil || out.FailedEntryCount != 0 {
			t.Fatalf("PutTargets: %v %+v", err, out)
		}
	}
	put("tool-call-completed",
		ebtypes.Target{Id: aws.String("audit"), Arn: aws.String(auditARN), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}},
		ebtypes.Target{Id: aws.String("gone"), Arn: aws.String("arn:aws:sqs:us-east-1:000000000000:deleted-queue"), DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlqARN)}},
	)
	event := func(source, detailType, tool string, size int) ebtypes.PutEventsRequestEntry {
		detail, _ := json.Marshal(map[string]any{"toolCallId": "tc_1", "toolName": tool, "durationMs": 120, "output": strings.Repeat("x", size)})
		return ebtypes.PutEventsRequestEntry{Source: aws.String(source), DetailType: aws.String(detailType), Detail: aws.String(string(detail))}
	}
	out, err := eb.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
		event("mcp.tools", "ToolCallCompleted", "web_search", 10),                                      // delivered to audit; "gone" fails
		event("mcp.tools", "ToolCallCompleted", "read_file", 10),                                       // no match: prefix
		event("mcp.other", "ToolCallCompleted", "web_search", 10),                                      // no match: source
		event("mcp.tools", "ToolCallCompleted", "web_fetch", 2000),                                     // too large for audit; "gone" fails
		{Source: aws.String("mcp.tools"), DetailType: aws.String("x"), Detail: aws.String("not json")}, // refused
	}})
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedEntryCount != 1 || aws.ToString(out.Entries[4].ErrorCode) != "MalformedDetail" || aws.ToString(out.Entries[0].EventId) == "" {
		t.Errorf("PutEvents: %d failed, entries %+v", out.FailedEntryCount, out.Entries)
	}

	got := h.receive(t, auditURL, 10)
	if len(got) != 1 {
		t.Fatalf("audit queue has %d events, want 1", len(got))
	}
	var delivered struct {
		ID         string `json:"id"`
		Source     string `json:"source"`
		DetailType string `json:"detail-type"`
		Account    string `json:"account"`
		Detail     struct {
			ToolName string `json:"toolName"`
		} `json:"detail"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(got[0].Body)), &delivered); err != nil || delivered.ID != aws.ToString(out.Entries[0].EventId) ||
		delivered.Source != "mcp.tools" || delivered.DetailType != "ToolCallCompleted" || delivered.Account != "000000000000" || delivered.Detail.ToolName != "web_search" {
		t.Errorf("delivered event %s (%v)", aws.ToString(got[0].Body), err)
	}

	dead := h.receive(t, dlqURL, 10)
	type failure struct{ rule, target, code, event string }
	var failures []failure
	for _, m := range dead {
		attr := func(name string) string { return aws.ToString(m.MessageAttributes[name].StringValue) }
		var e struct {
			ID string `json:"id"`
		}
		json.Unmarshal([]byte(aws.ToString(m.Body)), &e)
		failures = append(failures, failure{attr("RULE_ARN"), attr("TARGET_ARN"), attr("ERROR_CODE"), e.ID})
		if attr("ERROR_MESSAGE") == "" || attr("RETRY_ATTEMPTS") != "0" {
			t.Errorf("DLQ message attributes %v", m.MessageAttributes)
		}
	}
	ruleARN := "arn:aws:events:us-east-1:000000000000:rule/tool-call-completed"
	want := []failure{
		{ruleARN, "arn:aws:sqs:us-east-1:000000000000:deleted-queue", "NO_RESOURCE", aws.ToString(out.Entries[0].EventId)},
		{ruleARN, auditARN, "SDK_CLIENT_ERROR", aws.ToString(out.Entries[3].EventId)},
		{ruleARN, "arn:aws:sqs:us-east-1:000000000000:deleted-queue", "NO_RESOURCE", aws.ToString(out.Entries[3].EventId)},
	}
	if !slices.Equal(failures, want) {
		t.Errorf("DLQ holds %+v, want %+v", failures, want)
	}
	if len(dead) > 1 && !strings.Contains(aws.ToString(dead[1].MessageAttributes["ERROR_MESSAGE"].StringValue), "Message must be shorter than 1024 bytes") {
		t.Errorf("oversized event's ERROR_MESSAGE %q", aws.ToString(dead[1].MessageAttributes["ERROR_MESSAGE"].StringValue))
	}
}

// TestEventPatterns checks the pattern subset the simulator matches.
func TestEventPatterns(t *testing.T) {
	t.Parallel()
	event := map[string]any{
		"source": "mcp.tools", "detail-type": "ToolCallCompleted",
		"detail": map[string]any{"toolName": "web_search", "durationMs": 120.0, "tags": []any{"slow", "retry"}, "error": nil},
	}
	tests := []struct {
		pattern string
		want    bool
	}{
		{`{"source":["mcp.tools"]}`, true},
		{`{"source":["mcp.other","mcp.tools"]}`, true},
		{`{"source":["mcp.other"]}`, false},
		{`{"source":[{"prefix":"mcp."}]}`, true},
		{`{"source":[{"suffix":".tools"}]}`, true},
		{`{"detail-type":[{"equals-ignore-case":"toolcallcompleted"}]}`, true},
		{`{"source":[{"anything-but":"mcp.tools"}]}`, false},
		{`{"source":[{"anything-but":["a","b"]}]}`, true},
		{`{"detail":{"toolName":["web_search"],"durationMs":[{"numeric":[">",100,"<=",120]}]}}`, true},
		{`{"detail":{"durationMs":[{"numeric":["<",100]}]}}`, false},
		{`{"detail":{"durationMs":[120]}}`, true},
		{`{"detail":{"tags":["retry"]}}`, true},
		{`{"detail":{"error":[null]}}`, true},
		{`{"detail":{"missing":[{"exists":false}]}}`, true},
		{`{"detail":{"toolName":[{"exists":false}]}}`, false},
		{`{"detail":{"toolName":[{"exists":true}]}}`, true},
		{`{"detail":{"toolName":{"nested":["x"]}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			p, err := parseEventPattern(tt.pattern)
			if err != nil {
				t.Fatal(err)
			}
			if got := matchPattern(p, event); got != tt.want {
				t.Errorf("match = %v, want %v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`[]`, `{"source":"x"}`, `{"source":[{"wat":1}]}`, `{"source":[{"numeric":[">"]}]}`, `{"source":[[1]]}`, `{"source":[{"prefix":1}]}`} {
		if _, err := parseEventPattern(bad); err == nil {
			t.Errorf("pattern %s accepted", bad)
		}
	}
}
