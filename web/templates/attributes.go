package templates

import (
	"sort"
	"strconv"
	"time"
)

// attributeHelp explains each queue attribute in one line, for people who don't know SQS by heart.
var attributeHelp = map[string]string{
	"ApproximateNumberOfMessages":           "messages waiting to be received",
	"ApproximateNumberOfMessagesNotVisible": "messages received and not yet deleted (in flight)",
	"ApproximateNumberOfMessagesDelayed":    "messages sent with a delay, not yet receivable",
	"CreatedTimestamp":                      "when the queue was created",
	"LastModifiedTimestamp":                 "when the queue's attributes last changed",
	"DelaySeconds":                          "how long every new message stays hidden before it can be received",
	"MaximumMessageSize":                    "the largest message body the queue accepts, in bytes",
	"MessageRetentionPeriod":                "how long a message is kept before SQS deletes it",
	"ReceiveMessageWaitTimeSeconds":         "how long a receive waits for messages (0 = short polling, 20 = long polling)",
	"VisibilityTimeout":                     "how long a received message stays hidden from other consumers",
	"QueueArn":                              "the queue's Amazon Resource Name",
	"Policy":                                "who may use the queue (IAM resource policy)",
	"RedrivePolicy":                         "where failed messages go (the DLQ) and after how many receives",
	"RedriveAllowPolicy":                    "which source queues may use this queue as their DLQ",
	"SqsManagedSseEnabled":                  "messages encrypted at rest with SQS-owned keys",
	"KmsMasterKeyId":                        "the KMS key that encrypts messages at rest",
	"KmsDataKeyReusePeriodSeconds":          "how long SQS reuses a data key before asking KMS again",
	"FifoQueue":                             "strict order within a message group, exactly-once processing",
	"ContentBasedDeduplication":             "deduplicate by a hash of the body when no deduplication id is given",
	"DeduplicationScope":                    "whether duplicates are detected per queue or per message group",
	"FifoThroughputLimit":                   "whether the throughput quota applies per queue or per message group",
}

// secondsAttributes hold durations in seconds and read better as one.
var secondsAttributes = map[string]bool{
	"DelaySeconds": true, "MessageRetentionPeriod": true, "ReceiveMessageWaitTimeSeconds": true,
	"VisibilityTimeout": true, "KmsDataKeyReusePeriodSeconds": true,
}

// epochAttributes hold Unix times in seconds, which nobody reads at a glance.
var epochAttributes = map[string]bool{"CreatedTimestamp": true, "LastModifiedTimestamp": true}

// AttributeRow is one queue attribute as the queue page shows it.
type AttributeRow struct {
	Name  string
	Value string
	// Reading is the value made readable ("30 s" for VisibilityTimeout=30, a UTC time for
	// CreatedTimestamp); empty when the raw value says it best.
	Reading string
	Help    string
}

// AttributeRows returns a queue's attributes sorted by name, each with its explanation.
func AttributeRows(attrs map[string]string) []AttributeRow {
	rows := make([]AttributeRow, 0, len(attrs))
	for name, value := range attrs {
		r := AttributeRow{Name: name, Value: value, Help: attributeHelp[name]}
		if secondsAttributes[name] {
			if n, err := strconv.ParseFloat(value, 64); err == nil {
				r.Reading = Duration(n)
			}
		}
		if epochAttributes[name] {
			if n, err := strconv.ParseInt(value, 10, 64); err == nil && n > 0 {
				r.Reading = ClockYear(time.Unix(n, 0))
			}
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows
}
