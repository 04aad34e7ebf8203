package awscalls

// Operation is one AWS API operation toolq calls, with the IAM permission it needs and what
// toolq calls it for: what the status page lists for every region, called or not.
type Operation struct {
	Name       string // as the SDK and toolq_aws_calls_total name it: "GetQueueAttributes"
	Permission string // the IAM action: "sqs:GetQueueAttributes"
	Purpose    string // one line for the status page
	// Action is true for the operations only the actions make (an operator's redrive).
	Action bool
}

// Operations are every AWS operation toolq calls, in the order the status page lists them.
var Operations = []Operation{
	{Name: "ListQueues", Permission: "sqs:ListQueues", Purpose: "finds the watched queues"},
	{Name: "GetQueueUrl", Permission: "sqs:GetQueueUrl", Purpose: "finds queues named by --queue and the dead-letter queues of watched queues"},
	{Name: "GetQueueAttributes", Permission: "sqs:GetQueueAttributes", Purpose: "reads each queue's depth and configuration"},
	{Name: "ListDeadLetterSourceQueues", Permission: "sqs:ListDeadLetterSourceQueues", Purpose: "checks which queues send their failures to a dead-letter queue"},
	{Name: "ListMessageMoveTasks", Permission: "sqs:ListMessageMoveTasks", Purpose: "follows the redrives of dead-letter queues"},
	{Name: "GetMetricData", Permission: "cloudwatch:GetMetricData", Purpose: "reads the AWS/SQS metrics attributes cannot give (oldest message age, sends, receives)"},
	{Name: "ListEventSourceMappings", Permission: "lambda:ListEventSourceMappings", Purpose: "finds the Lambda functions that drain each queue (--lambda=false: not called)"},
	{Name: "GetFunctionConfiguration", Permission: "lambda:GetFunctionConfiguration", Purpose: "reads each consuming function's timeout, against the queue's visibility timeout"},
	{Name: "ListEventBuses", Permission: "events:ListEventBuses", Purpose: "finds the EventBridge buses whose rules feed queues (--eventbridge=false: not called)"},
	{Name: "ListRules", Permission: "events:ListRules", Purpose: "lists each bus's rules"},
	{Name: "ListTargetsByRule", Permission: "events:ListTargetsByRule", Purpose: "finds the queues each rule delivers to and its targets' dead-letter queues"},
	{Name: "DescribeAlarms", Permission: "cloudwatch:DescribeAlarms", Purpose: "finds the CloudWatch alarms on each queue (a dead-letter queue without one goes unnoticed)"},
	{Name: "ReceiveMessage", Permission: "sqs:ReceiveMessage", Purpose: "samples the messages of dead-letter queues and opted-in sources"},
	{Name: "ChangeMessageVisibilityBatch", Permission: "sqs:ChangeMessageVisibility", Purpose: "hands sampled messages back at once"},
	{Name: "GetCallerIdentity", Permission: "sts:AssumeRole", Purpose: "checks, with --account, that the role can be assumed (sts:AssumeRole on it, and its trust policy) and reaches its account"},
	{Name: "StartMessageMoveTask", Permission: "sqs:StartMessageMoveTask", Purpose: "starts an operator's redrive", Action: true},
	{Name: "CancelMessageMoveTask", Permission: "sqs:CancelMessageMoveTask", Purpose: "cancels an operator's redrive", Action: true},
	// A selective redrive, a discard and a restore (the selection engine) receive from the
	// dead-letter queue with sqs:ReceiveMessage and hold and release with
	// sqs:ChangeMessageVisibility, listed above, and besides:
	{Name: "SendMessageBatch", Permission: "sqs:SendMessage", Purpose: "sends the chosen calls of a selective redrive or a restore to their queue", Action: true},
	{Name: "DeleteMessageBatch", Permission: "sqs:DeleteMessage", Purpose: "deletes a chosen call from the dead-letter queue once it was sent, or stored whole in the archive", Action: true},
}

// Permission returns the IAM action an operation needs, or "" for one toolq does not call.
func Permission(operation string) string {
	for _, op := range Operations {
		if op.Name == operation {
			return op.Permission
		}
	}
	return ""
}
