package sqsim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Queue attribute names, as the API spells them.
const (
	attrAll                                   = "All"
	attrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	attrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	attrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
	attrCreatedTimestamp                      = "CreatedTimestamp"
	attrLastModifiedTimestamp                 = "LastModifiedTimestamp"
	attrDelaySeconds                          = "DelaySeconds"
	attrMaximumMessageSize                    = "MaximumMessageSize"
	attrMessageRetentionPeriod                = "MessageRetentionPeriod"
	attrReceiveMessageWaitTimeSeconds         = "ReceiveMessageWaitTimeSeconds"
	attrVisibilityTimeout                     = "VisibilityTimeout"
	attrQueueArn                              = "QueueArn"
	attrPolicy                                = "Policy"
	attrRedrivePolicy                         = "RedrivePolicy"
	attrRedriveAllowPolicy                    = "RedriveAllowPolicy"
	attrSqsManagedSseEnabled                  = "SqsManagedSseEnabled"
	attrKmsMasterKeyID                        = "KmsMasterKeyId"
	attrKmsDataKeyReusePeriodSeconds          = "KmsDataKeyReusePeriodSeconds"
	attrFifoQueue                             = "FifoQueue"
	attrContentBasedDeduplication             = "ContentBasedDeduplication"
	attrDeduplicationScope                    = "DeduplicationScope"
	attrFifoThroughputLimit                   = "FifoThroughputLimit"
)

// readableAttributes lists, in AWS's order, every attribute
// GetQueueAttributes can return.
var readableAttributes = []string{
	attrQueueArn, attrApproximateNumberOfMessages, attrApproximateNumberOfMessagesNotVisible,
	attrApproximateNumberOfMessagesDelayed, attrCreatedTimestamp, attrLastModifiedTimestamp,
	attrVisibilityTimeout, attrMaximumMessageSize, attrMessageRetentionPeriod, attrDelaySeconds,
	attrReceiveMessageWaitTimeSeconds, attrPolicy, attrRedrivePolicy, attrRedriveAllowPolicy,
	attrSqsManagedSseEnabled, attrKmsMasterKeyID, attrKmsDataKeyReusePeriodSeconds,
	attrFifoQueue, attrContentBasedDeduplication, attrDeduplicationScope, attrFifoThroughputLimit,
}

// fifoOnlyAttributes may be set on, and are returned for, FIFO queues only.
var fifoOnlyAttributes = []string{attrFifoQueue, attrContentBasedDeduplication, attrDeduplicationScope, attrFifoThroughputLimit}

// Limits and defaults of the settable attributes, from the SQS API reference.
const (
	defaultMaximumMessageSize     = 1 << 20 // 1 MiB
	minMaximumMessageSize         = 1024
	maxMaximumMessageSize         = 1 << 20
	defaultMessageRetentionPeriod = 345600 // 4 days
	minMessageRetentionPeriod     = 60
	maxMessageRetentionPeriod     = 1209600 // 14 days
	maxDelaySeconds               = 900
	maxReceiveWaitTimeSeconds     = 20
	defaultVisibilityTimeout      = 30
	maxVisibilityTimeout          = 43200 // 12 hours
	maxMaxReceiveCount            = 1000
)

// queueAttributes holds a queue's settable attributes, validated.
type queueAttributes struct {
	delaySeconds                  int
	maximumMessageSize            int
	messageRetentionPeriod        int
	receiveMessageWaitTimeSeconds int
	visibilityTimeout             int
	policy                        string
	redrive                       *redrivePolicy
	redriveAllow                  *redriveAllowPolicy
	sqsManagedSseEnabled          bool
	kmsMasterKeyID                string
	kmsDataKeyReusePeriodSeconds  int
	fifo                          bool
	contentBasedDeduplication     bool
	deduplicationScope            string // "queue" or "messageGroup"
	fifoThroughputLimit           string // "perQueue" or "perMessageGroupId"
}

func defaultQueueAttributes(fifo bool) queueAttributes {
	a := queueAttributes{
		maximumMessageSize:           defaultMaximumMessageSize,
		messageRetentionPeriod:       defaultMessageRetentionPeriod,
		visibilityTimeout:            defaultVisibilityTimeout,
		sqsManagedSseEnabled:         true,
		kmsDataKeyReusePeriodSeconds: 300,
		fifo:                         fifo,
	}
	if fifo {
		a.deduplicationScope = "queue"
		a.fifoThroughputLimit = "perQueue"
	}
	return a
}

// redrivePolicy is a source queue's RedrivePolicy.
type redrivePolicy struct {
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	MaxReceiveCount     int    `json:"maxReceiveCount"`
}

// redriveAllowPolicy is a dead-letter queue's RedriveAllowPolicy.
type redriveAllowPolicy struct {
	RedrivePermission string   `json:"redrivePermission"`
	SourceQueueArns   []string `json:"sourceQueueArns,omitempty"`
}

// allows reports whether the queue with ARN source may name this queue as
// its dead-letter queue.
func (p *redriveAllowPolicy) allows(source string) bool {
	if p == nil {
		return true
	}
	switch p.RedrivePermission {
	case "denyAll":
		return false
	case "byQueue":
		return slices.Contains(p.SourceQueueArns, source)
	default:
		return true
	}
}

