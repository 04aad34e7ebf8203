package collector

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SQSAPI is the part of *sqs.Client the collector calls. It has no DeleteMessage, SendMessage
// or PurgeQueue on purpose: the collector cannot destroy or re-send a customer's message, and
// the type system says so. ChangeMessageVisibilityBatch only hands sampled messages back.
type SQSAPI interface {
	ListQueues(ctx context.Context, in *sqs.ListQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListQueuesOutput, error)
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
	ListDeadLetterSourceQueues(ctx context.Context, in *sqs.ListDeadLetterSourceQueuesInput, optFns ...func(*sqs.Options)) (*sqs.ListDeadLetterSourceQueuesOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	ChangeMessageVisibilityBatch(ctx context.Context, in *sqs.ChangeMessageVisibilityBatchInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityBatchOutput, error)
	ListMessageMoveTasks(ctx context.Context, in *sqs.ListMessageMoveTasksInput, optFns ...func(*sqs.Options)) (*sqs.ListMessageMoveTasksOutput, error)
}

// CloudWatchAPI is the part of *cloudwatch.Client the collector calls.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// Compile-time checks that the stock clients satisfy the interfaces.
var (
	_ SQSAPI        = (*sqs.Client)(nil)
	_ CloudWatchAPI = (*cloudwatch.Client)(nil)
)

// AWS operation names, as used in errors, metrics and call counts.
const (
	opListQueues                   = "ListQueues"
	opGetQueueURL                  = "GetQueueUrl"
	opGetQueueAttributes           = "GetQueueAttributes"
	opListDeadLetterSourceQueues   = "ListDeadLetterSourceQueues"
	opReceiveMessage               = "ReceiveMessage"
	opChangeMessageVisibilityBatch = "ChangeMessageVisibilityBatch"
	opListMessageMoveTasks         = "ListMessageMoveTasks"
	opGetMetricData                = "GetMetricData"
)
