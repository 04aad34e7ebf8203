package collector

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
)

// topologyWorld is the seeds' patterns 4 and 5 set up in the simulator through the stock
// clients: web-search (with a DLQ) drained by a Lambda function, a custom bus whose rule
// delivers to the audit queue with a target DLQ outside the selection, and an alarm on the
// web-search DLQ.
type topologyWorld struct {
	webURL, webARN, webDLQURL string
	auditURL, auditARN        string
	failedURL, failedARN      string
	ruleARN                   string
}

func (e *env) topologyWorld() topologyWorld {
	e.t.Helper()
	return setupTopology(e.t, e.ctx, awsconf.Clients{SQS: e.sqs, Lambda: e.fn, EventBridge: e.eb, CloudWatch: e.cw}, "arn:aws:iam::000000000000:role/worker")
}

// setupTopology builds the world through the stock clients of any endpoint; without a
// CloudWatch client (moto speaks no CBOR) it sets no alarm.
func setupTopology(t testing.TB, ctx context.Context, c awsconf.Clients, role string) topologyWorld {
	t.Helper()
	create := func(name string, attrs map[string]string) (string, string) {
		out, err := c.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		must(t, err)
		a, err := c.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		must(t, err)
		return aws.ToString(out.QueueUrl), a.Attributes["QueueArn"]
	}
	var w topologyWorld
	var webDLQARN string
	w.webDLQURL, webDLQARN = create("web-search-dlq", nil)
	w.webURL, w.webARN = create("web-search", map[string]string{
		"VisibilityTimeout": "60",
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + webDLQARN + `","maxReceiveCount":3}`,
	})
	w.auditURL, w.auditARN = create("audit", map[string]string{"MaximumMessageSize": "1024"})
	w.failedURL, w.failedARN = create("failed-audit-events", nil)

	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	f, err := zw.Create("index.js")
	must(t, err)
	io.WriteString(f, "exports.handler = async () => ({ batchItemFailures: [] });")
	must(t, zw.Close())
	_, err = c.Lambda.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("web-search-worker"), Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"),
		Role: aws.String(role), Timeout: aws.Int32(30), Code: &lambdatypes.FunctionCode{ZipFile: zipped.Bytes()},
	})
	must(t, err)
	_, err = c.Lambda.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		FunctionName: aws.String("web-search-worker"), EventSourceArn: aws.String(w.webARN), BatchSize: aws.Int32(10),
		FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures},
	})
	must(t, err)

	_, err = c.EventBridge.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String("mcp")})
	must(t, err)
	rule, err := c.EventBridge.PutRule(ctx, &eventbridge.PutRuleInput{
		Name: aws.String("tool-call-completed"), EventBusName: aws.String("mcp"),
		EventPattern: aws.String(`{"source":["mcp.tools"],"detail-type":["ToolCallCompleted"]}`),
	})
	must(t, err)
	w.ruleARN = aws.ToString(rule.RuleArn)
	_, err = c.EventBridge.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String("tool-call-completed"), EventBusName: aws.String("mcp"),
		Targets: []ebtypes.Target{{Id: aws.String("audit"), Arn: aws.String(w.auditARN),
			DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(w.failedARN)},
			RetryPolicy:      &ebtypes.RetryPolicy{MaximumEventAgeInSeconds: aws.Int32(3600), MaximumRetryAttempts: aws.Int32(3)}}},
	})
	must(t, err)

	if c.CloudWatch != nil {
		_, err = c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String("web-search-dlq-depth"), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateNumberOfMessagesVisible"),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("web-search-dlq")}},
			Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
			ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
		})
		must(t, err)
	}
	return w
}

