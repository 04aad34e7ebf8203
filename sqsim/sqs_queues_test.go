package sqsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func TestCreateQueue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		queue    string
		attrs    map[string]string
		wantCode string // empty: success
	}{
		{name: "standard", queue: "tool-calls"},
		{name: "fifo", queue: "sessions.fifo", attrs: map[string]string{"FifoQueue": "true"}},
		{name: "fifo suffix without attribute", queue: "sessions.fifo", wantCode: "InvalidParameterValue"},
		{name: "fifo attribute without suffix", queue: "sessions", attrs: map[string]string{"FifoQueue": "true"}, wantCode: "InvalidParameterValue"},
		{name: "bad characters", queue: "tool calls!", wantCode: "InvalidParameterValue"},
		{name: "too long", queue: strings.Repeat("q", 81), wantCode: "InvalidParameterValue"},
		{name: "visibility out of range", queue: "q", attrs: map[string]string{"VisibilityTimeout": "43201"}, wantCode: "InvalidAttributeValue"},
		{name: "retention out of range", queue: "q", attrs: map[string]string{"MessageRetentionPeriod": "59"}, wantCode: "InvalidAttributeValue"},
		{name: "unknown attribute", queue: "q", attrs: map[string]string{"Colour": "blue"}, wantCode: "InvalidAttributeName"},
		{name: "fifo attribute on standard", queue: "q", attrs: map[string]string{"ContentBasedDeduplication": "true"}, wantCode: "InvalidAttributeName"},
		{name: "high throughput needs group scope", queue: "h.fifo", attrs: map[string]string{"FifoQueue": "true", "FifoThroughputLimit": "perMessageGroupId"}, wantCode: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			_, err := h.sqs.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(tt.queue), Attributes: tt.attrs})
			if tt.wantCode == "" {
				if err != nil {
					t.Fatalf("CreateQueue: %v", err)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.wantCode {
				t.Fatalf("CreateQueue error = %v, want code %s", err, tt.wantCode)
			}
		})
	}
}

func TestCreateQueueIsIdempotent(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", map[string]string{"VisibilityTimeout": "60"})
	again := h.createQueue(t, "q", map[string]string{"VisibilityTimeout": "60"})
	if again != url {
		t.Errorf("second CreateQueue url = %s, want %s", again, url)
	}
	_, err := h.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"VisibilityTimeout": "61"}})
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) || exists.ErrorCode() != "QueueAlreadyExists" {
		t.Fatalf("CreateQueue with other attributes: %v, want QueueNameExists with code QueueAlreadyExists", err)
	}
	// SQS names the attribute, not the queue.
	if want := "A queue already exists with the same name and a different value for attribute VisibilityTimeout"; exists.ErrorMessage() != want {
		t.Errorf("message %q, want %q", exists.ErrorMessage(), want)
	}
}

func TestDeleteQueueThenRecreate(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", nil)
	if _, err := h.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	_, err := h.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("q")})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("GetQueueUrl after delete: %v, want QueueDoesNotExist", err)
	}
	if missing.ErrorCode() != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("ErrorCode = %s", missing.ErrorCode())
	}
	_, err = h.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	var recently *types.QueueDeletedRecently
	if !errors.As(err, &recently) {
		t.Fatalf("CreateQueue within 60 s of delete: %v, want QueueDeletedRecently", err)
	}
	h.advance(time.Minute)
	h.createQueue(t, "q", nil)
}

func TestListQueues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	for i := range 5 {
		h.createQueue(t, fmt.Sprintf("calls-%d", i), nil)
	}
	h.createQueue(t, "other", nil)

	t.Run("prefix without MaxResults", func(t *testing.T) {
		out, err := h.sqs.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("calls-")})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.QueueUrls) != 5 || out.NextToken != nil {
			t.Fatalf("got %d urls, token %v; want 5 and none", len(out.QueueUrls), out.NextToken)
		}
	})
	t.Run("pages", func(t *testing.T) {
		var got []string
		p := sqs.NewListQueuesPaginator(h.sqs, &sqs.ListQueuesInput{MaxResults: aws.Int32(2)})
		pages := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			got = append(got, out.QueueUrls...)
		}
		if len(got) != 6 || pages != 3 {
			t.Fatalf("got %d urls in %d pages, want 6 in 3", len(got), pages)
		}
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != 6 {
			t.Errorf("urls not sorted and distinct: %v", got)
		}
	})
	t.Run("MaxResults out of range", func(t *testing.T) {
		_, err := h.sqs.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1001)})
		var apiErr smithy.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
			t.Fatalf("err = %v, want InvalidParameterValue", err)
		}
	})
}

