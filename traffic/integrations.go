package traffic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// The rest of the seeds' patterns in the demo: an EventBridge bus on which workers announce each
// completed tool call, a rule that delivers those events to an audit queue with a target
// dead-letter queue (pattern 4), a Lambda function mapped onto web-search (pattern 5) and the
// seeds' alarm on a dead-letter queue's depth.
const (
	// EventBus is the demo's custom event bus.
	EventBus = "mcp-tool-calls"
	// RuleToolCallCompleted delivers ToolCallCompleted events to QueueToolCallAudit.
	RuleToolCallCompleted = "tool-call-completed"
	// EventSource and EventDetailType are the demo events' source and detail-type.
	EventSource     = "mcp.tools"
	EventDetailType = "ToolCallCompleted"
	// FunctionWebSearch is the Lambda function whose event source mapping drains web-search.
	FunctionWebSearch = "web-search-worker"
	// AlarmWebSearchDLQ alarms on the first message in web-search-dlq, as the seeds advise.
	AlarmWebSearchDLQ = "web-search-dlq-depth"
)

// auditMaxMessageSize is the audit queue's MaximumMessageSize: an audit log wants small events,
// so a tool result carried whole in an event (rather than as an S3 URI, as the seeds advise)
// fails delivery and lands in the target's dead-letter queue.
const auditMaxMessageSize = 8 << 10

// Integrations are the stock clients of the demo's other services; each nil leaves its part out.
type Integrations struct {
	EventBridge *eventbridge.Client
	Lambda      *lambda.Client
	CloudWatch  *cloudwatch.Client
}

// Integrate adds to a topology Setup created the demo's event bus, rule and target (with its
// dead-letter queue), the Lambda consumer of web-search (batches of 10 with
// ReportBatchItemFailures, but no MaximumConcurrency: the one setting the advisor flags) and the
// alarm on web-search-dlq. It is idempotent. The simulator keeps Lambda as configuration: the
// demo's own workers still drain web-search.
func Integrate(ctx context.Context, topo Topology, in Integrations) error {
	if in.EventBridge != nil {
		if err := setupEvents(ctx, in.EventBridge, topo); err != nil {
			return err
		}
	}
	if in.Lambda != nil {
		if err := setupConsumer(ctx, in.Lambda, topo); err != nil {
			return err
		}
	}
	if in.CloudWatch != nil {
		if err := setupAlarm(ctx, in.CloudWatch); err != nil {
			return err
		}
	}
	return nil
}

func setupEvents(ctx context.Context, eb *eventbridge.Client, topo Topology) error {
	audit, ok1 := topo.Queue(QueueToolCallAudit)
	dlq, ok2 := topo.Queue(QueueToolCallAuditDLQ)
	if !ok1 || !ok2 {
		return errors.New("traffic: the topology has no audit queues")
	}
	_, err := eb.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(EventBus)})
	if _, exists := errors.AsType[*ebtypes.ResourceAlreadyExistsException](err); err != nil && !exists {
		return fmt.Errorf("traffic: create event bus: %w", err)
	}
	pattern, _ := json.Marshal(map[string]any{"source": []string{EventSource}, "detail-type": []string{EventDetailType}})
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String(RuleToolCallCompleted), EventBusName: aws.String(EventBus), EventPattern: aws.String(string(pattern)),
		Description: aws.String("Every completed MCP tool call, to the audit log"),
	}); err != nil {
		return fmt.Errorf("traffic: put rule: %w", err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{
		Rule: aws.String(RuleToolCallCompleted), EventBusName: aws.String(EventBus),
		Targets: []ebtypes.Target{{
			Id: aws.String("audit-log"), Arn: aws.String(audit.ARN),
			DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(dlq.ARN)},
			RetryPolicy:      &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600), MaximumRetryAttempts: aws.Int32(3)},
		}},
	}); err != nil {
		return fmt.Errorf("traffic: put targets: %w", err)
	}
	return nil
}