// setAttributes validates attrs and applies them to a. It changes nothing
// when it fails. creating allows FifoQueue, which only CreateQueue may set.
// s.mu must be held: the redrive policy is checked against other queues.
func (s *Simulator) setAttributes(a *queueAttributes, queueName string, attrs map[string]string, creating bool) *apiError {
	next := *a
	// Attributes are applied in name order so that errors are deterministic.
	names := make([]string, 0, len(attrs))
	for name := range attrs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		value := attrs[name]
		if slices.Contains(fifoOnlyAttributes, name) && name != attrFifoQueue && !next.fifo {
			return errInvalidAttributeName(name)
		}
		var err *apiError
		switch name {
		case attrDelaySeconds:
			next.delaySeconds, err = intAttribute(name, value, 0, maxDelaySeconds)
		case attrMaximumMessageSize:
			next.maximumMessageSize, err = intAttribute(name, value, minMaximumMessageSize, maxMaximumMessageSize)
		case attrMessageRetentionPeriod:
			next.messageRetentionPeriod, err = intAttribute(name, value, minMessageRetentionPeriod, maxMessageRetentionPeriod)
		case attrReceiveMessageWaitTimeSeconds:
			next.receiveMessageWaitTimeSeconds, err = intAttribute(name, value, 0, maxReceiveWaitTimeSeconds)
		case attrVisibilityTimeout:
			next.visibilityTimeout, err = intAttribute(name, value, 0, maxVisibilityTimeout)
		case attrKmsDataKeyReusePeriodSeconds:
			next.kmsDataKeyReusePeriodSeconds, err = intAttribute(name, value, 60, 86400)
		case attrPolicy:
			if value != "" && !json.Valid([]byte(value)) {
				err = errInvalidAttributeValue(name, "the policy is not valid JSON")
			}
			next.policy = value
		case attrRedrivePolicy:
			next.redrive, err = s.parseRedrivePolicy(value, queueName, next.fifo)
		case attrRedriveAllowPolicy:
			next.redriveAllow, err = parseRedriveAllowPolicy(value)
		case attrSqsManagedSseEnabled:
			next.sqsManagedSseEnabled, err = boolAttribute(name, value)
		case attrKmsMasterKeyID:
			next.kmsMasterKeyID = value
			if value != "" {
				next.sqsManagedSseEnabled = false
			}
		case attrFifoQueue:
			if !creating {
				return errInvalidAttributeName(name)
			}
			// CreateQueue has already matched the value to the name.
		case attrContentBasedDeduplication:
			next.contentBasedDeduplication, err = boolAttribute(name, value)
		case attrDeduplicationScope:
			if value != "queue" && value != "messageGroup" {
				err = errInvalidAttributeValue(name, "")
			}
			next.deduplicationScope = value
		case attrFifoThroughputLimit:
			if value != "perQueue" && value != "perMessageGroupId" {
				err = errInvalidAttributeValue(name, "")
			}
			next.fifoThroughputLimit = value
		default:
			// Read-only attributes cannot be set either.
			return errInvalidAttributeName(name)
		}
		if err != nil {
			return err
		}
	}
	if next.sqsManagedSseEnabled && next.kmsMasterKeyID != "" {
		return errInvalidAttributeValue(attrSqsManagedSseEnabled, "You can use one type of server-side encryption (SSE) at one time.")
	}
	if next.fifo && next.fifoThroughputLimit == "perMessageGroupId" && next.deduplicationScope != "messageGroup" {
		return errInvalidParameterValue("The perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup.")
	}
	*a = next
	return nil
}

func intAttribute(name, value string, lo, hi int) (int, *apiError) {
	n, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || n < lo || n > hi {
		return 0, errInvalidAttributeValue(name, fmt.Sprintf("must be an integer from %d to %d", lo, hi))
	}
	return n, nil
}

func boolAttribute(name, value string) (bool, *apiError) {
	switch strings.ToLower(value) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, errInvalidAttributeValue(name, "must be true or false")
}