func TestQueueAttributes(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", map[string]string{"DelaySeconds": "5", "ReceiveMessageWaitTimeSeconds": "20"})
	attrs := h.attributes(t, url)
	want := map[string]string{
		"QueueArn":                              "arn:aws:sqs:us-east-1:000000000000:q",
		"ApproximateNumberOfMessages":           "0",
		"ApproximateNumberOfMessagesNotVisible": "0",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"CreatedTimestamp":                      fmt.Sprint(t0.Unix()),
		"LastModifiedTimestamp":                 fmt.Sprint(t0.Unix()),
		"VisibilityTimeout":                     "30",
		"MaximumMessageSize":                    "1048576",
		"MessageRetentionPeriod":                "345600",
		"DelaySeconds":                          "5",
		"ReceiveMessageWaitTimeSeconds":         "20",
		"SqsManagedSseEnabled":                  "true",
	}
	for k, v := range want {
		if attrs[k] != v {
			t.Errorf("%s = %q, want %q", k, attrs[k], v)
		}
	}
	if _, ok := attrs["FifoQueue"]; ok {
		t.Error("standard queue reports FifoQueue")
	}

	h.advance(time.Minute)
	_, err := h.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{"VisibilityTimeout": "90"}})
	if err != nil {
		t.Fatal(err)
	}
	attrs = h.attributes(t, url)
	if attrs["VisibilityTimeout"] != "90" || attrs["LastModifiedTimestamp"] != fmt.Sprint(t0.Add(time.Minute).Unix()) {
		t.Errorf("after SetQueueAttributes: VisibilityTimeout %s, LastModifiedTimestamp %s", attrs["VisibilityTimeout"], attrs["LastModifiedTimestamp"])
	}

	_, err = h.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"Colour"}})
	var badName *types.InvalidAttributeName
	if !errors.As(err, &badName) {
		t.Errorf("unknown attribute name: %v, want InvalidAttributeName", err)
	}

	fifo := h.createQueue(t, "f.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"})
	attrs = h.attributes(t, fifo)
	for k, v := range map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "DeduplicationScope": "queue", "FifoThroughputLimit": "perQueue"} {
		if attrs[k] != v {
			t.Errorf("fifo %s = %q, want %q", k, attrs[k], v)
		}
	}
}

func TestRedrivePolicyValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	src := h.createQueue(t, "src", nil)
	dlq := h.createQueue(t, "dlq", nil)
	fifoSrc := h.createQueue(t, "src.fifo", map[string]string{"FifoQueue": "true"})
	fifoDLQ := h.createQueue(t, "dlq.fifo", map[string]string{"FifoQueue": "true"})
	dlqARN, fifoDLQARN := h.queueARN(t, dlq), h.queueARN(t, fifoDLQ)
	tests := []struct {
		name     string
		queue    string
		policy   string
		wantCode string
		wantMsg  string
	}{
		{name: "number count", queue: src, policy: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`},
		{name: "string count", queue: src, policy: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"5"}`},
		{name: "fifo to fifo", queue: fifoSrc, policy: `{"deadLetterTargetArn":"` + fifoDLQARN + `","maxReceiveCount":2}`},
		{name: "fifo to standard", queue: fifoSrc, policy: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":2}`,
			wantCode: "InvalidParameterValue", wantMsg: "Value {\"deadLetterTargetArn\":\"" + dlqARN + "\",\"maxReceiveCount\":2} for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of queue as the source.."},
		{name: "standard to fifo", queue: src, policy: `{"deadLetterTargetArn":"` + fifoDLQARN + `","maxReceiveCount":2}`,
			wantCode: "InvalidParameterValue", wantMsg: "Value {\"deadLetterTargetArn\":\"" + fifoDLQARN + "\",\"maxReceiveCount\":2} for parameter RedrivePolicy is invalid. Reason: Dead-letter queue must be same type of queue as the source.."},
		{name: "missing dlq", queue: src, policy: `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":2}`, wantCode: "InvalidParameterValue"},
		{name: "count zero", queue: src, policy: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":0}`, wantCode: "InvalidParameterValue"},
		{name: "count too high", queue: src, policy: `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":1001}`, wantCode: "InvalidParameterValue"},
		{name: "not json", queue: src, policy: `{deadLetterTargetArn`, wantCode: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.sqs.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(tt.queue), Attributes: map[string]string{"RedrivePolicy": tt.policy}})
			if tt.wantCode == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.wantCode {
				t.Fatalf("err = %v, want %s", err, tt.wantCode)
			}
			if tt.wantMsg != "" && apiErr.ErrorMessage() != tt.wantMsg {
				t.Errorf("message = %q, want %q", apiErr.ErrorMessage(), tt.wantMsg)
			}
		})
	}
	out, err := h.sqs.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(dlq)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.QueueUrls, []string{src}) {
		t.Errorf("ListDeadLetterSourceQueues = %v, want [%s]", out.QueueUrls, src)
	}
	if got := h.attributes(t, src)["RedrivePolicy"]; got != `{"deadLetterTargetArn":"`+dlqARN+`","maxReceiveCount":5}` {
		t.Errorf("RedrivePolicy = %s", got)
	}
}

func TestQueueTags(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	out, err := h.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q"), Tags: map[string]string{"team": "tools"}})
	if err != nil {
		t.Fatal(err)
	}
	url := out.QueueUrl
	if _, err := h.sqs.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: url, Tags: map[string]string{"env": "demo"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sqs.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: url, TagKeys: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := h.sqs.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: url})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.Tags) != 1 || tags.Tags["env"] != "demo" {
		t.Errorf("tags = %v, want env=demo", tags.Tags)
	}
}

func TestPurgeQueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", nil)
	h.send(t, url, "a")
	h.send(t, url, "b")
	if _, err := h.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	if got := h.attributes(t, url)["ApproximateNumberOfMessages"]; got != "0" {
		t.Errorf("after purge %s messages", got)
	}
	_, err := h.sqs.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(url)})
	var inProgress *types.PurgeQueueInProgress
	if !errors.As(err, &inProgress) {
		t.Errorf("second purge within 60 s: %v, want PurgeQueueInProgress", err)
	}
}
