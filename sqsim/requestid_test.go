package sqsim

import (
	"context"
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
)

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestRequestIDs: every answer of every service, success or error, carries
// a request id of its own in x-amzn-RequestId, as the stock Go clients read
// it (the JavaScript SDK and boto3 suites check their own readers).
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sim := New(Options{Seed: 1})
	srv := httptest.NewServer(NewAccounts(sim))
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1}
	endpoint := aws.String(srv.URL)
	sqsc := sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = endpoint })
	cw := cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = endpoint })
	lc := lambda.NewFromConfig(cfg, func(o *lambda.Options) { o.BaseEndpoint = endpoint })
	eb := eventbridge.NewFromConfig(cfg, func(o *eventbridge.Options) { o.BaseEndpoint = endpoint })
	stsc := sts.NewFromConfig(cfg, func(o *sts.Options) { o.BaseEndpoint = endpoint })

	// Each call returns its result's metadata, or the error.
	calls := []struct {
		name string
		call func() (middleware.Metadata, error)
	}{
		{"sqs", func() (middleware.Metadata, error) {
			out, err := sqsc.ListQueues(ctx, &sqs.ListQueuesInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}},
		{"sqs error", func() (middleware.Metadata, error) {
			_, err := sqsc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
			return middleware.Metadata{}, err
		}},
		{"cloudwatch", func() (middleware.Metadata, error) {
			out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}},
		{"cloudwatch error", func() (middleware.Metadata, error) {
			_, err := cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"nope"}})
			return middleware.Metadata{}, err
		}},
		{"lambda", func() (middleware.Metadata, error) {
			out, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}},
		{"lambda error", func() (middleware.Metadata, error) {
			_, err := lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("nope")})
			return middleware.Metadata{}, err
		}},
		{"eventbridge", func() (middleware.Metadata, error) {
			out, err := eb.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}},
		{"eventbridge error", func() (middleware.Metadata, error) {
			_, err := eb.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String("nope")})
			return middleware.Metadata{}, err
		}},
		{"sts", func() (middleware.Metadata, error) {
			out, err := stsc.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}},
		{"sts error", func() (middleware.Metadata, error) {
			_, err := stsc.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::000000000000:role/nope"), RoleSessionName: aws.String("session")})
			return middleware.Metadata{}, err
		}},
	}
	seen := map[string]string{}
	for _, c := range calls {
		md, err := c.call()
		var id string
		if strings.HasSuffix(c.name, "error") {
			var re *awshttp.ResponseError
			if !errors.As(err, &re) {
				t.Errorf("%s: err = %v, want a service error", c.name, err)
				continue
			}
			id = re.ServiceRequestID()
		} else {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
				continue
			}
			id, _ = awsmiddleware.GetRequestIDMetadata(md)
		}
		if !uuidPattern.MatchString(id) {
			t.Errorf("%s: request id %q, want a UUID", c.name, id)
		}
		if other, dup := seen[id]; dup {
			t.Errorf("%s: request id %s already answered %s", c.name, id, other)
		}
		seen[id] = c.name
	}
}

// TestQueryRequestIDInBody: a Query answer repeats its header's request id
// in its XML, where the clients of that protocol read it, success or error,
// SQS's or CloudWatch's.
func TestQueryRequestIDInBody(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	tests := []struct {
		name string
		form url.Values
	}{
		{"sqs", form("Action", "ListQueues")},
		{"sqs error", form("Action", "GetQueueUrl", "QueueName", "nope")},
		{"cloudwatch", form("Action", "DescribeAlarms", "Version", "2010-08-01")},
		{"cloudwatch error", form("Action", "DeleteAlarms", "Version", "2010-08-01", "AlarmNames.member.1", "nope")},
	}
	ids := map[string]bool{}
	for _, tt := range tests {
		resp, err := http.PostForm(h.url+"/", tt.form)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Success string `xml:"ResponseMetadata>RequestId"`
			Error   string `xml:"RequestId"`
		}
		err = xml.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		header := resp.Header.Get("x-amzn-RequestId")
		if got := body.Success + body.Error; got != header || !uuidPattern.MatchString(got) {
			t.Errorf("%s: RequestId %q in the body, %q in the header; want one UUID in both", tt.name, got, header)
		}
		if ids[header] {
			t.Errorf("%s: request id %s given twice", tt.name, header)
		}
		ids[header] = true
	}
}
