// Package arn parses and prints SQS queue ARNs: the one place toolq reads one apart.
package arn

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrInvalid is returned for a string that is not an SQS queue ARN.
var ErrInvalid = errors.New("arn: not an SQS queue ARN")

// Queue is an SQS queue ARN, arn:PARTITION:sqs:REGION:ACCOUNT:NAME.
type Queue struct {
	Partition string // aws, aws-cn, aws-us-gov, ...
	Region    string
	Account   string // twelve digits
	Name      string // as SQS allows: up to 80 letters, digits, - and _, and .fifo
}

// queuePattern is what SQS allows in each part of a queue ARN.
var queuePattern = regexp.MustCompile(`^arn:(aws[a-z-]*):sqs:([a-z0-9-]{1,32}):([0-9]{12}):([A-Za-z0-9_-]{1,80}(?:\.fifo)?)$`)

// namePattern is what SQS allows as a queue name.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}(\.fifo)?$`)

// ParseQueue reads an SQS queue ARN; anything else is ErrInvalid.
func ParseQueue(s string) (Queue, error) {
	m := queuePattern.FindStringSubmatch(s)
	if m == nil {
		return Queue{}, fmt.Errorf("%w: %.100q", ErrInvalid, s)
	}
	return Queue{Partition: m[1], Region: m[2], Account: m[3], Name: m[4]}, nil
}

// String returns the ARN.
func (q Queue) String() string {
	return "arn:" + q.Partition + ":sqs:" + q.Region + ":" + q.Account + ":" + q.Name
}

// IsARN reports whether a queue reference is meant as an ARN rather than a name: it starts with
// "arn:". Whether it is a valid one is ParseQueue's to say.
func IsARN(ref string) bool { return strings.HasPrefix(ref, "arn:") }

// ValidQueueName reports whether SQS allows name as a queue name.
func ValidQueueName(name string) bool { return namePattern.MatchString(name) }

// ValidQueueRef reports whether ref is a queue name or an SQS queue ARN.
func ValidQueueRef(ref string) bool {
	if IsARN(ref) {
		_, err := ParseQueue(ref)
		return err == nil
	}
	return ValidQueueName(ref)
}

// QueueName returns the queue name at the end of an ARN, for display: the last colon-separated
// field, or s itself when it has none. It does not validate.
func QueueName(s string) string {
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// Role is an IAM role ARN, arn:PARTITION:iam::ACCOUNT:role/[PATH/]NAME: a role toolq assumes to
// watch an account.
type Role struct {
	Partition string
	Account   string // twelve digits
	Name      string // with its path, if any: path/name
}

// rolePattern is what IAM allows in a role ARN: a path of /-separated parts, and a name of up to
// 64 letters, digits and +=,.@_-.
var rolePattern = regexp.MustCompile(`^arn:(aws[a-z-]*):iam::([0-9]{12}):role/((?:[\x21-\x7e]{1,512}/)?[A-Za-z0-9+=,.@_-]{1,64})$`)

// ParseRole reads an IAM role ARN; anything else is ErrInvalidRole.
func ParseRole(s string) (Role, error) {
	m := rolePattern.FindStringSubmatch(s)
	if m == nil {
		return Role{}, fmt.Errorf("%w: %.100q", ErrInvalidRole, s)
	}
	return Role{Partition: m[1], Account: m[2], Name: m[3]}, nil
}

// ErrInvalidRole is returned for a string that is not an IAM role ARN.
var ErrInvalidRole = errors.New("arn: not an IAM role ARN (arn:aws:iam::ACCOUNT:role/NAME)")
