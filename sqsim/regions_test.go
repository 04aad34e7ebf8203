package sqsim

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// regionClients are stock clients signing for one region.
func (h *harness) regionClients(region string) (*sqs.Client, *cloudwatch.Client, *lambda.Client) {
	cfg := aws.Config{Region: region, Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1}
	endpoint := aws.String(h.url)
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = endpoint }),
		cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = endpoint }),
		lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = endpoint })
}

// TestRegions: one simulator serves every region, each its own world, by
// the region each client signs for, as AWS serves them by host: a queue,
// its messages, an alarm and a function of one region are not seen from
// another, ARNs name the region, and the clock moves them all.
func TestRegions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	usSQS, usCW, _ := h.regionClients("us-east-1")
	euSQS, euCW, euLambda := h.regionClients("eu-west-1")

	var urls [2]string
	for i, c := range []*sqs.Client{usSQS, euSQS} {
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("calls"), Attributes: map[string]string{"DelaySeconds": "5"}})
		if err != nil {
			t.Fatal(err)
		}
		urls[i] = aws.ToString(out.QueueUrl)
	}
	if _, err := euSQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls[1]), MessageBody: aws.String("in Ireland")}); err != nil {
		t.Fatal(err)
	}
	attrs, err := euSQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(urls[1]), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil || attrs.Attributes["QueueArn"] != "arn:aws:sqs:eu-west-1:000000000000:calls" {
		t.Errorf("QueueArn in eu-west-1 = %v, %v", attrs, err)
	}
	// The clock moves every region: the message's delay ends.
	h.advance(5 * time.Second)
	for i, c := range []*sqs.Client{usSQS, euSQS} {
		out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(urls[i]), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"", "in Ireland"}[i]; strings.Join(bodies(out.Messages), ",") != want {
			t.Errorf("region %d received %q, want %q", i, bodies(out.Messages), want)
		}
	}
	if snap, _ := h.sim.Region("eu-west-1").Snapshot("calls"); len(snap) != 1 {
		t.Errorf("eu-west-1's calls holds %d messages, want 1", len(snap))
	}

	if _, err := euCW.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("dlq"), Namespace: aws.String("AWS/SQS"),
		MetricName: aws.String("ApproximateNumberOfMessagesVisible"), Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(60),
		EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold}); err != nil {
		t.Fatal(err)
	}
	for region, c := range map[string]*cloudwatch.Client{"us-east-1": usCW, "eu-west-1": euCW} {
		out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
		if err != nil {
			t.Fatal(err)
		}
		if n := map[string]int{"us-east-1": 0, "eu-west-1": 1}[region]; len(out.MetricAlarms) != n {
			t.Errorf("%s has %d alarms, want %d", region, len(out.MetricAlarms), n)
		}
	}
	fn, err := euLambda.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("worker"), Role: aws.String("arn:aws:iam::000000000000:role/w"),
		Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
	if err != nil || aws.ToString(fn.FunctionArn) != "arn:aws:lambda:eu-west-1:000000000000:function:worker" {
		t.Errorf("CreateFunction in eu-west-1 = %v, %v", fn, err)
	}
	if h.sim.CallCount("CreateQueue") != 2 {
		t.Errorf("CreateQueue counted %d times across regions, want 2", h.sim.CallCount("CreateQueue"))
	}

	// A signature scoped to no region is refused, in the protocol's shape.
	bad, _, _ := h.regionClients("euwest1")
	_, err = bad.ListQueues(ctx, &sqs.ListQueuesInput{})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "SignatureDoesNotMatch" || !strings.HasPrefix(api.ErrorMessage(), "Credential should be scoped to a valid region") {
		t.Errorf("a made-up region: %v, want SignatureDoesNotMatch", err)
	}
	if h.sim.Region("euwest1") != nil {
		t.Error("Region made a simulator for a made-up region")
	}
	// Made-up regions cannot grow the simulator without end.
	made := 0
	for i := range 2 * maxRegions {
		if h.sim.Region(fmt.Sprintf("xx-test-%d", i)) != nil {
			made++
		}
	}
	if made+2 != maxRegions {
		t.Errorf("%d regions made beside the two in use, want %d", made, maxRegions-2)
	}
}

