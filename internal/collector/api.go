package collector

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
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

// CloudWatchAPI is the part of *cloudwatch.Client the collector calls: metrics, and the alarms
// on the queues' metrics.
type CloudWatchAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// LambdaAPI is the part of *lambda.Client the collector calls: listings only, it changes no
// mapping or function.
type LambdaAPI interface {
	ListEventSourceMappings(ctx context.Context, in *lambda.ListEventSourceMappingsInput, optFns ...func(*lambda.Options)) (*lambda.ListEventSourceMappingsOutput, error)
	GetFunctionConfiguration(ctx context.Context, in *lambda.GetFunctionConfigurationInput, optFns ...func(*lambda.Options)) (*lambda.GetFunctionConfigurationOutput, error)
}

// EventBridgeAPI is the part of *eventbridge.Client the collector calls: listings only, it
// puts no event and changes no rule.
type EventBridgeAPI interface {
	ListEventBuses(ctx context.Context, in *eventbridge.ListEventBusesInput, optFns ...func(*eventbridge.Options)) (*eventbridge.ListEventBusesOutput, error)
	ListRules(ctx context.Context, in *eventbridge.ListRulesInput, optFns ...func(*eventbridge.Options)) (*eventbridge.ListRulesOutput, error)
	ListTargetsByRule(ctx context.Context, in *eventbridge.ListTargetsByRuleInput, optFns ...func(*eventbridge.Options)) (*eventbridge.ListTargetsByRuleOutput, error)
}

// Compile-time checks that the stock clients satisfy the interfaces.
var (
	_ SQSAPI         = (*sqs.Client)(nil)
	_ CloudWatchAPI  = (*cloudwatch.Client)(nil)
	_ LambdaAPI      = (*lambda.Client)(nil)
	_ EventBridgeAPI = (*eventbridge.Client)(nil)
	_ STSAPI         = (*sts.Client)(nil)
)

// STSAPI is the part of *sts.Client the collector calls: which account its credentials reach.
type STSAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

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
	opDescribeAlarms               = "DescribeAlarms"
	opListEventSourceMappings      = "ListEventSourceMappings"
	opGetFunctionConfiguration     = "GetFunctionConfiguration"
	opListEventBuses               = "ListEventBuses"
	opListRules                    = "ListRules"
	opListTargetsByRule            = "ListTargetsByRule"
	opGetCallerIdentity            = "GetCallerIdentity"
)