// putEvent publishes one ToolCallCompleted event whose detail carries size bytes of result.
func (e *env) putEvent(size int) {
	e.t.Helper()
	detail, _ := json.Marshal(map[string]any{"toolCallId": "tc_1", "toolName": "read_file", "result": strings.Repeat("x", size)})
	out, err := e.eb.PutEvents(e.ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
		EventBusName: aws.String("mcp"), Source: aws.String("mcp.tools"), DetailType: aws.String("ToolCallCompleted"), Detail: aws.String(string(detail)),
	}}})
	must(e.t, err)
	if out.FailedEntryCount != 0 {
		e.t.Fatalf("PutEvents failed: %+v", out.Entries)
	}
}

// TestTopologyReadsConsumersRulesAndAlarms: the topology cycle stores the event source mapping
// with its function's timeout, the rule's target with its dead-letter queue and retry policy,
// and the alarm; it watches the target's dead-letter queue although the selection leaves it
// out, and samples it as a dead-letter queue without moving anything.
func TestTopologyReadsConsumersRulesAndAlarms(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.topologyWorld()
	c := e.collector(func(o *Options) { o.QueuePrefixes = []string{"web-search", "audit"} })
	must(t, c.Discover(e.ctx))
	if qs, _ := e.store.GetQueuesByName(e.ctx, "failed-audit-events"); len(qs) != 0 {
		t.Fatalf("the target DLQ is watched before the topology cycle: it is outside the selection")
	}
	must(t, c.CycleTopology(e.ctx))

	mappings, err := e.store.EventSourceMappings(e.ctx)
	must(t, err)
	if len(mappings) != 1 {
		t.Fatalf("mappings = %+v, want the one on web-search", mappings)
	}
	m := mappings[0]
	if m.QueueARN != w.webARN || m.BatchSize != 10 || !m.ReportBatchItemFailures || m.MaximumConcurrency != 0 ||
		m.FunctionTimeoutSeconds != 30 || m.State != "Enabled" || !strings.HasSuffix(m.FunctionARN, ":function:web-search-worker") {
		t.Errorf("mapping = %+v", m)
	}
	targets, err := e.store.EventBridgeTargets(e.ctx)
	must(t, err)
	if len(targets) != 1 || targets[0].RuleARN != w.ruleARN || targets[0].BusName != "mcp" || targets[0].TargetARN != w.auditARN ||
		targets[0].DeadLetterARN != w.failedARN || targets[0].MaxEventAgeSeconds != 3600 || targets[0].MaxRetryAttempts != 3 || targets[0].RuleState != "ENABLED" {
		t.Errorf("targets = %+v", targets)
	}
	alarms, err := e.store.QueueAlarms(e.ctx)
	must(t, err)
	if len(alarms) != 1 || alarms[0].QueueName != "web-search-dlq" || alarms[0].MetricName != "ApproximateNumberOfMessagesVisible" {
		t.Errorf("alarms = %+v", alarms)
	}
	failed := e.queueNamed("failed-audit-events")
	if !failed.IsEventBridgeDeadLetterQueue() || failed.IsDeadLetterQueue() {
		t.Errorf("failed-audit-events: EventBridge DLQ %v, SQS DLQ %v", failed.IsEventBridgeDeadLetterQueue(), failed.IsDeadLetterQueue())
	}

	// An event larger than the audit queue's 1 KiB goes to the target's DLQ with EventBridge's
	// attributes; the collector samples it there as a dead-letter queue's message.
	e.putEvent(2000)
	e.putEvent(10)
	e.advance(time.Second)
	must(t, c.CycleAttributes(e.ctx))
	e.sim.ResetCallCounts()
	must(t, c.PeekDue(e.ctx))
	must(t, c.PollMoveTasks(e.ctx))
	s, err := e.store.LatestSample(e.ctx, failed.ID)
	if err != nil || s.Kind != store.SampleDeadLetter || s.Seen != 1 {
		t.Fatalf("sample of the target DLQ = %+v, %v; want a dead-letter sample of 1 message", s, err)
	}
	msgs, err := e.store.SampleMessages(e.ctx, s.ID, store.MessageFilter{})
	must(t, err)
	attrs := map[string]string{}
	for _, a := range msgs[0].Attributes {
		attrs[a.Name] = a.Value
	}
	if attrs["ERROR_CODE"] != "SDK_CLIENT_ERROR" || attrs["RULE_ARN"] != w.ruleARN || attrs["TARGET_ARN"] != w.auditARN || attrs["ERROR_MESSAGE"] == "" {
		t.Errorf("sampled attributes = %v", attrs)
	}
	if n := e.sim.CallCount("DeleteMessage") + e.sim.CallCount("StartMessageMoveTask"); n != 0 {
		t.Errorf("%d deletes or move tasks", n)
	}
	if snap := e.snapshot("failed-audit-events"); len(snap) != 1 || snap[0].InFlight {
		t.Errorf("after the peek the DLQ holds %+v; want its one message back, visible", snap)
	}
	if snap := e.snapshot("audit"); len(snap) != 1 || snap[0].ReceiveCount != 0 {
		t.Errorf("the target itself (a source, not opted in) = %+v; want one message never received", snap)
	}
	// An EventBridge DLQ has no move tasks to follow: ListMessageMoveTasks is for SQS DLQs.
	if n := e.sim.CallCount("ListMessageMoveTasks"); n != 1 {
		t.Errorf("ListMessageMoveTasks called %d times, want once (web-search-dlq only)", n)
	}

	// The loop's calls are in the sight, and priced: DescribeAlarms as CloudWatch requests,
	// the Lambda and EventBridge listings as free.
	st, err := e.store.OperationStatuses(e.ctx)
	must(t, err)
	var called []string
	for _, o := range st {
		if !o.LastSuccessAt.IsZero() {
			called = append(called, o.Operation)
		}
	}
	for _, op := range []string{"ListEventSourceMappings", "GetFunctionConfiguration", "ListEventBuses", "ListRules", "ListTargetsByRule", "DescribeAlarms"} {
		if !slices.Contains(called, op) {
			t.Errorf("%s is not in the sight: %v", op, called)
		}
	}
	cost, err := e.store.GetCostEstimate(e.ctx)
	must(t, err)
	// 1 page of the account's mappings + 1 function, 1 bus listing + 2 buses' rules + 1 rule's
	// targets; 1 alarm page.
	if cost.AlarmRequestsPerDay != 288 || cost.FreeRequestsPerDay != 288*6 {
		t.Errorf("cost: %v alarm requests, %v free requests a day; want 288 and %d", cost.AlarmRequestsPerDay, cost.FreeRequestsPerDay, 288*6)
	}
	// The alarm reads are the topology loop's cost, within CloudWatch's.
	for _, l := range cost.Loops {
		if l.Loop == store.RunTopology && !near(l.USD, 288.0/1000*USDPerThousandCloudWatchRequests) {
			t.Errorf("the topology loop costs $%v a day; want $%v", l.USD, 288.0/1000*USDPerThousandCloudWatchRequests)
		}
	}
}