// TestPartitions: ARNs name the partition of their region (aws-cn in China, aws-us-gov in
// GovCloud), and the simulator finds its resources by them: a RedrivePolicy's target, an
// event source mapping's queue.
func TestPartitions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	for region, partition := range map[string]string{"cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov", "eu-west-1": "aws"} {
		t.Run(region, func(t *testing.T) {
			c, cw, lam := h.regionClients(region)
			out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")})
			if err != nil {
				t.Fatal(err)
			}
			dlqARN := "arn:" + partition + ":sqs:" + region + ":000000000000:dlq"
			attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{"QueueArn"}})
			if err != nil || attrs.Attributes["QueueArn"] != dlqARN {
				t.Errorf("QueueArn = %v, %v; want %s", attrs, err, dlqARN)
			}
			if _, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("calls"),
				Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`}}); err != nil {
				t.Errorf("a RedrivePolicy naming the DLQ by its ARN: %v", err)
			}
			if _, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("dlq"), Namespace: aws.String("AWS/SQS"),
				MetricName: aws.String("ApproximateNumberOfMessagesVisible"), Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(60),
				EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold}); err != nil {
				t.Fatal(err)
			}
			alarms, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
			if want := "arn:" + partition + ":cloudwatch:" + region + ":000000000000:alarm:dlq"; err != nil || len(alarms.MetricAlarms) != 1 || aws.ToString(alarms.MetricAlarms[0].AlarmArn) != want {
				t.Errorf("DescribeAlarms = %v, %v; want %s", alarms, err, want)
			}
			fn, err := lam.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("worker"), Role: aws.String("arn:" + partition + ":iam::000000000000:role/w"),
				Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")}})
			if want := "arn:" + partition + ":lambda:" + region + ":000000000000:function:worker"; err != nil || aws.ToString(fn.FunctionArn) != want {
				t.Errorf("CreateFunction = %v, %v; want %s", fn, err, want)
			}
			if _, err := lam.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("worker"), EventSourceArn: aws.String(dlqARN)}); err != nil {
				t.Errorf("an event source mapping of the DLQ by its ARN: %v", err)
			}
		})
	}
}

// TestIDsFromSeed: without a seed, every simulator hands out ids of its own, as AWS's are
// unique (a consumer that remembers processed ids must not take a fresh simulator's messages
// for old ones); with one, the same ids every run, for tests.
func TestIDsFromSeed(t *testing.T) {
	t.Parallel()
	// firstIDs are the message id, receipt handle and move task handle a fresh simulator
	// gives first.
	firstIDs := func(seed int64) [3]string {
		sim := New(Options{Seed: seed})
		srv := httptest.NewServer(sim)
		defer srv.Close()
		h := &harness{sim: sim, url: srv.URL}
		h.sqs, h.cw = newClients(srv.URL)
		q := h.createQueue(t, "dlq", nil)
		h.createQueue(t, "calls", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + h.queueARN(t, q) + `","maxReceiveCount":3}`})
		id := aws.ToString(h.send(t, q, "x").MessageId)
		receipt := aws.ToString(h.receive(t, q, 1)[0].ReceiptHandle)
		task, err := h.sqs.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(h.queueARN(t, q))})
		if err != nil {
			t.Fatal(err)
		}
		return [3]string{id, receipt, aws.ToString(task.TaskHandle)}
	}
	a, b := firstIDs(0), firstIDs(0)
	for i, what := range []string{"message id", "receipt handle", "task handle"} {
		if a[i] == b[i] {
			t.Errorf("two unseeded simulators gave the same first %s %s", what, a[i])
		}
	}
	if a[0] == "21e73364-d554-4975-939c-ea13e54d7dfa" {
		t.Errorf("an unseeded simulator gave seed 1's first message id")
	}
	if x, y := firstIDs(7), firstIDs(7); x != y {
		t.Errorf("two simulators of seed 7 gave %v and %v", x, y)
	}
}
