package awscalls

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestDescribe runs the stock SQS client against endpoints that answer badly and checks what
// toolq would store and show of each failure.
func TestDescribe(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		wantCode    string
		wantOutcome string
		wantMessage string
	}{
		{"an HTML page from a proxy", 500, nil, "<html>oops</html>", "HTTP500", ServerError,
			"HTTP 500 from the endpoint, with a body that is not an AWS error"},
		{"an AWS 500 without a fault", 500, map[string]string{"Content-Type": "application/x-amz-json-1.0"},
			`{"__type":"InternalError","message":"We encountered an internal error."}`, "InternalError", ServerError, "We encountered an internal error."},
		{"a denial with an ARN and an access key", 400, map[string]string{"Content-Type": "application/x-amz-json-1.0"},
			`{"__type":"com.amazon.coral.service#AccessDeniedException","message":"User: arn:aws:iam::123456789012:user/toolq (key AKIAIOSFODNN7EXAMPLE) is not authorized; Signature=abcdef0123"}`,
			"AccessDeniedException", ClientError,
			"User: arn:aws:iam::123456789012:user/toolq (key [redacted]) is not authorized; Signature=[redacted]"},
		{"a 503 with an empty body", 503, nil, "", "UnknownError", ServerError, "UnknownError (HTTP 503 from the endpoint)"},
		{"a 429 HTML page", 429, nil, "<html>slow down</html>", "HTTP429", Throttled, "HTTP 429 from the endpoint, with a body that is not an AWS error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
				Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
			_, err := c.ListQueues(context.Background(), &sqs.ListQueuesInput{})
			if err == nil {
				t.Fatal("no error")
			}
			f := Describe(err)
			if f.Code != tt.wantCode || f.Outcome != tt.wantOutcome || f.HTTPStatus != tt.status || f.Message != tt.wantMessage {
				t.Errorf("Describe = %+v;\nwant code %q, outcome %q, status %d, message %q", f, tt.wantCode, tt.wantOutcome, tt.status, tt.wantMessage)
			}
		})
	}
	if f := Describe(context.Canceled); f.Outcome != Canceled || f.HTTPStatus != 0 {
		t.Errorf("canceled = %+v", f)
	}
	if f := Describe(&net500{}); !strings.Contains(f.Message, "connection refused") || f.Outcome != Transport {
		t.Errorf("transport = %+v", f)
	}
}

type net500 struct{}

func (*net500) Error() string { return "dial tcp 127.0.0.1:1: connect: connection refused" }