// TestTopologyMappingsInPagesOfTheAccount: the event source mappings are listed for the whole
// account, a page of 100 at a time, so that their calls grow with the mappings and not with the
// queues: 150 watched queues, 120 of them drained by one function, take two pages. A mapping on
// a queue outside the selection is not stored.
func TestTopologyMappingsInPagesOfTheAccount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.fn.CreateFunction(e.ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("worker"), Role: aws.String("arn:aws:iam::000000000000:role/w"),
		Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Timeout: aws.Int32(30), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
	must(t, err)
	mapped := map[string]bool{}
	for i := range 150 {
		_, arn := e.createQueue(fmt.Sprintf("tc-%03d", i), nil)
		if i < 120 {
			_, err := e.fn.CreateEventSourceMapping(e.ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("worker"), EventSourceArn: aws.String(arn)})
			must(t, err)
			mapped[arn] = true
		}
	}
	_, outside := e.createQueue("other-team", nil)
	_, err = e.fn.CreateEventSourceMapping(e.ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("worker"), EventSourceArn: aws.String(outside)})
	must(t, err)
	c := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tc-"} })
	must(t, c.Discover(e.ctx))
	e.sim.ResetCallCounts()
	must(t, c.CycleTopology(e.ctx))
	if n := e.sim.CallCount("ListEventSourceMappings"); n != 2 {
		t.Errorf("ListEventSourceMappings calls = %d; want 2 pages for 121 mappings", n)
	}
	if n := e.sim.CallCount("GetFunctionConfiguration"); n != 1 {
		t.Errorf("GetFunctionConfiguration calls = %d; want 1 for the one function", n)
	}
	mappings, err := e.store.EventSourceMappings(e.ctx)
	must(t, err)
	stored := map[string]bool{}
	for _, m := range mappings {
		stored[m.QueueARN] = true
		if m.FunctionTimeoutSeconds != 30 {
			t.Errorf("mapping of %s: function timeout %d; want 30", m.QueueARN, m.FunctionTimeoutSeconds)
		}
	}
	if len(mappings) != 120 || !maps.Equal(stored, mapped) {
		t.Errorf("%d mappings stored, of %d queues; want the 120 of the watched queues", len(mappings), len(stored))
	}
}

