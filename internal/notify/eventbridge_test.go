package notify_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/views"
)

// TestEventBridgeFailureReasons: events EventBridge could not deliver reach the target's DLQ
// with its failure attributes (ERROR_CODE, ERROR_MESSAGE, RULE_ARN, TARGET_ARN,
// RETRY_ATTEMPTS); a sample of that queue shows them as each message's reason and counts them.
func TestEventBridgeFailureReasons(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dlq, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("tool-events-dlq")})
	w.must(err)
	attrs, err := w.sqs.GetQueueAttributes(w.ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	w.must(err)
	eb := eventbridge.New(eventbridge.Options{Region: "us-east-1", BaseEndpoint: aws.String(w.simURL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	_, err = eb.PutRule(w.ctx, &eventbridge.PutRuleInput{Name: aws.String("tool-calls"), EventPattern: aws.String(`{"source":["mcp.tools"]}`)})
	w.must(err)
	_, err = eb.PutTargets(w.ctx, &eventbridge.PutTargetsInput{Rule: aws.String("tool-calls"), Targets: []ebtypes.Target{{
		Id: aws.String("worker"), Arn: aws.String("arn:aws:sqs:us-east-1:000000000000:deleted-queue"),
		DeadLetterConfig: &ebtypes.DeadLetterConfig{Arn: aws.String(attrs.Attributes["QueueArn"])}}}})
	w.must(err)
	for range 3 {
		_, err := eb.PutEvents(w.ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			Source: aws.String("mcp.tools"), DetailType: aws.String("ToolCallRequested"), Detail: aws.String(`{"toolName":"web_search"}`)}}})
		w.must(err)
	}
	// No RedrivePolicy names this DLQ, so it is sampled when opted in, as a source is.
	w.coll, err = collector.New(collector.Options{Regions: []collector.Region{{Name: "us-east-1", SQS: w.sqs}}, Store: w.store, Now: w.clock.Now,
		Backfill: -1, Dimensions: testDimensions, Peek: collector.PeekOptions{Sources: []string{"tool-events-dlq"}}})
	w.must(err)
	w.collect(true)
	key, err := w.views.ResolveQueue(w.ctx, "tool-events-dlq")
	w.must(err)
	page, err := w.views.Messages(w.ctx, key.ID, views.MessageQuery{})
	w.must(err)
	if len(page.Messages) != 3 {
		t.Fatalf("%d sampled messages; want 3", len(page.Messages))
	}
	for _, m := range page.Messages {
		r := m.Reason
		if r == nil || r.Source != "eventbridge" || r.Code != "NO_RESOURCE" || r.Message == "" ||
			r.RuleARN != "arn:aws:events:us-east-1:000000000000:rule/tool-calls" || r.TargetARN != "arn:aws:sqs:us-east-1:000000000000:deleted-queue" ||
			r.RetryAttempts == nil || *r.RetryAttempts != 0 {
			t.Errorf("%s: reason %+v", m.MessageID, r)
		}
	}
	tr, err := w.views.Triage(w.ctx, key.ID)
	w.must(err)
	if len(tr.Reasons) != 1 || tr.Reasons[0].Value != "NO_RESOURCE" || tr.Reasons[0].Count != 3 {
		t.Errorf("triage reasons = %+v", tr.Reasons)
	}
}
