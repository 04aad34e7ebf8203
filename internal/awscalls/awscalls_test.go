package awscalls

import (
	"context"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name        string
		err         error
		wantCode    string
		wantOutcome string
	}{
		{"nil", nil, "", OK},
		{"throttled", &smithy.GenericAPIError{Code: "RequestThrottled", Fault: smithy.FaultClient}, "RequestThrottled", Throttled},
		{"server", &smithy.GenericAPIError{Code: "InternalError", Fault: smithy.FaultServer}, "InternalError", ServerError},
		{"client", fmt.Errorf("op: %w", &smithy.GenericAPIError{Code: "AccessDenied", Fault: smithy.FaultClient}), "AccessDenied", ClientError},
		{"canceled", context.Canceled, "canceled", Canceled},
		{"wrapped deadline", fmt.Errorf("x: %w", context.DeadlineExceeded), "canceled", Canceled},
		{"other", fmt.Errorf("dial tcp: refused"), "transport", Transport},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, outcome := Classify(tt.err)
			if code != tt.wantCode || outcome != tt.wantOutcome {
				t.Errorf("Classify = %q, %q; want %q, %q", code, outcome, tt.wantCode, tt.wantOutcome)
			}
		})
	}
}

func TestQueueMissing(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"typed", fmt.Errorf("op: %w", &types.QueueDoesNotExist{Message: aws.String("gone")}), true},
		{"legacy code without the query header (kumo)", &smithy.GenericAPIError{Code: "AWS.SimpleQueueService.NonExistentQueue"}, true},
		{"shape name as code", &smithy.GenericAPIError{Code: "QueueDoesNotExist"}, true},
		{"other code", &smithy.GenericAPIError{Code: "AccessDenied"}, false},
		{"message naming the code is not the code", fmt.Errorf("AWS.SimpleQueueService.NonExistentQueue"), false},
		{"nil", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := QueueMissing(tt.err); got != tt.want {
				t.Errorf("QueueMissing(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestCounterIsShared: the collector and the actions each ask for the counter on one registry
// and count into the same metric.
func TestCounterIsShared(t *testing.T) {
	reg := prometheus.NewRegistry()
	a, err := NewCounter(reg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewCounter(reg)
	if err != nil {
		t.Fatal(err)
	}
	a.Observe("GetQueueAttributes", nil)
	b.Observe("StartMessageMoveTask", nil)
	b.Observe("StartMessageMoveTask", &smithy.GenericAPIError{Code: "ThrottlingException"})
	if n := testutil.CollectAndCount(reg, "toolq_aws_calls_total"); n != 3 {
		t.Errorf("series = %d, want 3", n)
	}
	if v := testutil.ToFloat64(a.vec.WithLabelValues("StartMessageMoveTask", OK)); v != 1 {
		t.Errorf("StartMessageMoveTask ok = %v, want 1", v)
	}
	var none *Counter
	none.Add("X", OK) // a nil counter counts nothing and does not panic
}