// parseRedrivePolicy validates a RedrivePolicy for the queue queueName. An
// empty value removes the policy. maxReceiveCount may be a JSON number or a
// string holding one, as AWS accepts both.
func (s *Simulator) parseRedrivePolicy(value, queueName string, fifo bool) (*redrivePolicy, *apiError) {
	if value == "" {
		return nil, nil
	}
	invalid := func(reason string) *apiError {
		return errInvalidParameterValue("Value %s for parameter RedrivePolicy is invalid. Reason: %s", truncate(value, 300), reason)
	}
	var raw struct {
		DeadLetterTargetArn *string         `json:"deadLetterTargetArn"`
		MaxReceiveCount     json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(value), &raw); err != nil {
		return nil, invalid("Redrive policy is not a valid JSON map.")
	}
	if raw.DeadLetterTargetArn == nil {
		return nil, invalid("Redrive policy does not contain mandatory attribute: deadLetterTargetArn.")
	}
	if len(raw.MaxReceiveCount) == 0 {
		return nil, invalid("Redrive policy does not contain mandatory attribute: maxReceiveCount.")
	}
	countText := strings.Trim(string(raw.MaxReceiveCount), `"`)
	count, err := strconv.Atoi(countText)
	if err != nil || count < 1 || count > maxMaxReceiveCount {
		return nil, invalid("Invalid value for maxReceiveCount: " + truncate(countText, 50) + ", valid values are from 1 to 1000 both inclusive.")
	}
	target := s.queueByARN(*raw.DeadLetterTargetArn)
	if target == nil {
		return nil, invalid("Dead letter target does not exist.")
	}
	if target.name == queueName {
		return nil, invalid("Dead letter target cannot be the queue itself.")
	}
	if fifo != target.attrs.fifo {
		// SQS's own text, its double full stop included.
		return nil, invalid("Dead-letter queue must be same type of queue as the source..")
	}
	if !target.attrs.redriveAllow.allows(s.queueARN(queueName)) {
		return nil, invalid("Queue " + s.queueARN(queueName) + " is not allowed to use " + target.arn + " as its dead-letter queue by the target's RedriveAllowPolicy.")
	}
	return &redrivePolicy{DeadLetterTargetArn: *raw.DeadLetterTargetArn, MaxReceiveCount: count}, nil
}

func parseRedriveAllowPolicy(value string) (*redriveAllowPolicy, *apiError) {
	if value == "" {
		return nil, nil
	}
	invalid := func(reason string) *apiError {
		return errInvalidParameterValue("Value %s for parameter RedriveAllowPolicy is invalid. Reason: %s", truncate(value, 300), reason)
	}
	var p redriveAllowPolicy
	if err := json.Unmarshal([]byte(value), &p); err != nil {
		return nil, invalid("Amazon SQS can't parse the policy.")
	}
	switch p.RedrivePermission {
	case "allowAll", "denyAll":
		if len(p.SourceQueueArns) > 0 {
			return nil, invalid("Only byQueue redrivePermission allows sourceQueueArns.")
		}
	case "byQueue":
		if len(p.SourceQueueArns) == 0 || len(p.SourceQueueArns) > 10 {
			return nil, invalid("byQueue redrivePermission needs 1 to 10 sourceQueueArns.")
		}
	default:
		return nil, invalid("redrivePermission must be allowAll, denyAll or byQueue.")
	}
	return &p, nil
}

// attributeValue returns the value GetQueueAttributes shows for name, and
// whether the queue has it at all (FIFO attributes on a standard queue, an
// unset policy).
func (q *queue) attributeValue(name string, now time.Time) (string, bool) {
	a := &q.attrs
	switch name {
	case attrQueueArn:
		return q.arn, true
	case attrApproximateNumberOfMessages, attrApproximateNumberOfMessagesNotVisible, attrApproximateNumberOfMessagesDelayed:
		c := q.counts(now)
		n := map[string]int{
			attrApproximateNumberOfMessages:           c.visible,
			attrApproximateNumberOfMessagesNotVisible: c.inFlight,
			attrApproximateNumberOfMessagesDelayed:    c.delayed,
		}[name]
		return strconv.Itoa(n), true
	case attrCreatedTimestamp:
		return strconv.FormatInt(q.createdAt.Unix(), 10), true
	case attrLastModifiedTimestamp:
		return strconv.FormatInt(q.modifiedAt.Unix(), 10), true
	case attrDelaySeconds:
		return strconv.Itoa(a.delaySeconds), true
	case attrMaximumMessageSize:
		return strconv.Itoa(a.maximumMessageSize), true
	case attrMessageRetentionPeriod:
		return strconv.Itoa(a.messageRetentionPeriod), true
	case attrReceiveMessageWaitTimeSeconds:
		return strconv.Itoa(a.receiveMessageWaitTimeSeconds), true
	case attrVisibilityTimeout:
		return strconv.Itoa(a.visibilityTimeout), true
	case attrPolicy:
		return a.policy, a.policy != ""
	case attrRedrivePolicy:
		if a.redrive == nil {
			return "", false
		}
		b, _ := json.Marshal(a.redrive)
		return string(b), true
	case attrRedriveAllowPolicy:
		if a.redriveAllow == nil {
			return "", false
		}
		b, _ := json.Marshal(a.redriveAllow)
		return string(b), true
	case attrSqsManagedSseEnabled:
		return strconv.FormatBool(a.sqsManagedSseEnabled), true
	case attrKmsMasterKeyID:
		return a.kmsMasterKeyID, a.kmsMasterKeyID != ""
	case attrKmsDataKeyReusePeriodSeconds:
		return strconv.Itoa(a.kmsDataKeyReusePeriodSeconds), a.kmsMasterKeyID != ""
	case attrFifoQueue:
		return "true", a.fifo
	case attrContentBasedDeduplication:
		return strconv.FormatBool(a.contentBasedDeduplication), a.fifo
	case attrDeduplicationScope:
		return a.deduplicationScope, a.fifo
	case attrFifoThroughputLimit:
		return a.fifoThroughputLimit, a.fifo
	}
	return "", false
}