// TestTopologyOff: --lambda=false and --eventbridge=false call neither service.
func TestTopologyOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topologyWorld()
	c := e.collector(func(o *Options) { o.DisableLambda, o.DisableEventBridge = true, true })
	must(t, c.Discover(e.ctx))
	e.sim.ResetCallCounts()
	must(t, c.CycleTopology(e.ctx))
	for op, n := range e.sim.CallCounts() {
		if op != "DescribeAlarms" {
			t.Errorf("%s called %d times with Lambda and EventBridge off", op, n)
		}
	}
}

// denyLambda answers every Lambda call as a policy without lambda:* permissions does, in
// REST-JSON's error shape, so that the stock client returns AWS's AccessDeniedException.
func denyLambda(sim http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/2015-03-31/") {
			sim.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "AccessDeniedException")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"Type":"User","message":"User: arn:aws:iam::123456789012:user/toolq is not authorized to perform: lambda:ListEventSourceMappings"}`)
	})
}

// TestTopologyDeniedLambdaIsSeen: a denied ListEventSourceMappings is in the sight with AWS's
// message, recorded once, not against every queue, and the mappings stored before stay.
func TestTopologyDeniedLambdaIsSeen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.topologyWorld()
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	must(t, c.CycleTopology(e.ctx))

	denied, err := awsconf.Load(e.ctx, inMemory(t, denyLambda(e.sim), awsconf.Options{Region: "us-east-1", StaticCredentials: true, MaxAttempts: 1}))
	must(t, err)
	c2 := e.collector(func(o *Options) { o.Regions[0].Lambda = denied.Lambda })
	must(t, c2.Discover(e.ctx))
	e.advance(time.Minute)
	must(t, c2.CycleTopology(e.ctx))
	must(t, c2.CycleTopology(e.ctx))

	var status store.OperationStatus
	st, err := e.store.OperationStatuses(e.ctx)
	must(t, err)
	for _, o := range st {
		if o.Operation == "ListEventSourceMappings" {
			status = o
		}
	}
	if !status.Failing() || status.FailureCode != "AccessDeniedException" || !strings.Contains(status.FailureMessage, "lambda:ListEventSourceMappings") {
		t.Errorf("ListEventSourceMappings status = %+v; want failing with AWS's denial", status)
	}
	errs := e.errors(0)
	denials := 0
	for _, er := range errs {
		if er.Operation == "ListEventSourceMappings" {
			denials++
			if er.QueueID != 0 {
				t.Errorf("the denial is recorded against queue %d: it is about the region", er.QueueID)
			}
		}
	}
	if denials != 1 {
		t.Errorf("%d denials recorded over two cycles of three queues, want 1", denials)
	}
	if mappings, _ := e.store.EventSourceMappings(e.ctx); len(mappings) != 1 {
		t.Errorf("mappings after the denial = %+v; the last reading stays", mappings)
	}
}