func setupConsumer(ctx context.Context, fn *lambda.Client, topo Topology) error {
	web, ok := topo.Queue(QueueWebSearch)
	if !ok {
		return errors.New("traffic: the topology has no web-search queue")
	}
	// The function's timeout fits web-search's short visibility timeout six times over, so that
	// the one setting the advisor flags is the mapping's missing MaximumConcurrency.
	timeout := max(int32(web.VisibilityTimeout/time.Second)/6, 1)
	_, err := fn.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(FunctionWebSearch), Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"),
		Role: aws.String("arn:aws:iam::000000000000:role/web-search-worker"), Timeout: aws.Int32(timeout),
		Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK\x05\x06" + strings.Repeat("\x00", 18))},
	})
	if _, exists := errors.AsType[*lambdatypes.ResourceConflictException](err); err != nil && !exists {
		return fmt.Errorf("traffic: create function: %w", err)
	}
	_, err = fn.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		FunctionName: aws.String(FunctionWebSearch), EventSourceArn: aws.String(web.ARN), BatchSize: aws.Int32(10),
		FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures},
	})
	if _, exists := errors.AsType[*lambdatypes.ResourceConflictException](err); err != nil && !exists {
		return fmt.Errorf("traffic: create event source mapping: %w", err)
	}
	return nil
}

func setupAlarm(ctx context.Context, cw *cloudwatch.Client) error {
	_, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(AlarmWebSearchDLQ), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateNumberOfMessagesVisible"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(QueueWebSearchDLQ)}},
		Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, TreatMissingData: aws.String("notBreaching"),
		AlarmDescription: aws.String("web-search's failures reached its dead-letter queue"),
	})
	if err != nil {
		return fmt.Errorf("traffic: put alarm: %w", err)
	}
	return nil
}

// completedEvent is the detail of a ToolCallCompleted event.
type completedEvent struct {
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	SessionID  string `json:"sessionId"`
	MCPServer  string `json:"mcpServer"`
	DurationMS int64  `json:"durationMs"`
	// Result is what the tool returned, as a careless producer carries it: whole. A file read or
	// a fetched page can be kilobytes, which the audit queue refuses.
	Result string `json:"result"`
}

// largeResults are the tools whose result is sometimes carried whole, and how often.
var largeResults = map[string]float64{"read_file": 0.15, "fetch_url": 0.12, "export_csv": 0.10}

// completedDetail builds the event a worker publishes once call succeeded. Whether its result is
// large follows from the call's id and the seed, like everything the traffic decides.
func completedDetail(seed int64, server string, call ToolCall, took time.Duration) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/result", call.ToolCallID)
	r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
	result := fmt.Sprintf("%s ok", call.ToolName)
	if r.Float64() < largeResults[call.ToolName] {
		result = strings.Repeat("lorem ipsum dolor sit amet ", (12<<10)/27+r.IntN(1200))
	}
	b, _ := json.Marshal(completedEvent{ToolCallID: call.ToolCallID, ToolName: call.ToolName, SessionID: call.SessionID,
		MCPServer: server, DurationMS: took.Milliseconds(), Result: result})
	return string(b)
}

// publishCompleted announces a completed tool call on the demo's bus. A failure is logged, not
// retried: the audit trail is a side effect, and the tool call succeeded.
func (g *Generator) publishCompleted(ctx context.Context, server string, call ToolCall, took time.Duration) {
	if g.opts.Integrations.EventBridge == nil {
		return
	}
	out, err := g.opts.Integrations.EventBridge.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String(EventBus), Source: aws.String(EventSource), DetailType: aws.String(EventDetailType),
		Detail: aws.String(completedDetail(g.opts.Seed, server, call, took)),
	}}})
	switch {
	case err != nil && !canceled(ctx, err):
		g.log.Debug("publish ToolCallCompleted", "err", err)
	case err == nil && out.FailedEntryCount > 0:
		g.log.Debug("publish ToolCallCompleted: entry refused", "code", aws.ToString(out.Entries[0].ErrorCode))
	case err == nil:
		g.stats.events.Add(1)
	}
}
