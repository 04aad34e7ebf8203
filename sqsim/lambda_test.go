package sqsim

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func (h *harness) lambda() *lambda.Client {
	return lambda.NewFromConfig(aws.Config{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""), RetryMaxAttempts: 1,
	}, func(o *lambda.Options) { o.BaseEndpoint = aws.String(h.url) })
}

// TestLambdaConsumers sets up the seeds' Lambda consumer of an SQS queue
// through the stock client and reads it back as a dashboard would:
// ListEventSourceMappings by the queue's ARN, then GetFunctionConfiguration
// for the function's timeout.
func TestLambdaConsumers(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	lc := h.lambda()
	url := h.createQueue(t, "web-search", map[string]string{"VisibilityTimeout": "60"})
	queueARN := h.queueARN(t, url)
	fifoARN := h.queueARN(t, h.createQueue(t, "calls.fifo", map[string]string{"FifoQueue": "true"}))

	fn, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("web-search-worker"), Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"),
		Role: aws.String("arn:aws:iam::000000000000:role/worker"), Timeout: aws.Int32(30),
		Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK fake zip")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(fn.FunctionArn) != "arn:aws:lambda:us-east-1:000000000000:function:web-search-worker" || aws.ToInt32(fn.Timeout) != 30 || fn.State != lambdatypes.StateActive {
		t.Errorf("CreateFunction: %s timeout %d state %s", aws.ToString(fn.FunctionArn), aws.ToInt32(fn.Timeout), fn.State)
	}
	created, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		FunctionName: aws.String("web-search-worker"), EventSourceArn: aws.String(queueARN), BatchSize: aws.Int32(10),
		ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(5)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(created.State) != "Creating" || aws.ToString(created.UUID) == "" {
		t.Errorf("CreateEventSourceMapping: state %s uuid %s", aws.ToString(created.State), aws.ToString(created.UUID))
	}

	listed, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(queueARN)})
	if err != nil {
		t.Fatal(err)
	}
	if len(listed.EventSourceMappings) != 1 {
		t.Fatalf("ListEventSourceMappings: %d mappings", len(listed.EventSourceMappings))
	}
	m := listed.EventSourceMappings[0]
	if aws.ToString(m.FunctionArn) != aws.ToString(fn.FunctionArn) || aws.ToInt32(m.BatchSize) != 10 || aws.ToString(m.State) != "Enabled" ||
		len(m.FunctionResponseTypes) != 0 || m.ScalingConfig == nil || aws.ToInt32(m.ScalingConfig.MaximumConcurrency) != 5 ||
		aws.ToInt32(m.MaximumBatchingWindowInSeconds) != 0 || !aws.ToTime(m.LastModified).Equal(t0) {
		t.Errorf("mapping %+v", m)
	}
	conf, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: m.FunctionArn})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt32(conf.Timeout) != 30 || aws.ToString(conf.FunctionName) != "web-search-worker" {
		t.Errorf("GetFunctionConfiguration: %+v", conf)
	}

	// The advisor's fixes go through UpdateEventSourceMapping; disabling
	// is seen in the listing.
	if _, err := lc.UpdateEventSourceMapping(ctx, &lambda.UpdateEventSourceMappingInput{
		UUID: m.UUID, FunctionResponseTypes: []lambdatypes.FunctionResponseType{lambdatypes.FunctionResponseTypeReportBatchItemFailures}, Enabled: aws.Bool(false),
	}); err != nil {
		t.Fatal(err)
	}
	got, err := lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: m.UUID})
	if err != nil || aws.ToString(got.State) != "Disabled" || len(got.FunctionResponseTypes) != 1 {
		t.Errorf("after update: %v state %s types %v", err, aws.ToString(got.State), got.FunctionResponseTypes)
	}

	// By function name, a mapping on another queue is not listed.
	byFunction, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: aws.String("web-search-worker")})
	if err != nil || len(byFunction.EventSourceMappings) != 1 {
		t.Errorf("by function: %v, %d", err, len(byFunction.EventSourceMappings))
	}
	other, err := lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{EventSourceArn: aws.String(fifoARN)})
	if err != nil || len(other.EventSourceMappings) != 0 {
		t.Errorf("other queue: %v, %d", err, len(other.EventSourceMappings))
	}

	// A deleted queue shows as a failing mapping.
	if _, err := h.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		t.Fatal(err)
	}
	got, err = lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: m.UUID})
	if err != nil || len(aws.ToString(got.LastProcessingResult)) < 8 || aws.ToString(got.LastProcessingResult)[:8] != "PROBLEM:" {
		t.Errorf("mapping of a deleted queue: %v %q", err, aws.ToString(got.LastProcessingResult))
	}
}

