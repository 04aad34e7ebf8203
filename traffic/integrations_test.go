package traffic

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/sqsim"
)

// newSimClients serves a simulator on the real clock and returns it with every stock client.
func newSimClients(t *testing.T) (*sqsim.Simulator, awsconf.Clients) {
	t.Helper()
	sim := sqsim.New(sqsim.Options{Seed: 1})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sim.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	clients, err := awsconf.Load(t.Context(), awsconf.Options{Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	return sim, clients
}

// TestIntegrate: the bus, rule and target (with its DLQ and a short maxEventAge), the Lambda
// mapping on web-search with the one setting the advisor flags, and the alarm, all read back
// through the stock clients; a second Integrate changes nothing.
func TestIntegrate(t *testing.T) {
	t.Parallel()
	_, c := newSimClients(t)
	ctx := t.Context()
	topo, err := Setup(ctx, c.SQS)
	if err != nil {
		t.Fatal(err)
	}
	in := Integrations{EventBridge: c.EventBridge, Lambda: c.Lambda, CloudWatch: c.CloudWatch}
	for range 2 {
		if err := Integrate(ctx, topo, in); err != nil {
			t.Fatalf("Integrate: %v", err)
		}
	}
	audit, _ := topo.Queue(QueueToolCallAudit)
	dlq, _ := topo.Queue(QueueToolCallAuditDLQ)
	targets, err := c.EventBridge.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: aws.String(RuleToolCallCompleted), EventBusName: aws.String(EventBus)})
	if err != nil {
		t.Fatal(err)
	}
	if len(targets.Targets) != 1 {
		t.Fatalf("targets = %+v", targets.Targets)
	}
	tg := targets.Targets[0]
	if aws.ToString(tg.Arn) != audit.ARN || tg.DeadLetterConfig == nil || aws.ToString(tg.DeadLetterConfig.Arn) != dlq.ARN ||
		tg.RetryPolicy == nil || aws.ToInt32(tg.RetryPolicy.MaximumEventAgeInSeconds) != 3600 {
		t.Errorf("target = %+v", tg)
	}
	web, _ := topo.Queue(QueueWebSearch)
	mappings, err := c.Lambda.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(web.ARN)})
	if err != nil {
		t.Fatal(err)
	}
	if len(mappings.EventSourceMappings) != 1 {
		t.Fatalf("mappings = %+v", mappings.EventSourceMappings)
	}
	m := mappings.EventSourceMappings[0]
	if aws.ToInt32(m.BatchSize) != 10 || !slices.Contains(m.FunctionResponseTypes, lambdatypes.FunctionResponseTypeReportBatchItemFailures) ||
		(m.ScalingConfig != nil && m.ScalingConfig.MaximumConcurrency != nil) {
		t.Errorf("mapping = %+v; want batches of 10, ReportBatchItemFailures, no MaximumConcurrency", m)
	}
	fn, err := c.Lambda.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String(FunctionWebSearch)})
	if err != nil {
		t.Fatal(err)
	}
	if 6*time.Duration(aws.ToInt32(fn.Timeout))*time.Second > web.VisibilityTimeout {
		t.Errorf("function timeout %d s: six of them exceed web-search's visibility timeout %v, which the advisor would flag too", aws.ToInt32(fn.Timeout), web.VisibilityTimeout)
	}
	alarms, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{AlarmWebSearchDLQ}})
	if err != nil || len(alarms.MetricAlarms) != 1 {
		t.Fatalf("alarms = %+v, %v", alarms, err)
	}
	if names := SourceQueueNames(); slices.Contains(names, QueueToolCallAuditDLQ) || !slices.Contains(names, QueueToolCallAudit) {
		t.Errorf("SourceQueueNames = %v: the target DLQ is a DLQ, the audit queue a source", names)
	}
}

// TestCompletedEventsReachTheTargetDLQ runs the traffic with its integrations until an event
// too large for the audit queue is in the target's dead-letter queue with EventBridge's failure
// attributes, while the audit queue's consumer drains the others.
func TestCompletedEventsReachTheTargetDLQ(t *testing.T) {
	t.Parallel()
	sim, c := newSimClients(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	g := New(c.SQS, Options{Seed: 1, Rate: 10, WaitTime: time.Second, Logger: testLogger(t),
		Integrations: Integrations{EventBridge: c.EventBridge}})
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var failed []sqsim.MessageSnapshot
	for len(failed) == 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("no event in %s before the deadline; %d PutEvents calls", QueueToolCallAuditDLQ, sim.CallCount("PutEvents"))
		case <-tick.C:
		}
		failed, _ = sim.Snapshot(QueueToolCallAuditDLQ)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	m := failed[0]
	if m.MessageAttributes["ERROR_CODE"] == "" || !strings.Contains(m.MessageAttributes["RULE_ARN"], RuleToolCallCompleted) ||
		!strings.HasSuffix(m.MessageAttributes["TARGET_ARN"], ":"+QueueToolCallAudit) || !strings.Contains(m.Body, `"detail-type":"ToolCallCompleted"`) {
		t.Errorf("dead-lettered event: attributes %v, body %.120s", m.MessageAttributes, m.Body)
	}
	if len(m.Body) <= auditMaxMessageSize {
		t.Errorf("an event of %d bytes failed delivery; only those over %d should", len(m.Body), auditMaxMessageSize)
	}
	if sim.CallCount("DeleteMessage") == 0 {
		t.Errorf("nothing was ever deleted")
	}
}
