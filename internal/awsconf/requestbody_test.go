package awsconf

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/sqsim"
)

// lateWriter is an HTTP client that answers through a simulator and writes request bodies as
// net/http's transport does, with the one step of it that comes late on a loaded machine made
// late every time: it takes the body's Content-Length bytes, answers, and checks that the body
// holds nothing more (the transport's io.Copy(io.Discard, body) on the connection's write
// goroutine) only after the SDK call has returned.
type lateWriter struct {
	sim      *sqsim.Simulator
	returned chan struct{} // closed by the test once the call has returned
	checked  chan error    // what the late check found
}

func (c *lateWriter) Do(req *http.Request) (*http.Response, error) {
	payload := make([]byte, req.ContentLength)
	if _, err := io.ReadFull(req.Body, payload); err != nil {
		return nil, err
	}
	body := req.Body
	go func() {
		<-c.returned
		_, err := io.Copy(io.Discard, body)
		c.checked <- err
	}()
	forwarded := req.Clone(req.Context())
	forwarded.Body = io.NopCloser(bytes.NewReader(payload))
	rec := httptest.NewRecorder()
	c.sim.ServeHTTP(rec, forwarded)
	return rec.Result(), nil
}

// TestRequestBodyOutlivesTheCall: the SDK closes a request body as soon as the response headers
// are in, and net/http may still check the body's end after that. The check must find the end
// and not an error: an error there makes the transport close the connection under the response
// being read, and the SDK sends the call again (a ReceiveMessage twice: receive counts raised
// by an answer nobody saw).
func TestRequestBodyOutlivesTheCall(t *testing.T) {
	// A CA bundle in the environment needs an HTTP client with a transport to add it to.
	t.Setenv("AWS_CA_BUNDLE", "")
	ctx := context.Background()
	sim := sqsim.New(sqsim.Options{Clock: sqsim.NewManualClock(t0), Seed: 1})
	tests := []struct {
		name string
		call func(Clients) error
	}{
		{"SQS, AWS JSON", func(c Clients) error {
			_, err := c.SQS.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("tool-calls")})
			return err
		}},
		{"CloudWatch, RPC v2 CBOR", func(c Clients) error {
			_, err := c.CloudWatch.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: aws.String("AWS/SQS")})
			return err
		}},
		{"the actions' SQS", func(c Clients) error {
			_, err := c.ActionsSQS.ListQueues(ctx, &sqs.ListQueuesInput{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := &lateWriter{sim: sim, returned: make(chan struct{}), checked: make(chan error, 1)}
			clients, err := Load(ctx, Options{Region: "us-east-1", EndpointURL: "http://sqsim.test", StaticCredentials: true, HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.call(clients); err != nil {
				t.Fatalf("the call: %v", err)
			}
			close(client.returned)
			if err := <-client.checked; err != nil {
				t.Errorf("reading the request body to its end after the call returned: %v; want its end, as net/http does before it reuses the connection", err)
			}
		})
	}
}