// TestLambdaErrors checks Lambda's validation through the stock client's
// typed errors.
func TestLambdaErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	lc := h.lambda()
	queueARN := h.queueARN(t, h.createQueue(t, "q", nil))
	fifoARN := h.queueARN(t, h.createQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"}))
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("f"), Role: aws.String("arn:aws:iam::000000000000:role/r"),
		Code: &lambdatypes.FunctionCode{ZipFile: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	var notFound *lambdatypes.ResourceNotFoundException
	var invalid *lambdatypes.InvalidParameterValueException
	var conflict *lambdatypes.ResourceConflictException
	tests := []struct {
		name string
		call func() error
		want any
	}{
		{"unknown function", func() error {
			_, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("nope")})
			return err
		}, &notFound},
		{"unknown qualifier", func() error {
			_, err := lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("f"), Qualifier: aws.String("7")})
			return err
		}, &notFound},
		{"duplicate function", func() error {
			_, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("f"), Role: aws.String("r"), Code: &lambdatypes.FunctionCode{}})
			return err
		}, &conflict},
		{"mapping of a missing queue", func() error {
			_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String("arn:aws:sqs:us-east-1:000000000000:nope")})
			return err
		}, &invalid},
		{"batch of 11 without a window", func() error {
			_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String(queueARN), BatchSize: aws.Int32(11)})
			return err
		}, &invalid},
		{"FIFO batch of 20", func() error {
			_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String(fifoARN), BatchSize: aws.Int32(20), MaximumBatchingWindowInSeconds: aws.Int32(1)})
			return err
		}, &invalid},
		{"concurrency of 1", func() error {
			_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String(queueARN), ScalingConfig: &lambdatypes.ScalingConfig{MaximumConcurrency: aws.Int32(1)}})
			return err
		}, &invalid},
		{"unknown mapping", func() error {
			_, err := lc.GetEventSourceMapping(ctx, &lambda.GetEventSourceMappingInput{UUID: aws.String("00000000-0000-0000-0000-000000000000")})
			return err
		}, &notFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if !errors.As(err, tt.want) {
				t.Errorf("err = %v, want %T", err, tt.want)
			}
		})
	}
	// The mapping the validation let through is unique per queue and function.
	if _, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String(queueARN)}); err != nil {
		t.Fatal(err)
	}
	_, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"), EventSourceArn: aws.String(queueARN)})
	if !errors.As(err, &conflict) {
		t.Errorf("second mapping: %v, want ResourceConflictException", err)
	}
}

// TestListFunctions: the stock paginator lists every function once, in
// pages of MaxItems.
func TestListFunctions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	lc := h.lambda()
	for _, name := range []string{"web-search-worker", "audit-logger", "export-worker"} {
		if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
			FunctionName: aws.String(name), Runtime: lambdatypes.RuntimeNodejs20x, Handler: aws.String("index.handler"),
			Role: aws.String("arn:aws:iam::000000000000:role/worker"), Code: &lambdatypes.FunctionCode{ZipFile: []byte("PK")},
		}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	pages := 0
	for p := lambda.NewListFunctionsPaginator(lc, &lambda.ListFunctionsInput{MaxItems: aws.Int32(2)}); p.HasMorePages(); pages++ {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range out.Functions {
			names = append(names, aws.ToString(f.FunctionName))
			if aws.ToString(f.FunctionArn) != "arn:aws:lambda:us-east-1:000000000000:function:"+aws.ToString(f.FunctionName) {
				t.Errorf("FunctionArn %s", aws.ToString(f.FunctionArn))
			}
		}
	}
	if want := []string{"audit-logger", "export-worker", "web-search-worker"}; !slices.Equal(names, want) || pages != 2 {
		t.Errorf("listed %v in %d pages, want %v in 2", names, pages, want)
	}
	if _, err := lc.ListFunctions(ctx, &lambda.ListFunctionsInput{Marker: aws.String("nope")}); err == nil {
		t.Error("ListFunctions accepted a marker it never gave")
	}
}
