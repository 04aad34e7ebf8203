package traffic

import (
	"log/slog"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/awsconf"
)

// newClient returns the stock SQS client for the endpoint at url.
func newClient(t *testing.T, url string) *sqs.Client {
	t.Helper()
	clients, err := awsconf.Load(t.Context(), awsconf.Options{Region: "us-east-1", EndpointURL: url, StaticCredentials: true})
	if err != nil {
		t.Fatal(err)
	}
	return clients.SQS
}

// testLogger sends the generator's warnings and errors to the test log.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
}
