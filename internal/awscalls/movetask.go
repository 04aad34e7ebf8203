package awscalls

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// Bounds on the text fields of a move task as SQS lists it: an endpoint other than AWS can send
// anything there.
const (
	maxTaskHandle = 1024
	maxTaskStatus = 32
	maxTaskARN    = 256
)

// MoveTask converts one ListMessageMoveTasks entry of the dead-letter queue queueID (whose ARN
// is sourceARN) into the stored task, with every text field bounded and made safe. The start
// time is kept to the millisecond SQS gives: (source, start) identifies a task, since SQS lists
// the handle only while it runs. The collector's polls and the actions' checks both use it.
func MoveTask(queueID int64, sourceARN string, e types.ListMessageMoveTasksResultEntry, now time.Time) store.MoveTask {
	t := store.MoveTask{
		QueueID:        queueID,
		TaskHandle:     safetext.Store(aws.ToString(e.TaskHandle), maxTaskHandle),
		Status:         store.MoveTaskStatus(safetext.Line(aws.ToString(e.Status), maxTaskStatus)),
		SourceARN:      safetext.Store(aws.ToString(e.SourceArn), maxTaskARN),
		DestinationARN: safetext.Store(aws.ToString(e.DestinationArn), maxTaskARN),
		MaxPerSecond:   int(aws.ToInt32(e.MaxNumberOfMessagesPerSecond)),
		Moved:          e.ApproximateNumberOfMessagesMoved,
		ToMove:         aws.ToInt64(e.ApproximateNumberOfMessagesToMove),
		FailureReason:  safetext.Store(aws.ToString(e.FailureReason), MaxMessage),
		StartedAt:      time.UnixMilli(e.StartedTimestamp).UTC(),
		UpdatedAt:      now.UTC(),
	}
	if t.SourceARN == "" {
		t.SourceARN = sourceARN
	}
	return t
}
