// Package awscalls is what toolq knows of the AWS API calls it makes: which operations and the
// permission each needs, how a failure is classified and described (no credentials), how calls
// are counted in one Prometheus metric (toolq_aws_calls_total) for the collector and the actions
// alike, and the one conversion of an SQS move task.
package awscalls

import (
	"context"
	"errors"
	"fmt"
	"net"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
)

// Outcomes, the outcome label of toolq_aws_calls_total.
const (
	OK          = "ok"
	Throttled   = "throttled"
	ServerError = "server_error"
	ClientError = "client_error"
	Transport   = "transport"
	Canceled    = "canceled"
	// Skipped counts the calls not made because their operation was backed off after repeated
	// failures (the collector's calls only).
	Skipped = "skipped"
)

// Classify returns the AWS error code of err ("HTTP500" and the like when the endpoint answered
// without one, "transport", "timeout" or "canceled" when it did not answer) and the outcome it
// counts as. A nil error is OK with no code.
func Classify(err error) (code, outcome string) {
	if err == nil {
		return "", OK
	}
	status := 0
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
		if _, ok := retry.DefaultThrottleErrorCodes[code]; ok {
			return code, Throttled
		}
		// Endpoints other than AWS often leave the fault unknown: the status says it.
		if apiErr.ErrorFault() == smithy.FaultServer || status >= 500 {
			return code, ServerError
		}
		return code, ClientError
	}
	if status != 0 {
		// The endpoint answered, with a body that is no AWS error (an HTML page from a proxy).
		if status == 429 {
			return "HTTP429", Throttled
		}
		if status >= 500 {
			return fmt.Sprintf("HTTP%d", status), ServerError
		}
		return fmt.Sprintf("HTTP%d", status), ClientError
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled", Canceled
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return "timeout", Transport
	}
	return "transport", Transport
}

// QueueMissing reports whether err says that the queue a call named does not exist: the SDK's
// typed *types.QueueDoesNotExist, or the bare code from an endpoint that omits SQS's
// query-compatible error header (kumo answers AWS.SimpleQueueService.NonExistentQueue without
// it, so the SDK cannot map it to the type).
func QueueMissing(err error) bool {
	var gone *types.QueueDoesNotExist
	if errors.As(err, &gone) {
		return true
	}
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist":
			return true
		}
	}
	return false
}

// Counter is toolq_aws_calls_total. The zero of *Counter (nil) counts nothing, for tests and
// tools that expose no metrics.
type Counter struct {
	vec *prometheus.CounterVec
}

// NewCounter returns the counter registered with reg; reg nil gives an unregistered one. A
// counter already registered there (a second collector in a test, say) is shared, not refused.
func NewCounter(reg prometheus.Registerer) (*Counter, error) {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolq_aws_calls_total",
		Help: "AWS API calls toolq made (collector and actions), by operation and outcome (ok, throttled, server_error, client_error, transport, canceled, skipped: not made while the operation was backed off).",
	}, []string{"operation", "outcome"})
	if reg == nil {
		return &Counter{vec: vec}, nil
	}
	if err := reg.Register(vec); err != nil {
		var already prometheus.AlreadyRegisteredError
		if !errors.As(err, &already) {
			return nil, fmt.Errorf("awscalls: register: %w", err)
		}
		existing, ok := already.ExistingCollector.(*prometheus.CounterVec)
		if !ok {
			return nil, fmt.Errorf("awscalls: register: %w", err)
		}
		vec = existing
	}
	return &Counter{vec: vec}, nil
}

// Observe counts one call of operation that ended with err, and returns err's outcome.
func (c *Counter) Observe(operation string, err error) string {
	_, outcome := Classify(err)
	c.Add(operation, outcome)
	return outcome
}

// Add counts one call of operation with a known outcome.
func (c *Counter) Add(operation, outcome string) {
	if c == nil {
		return
	}
	c.vec.WithLabelValues(operation, outcome).Inc()
}
