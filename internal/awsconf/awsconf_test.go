package awsconf

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/sqsim"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func newSim(t *testing.T) (*sqsim.Simulator, string) {
	t.Helper()
	sim := sqsim.New(sqsim.Options{Clock: sqsim.NewManualClock(t0), Seed: 1})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return sim, srv.URL
}

func getMetricData(ctx context.Context, cw *cloudwatch.Client) error {
	_, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(t0.Add(-time.Hour)),
		EndTime:   aws.Time(t0),
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String("m0"),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace:  aws.String("AWS/SQS"),
					MetricName: aws.String("NumberOfMessagesSent"),
					Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("q")}},
				},
				Period: aws.Int32(60),
				Stat:   aws.String("Sum"),
			},
		}},
	})
	return err
}

func TestLoadAgainstSimulator(t *testing.T) {
	ctx := context.Background()
	main, mainURL := newSim(t)
	other, otherURL := newSim(t)

	tests := []struct {
		name       string
		opts       Options
		wantCWMain int // GetMetricData calls expected on the main endpoint
	}{
		{"one endpoint for both", Options{Region: "eu-west-1", EndpointURL: mainURL, StaticCredentials: true}, 1},
		{"CloudWatch elsewhere", Options{Region: "eu-west-1", EndpointURL: mainURL, CloudWatchEndpointURL: otherURL, StaticCredentials: true}, 0},
		{"adaptive retries", Options{EndpointURL: mainURL, StaticCredentials: true, RetryMode: RetryAdaptive}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			main.ResetCallCounts()
			other.ResetCallCounts()
			clients, err := Load(ctx, tt.opts)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			sq, cw := clients.SQS, clients.CloudWatch
			if _, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")}); err != nil {
				t.Fatalf("CreateQueue: %v", err)
			}
			if err := getMetricData(ctx, cw); err != nil {
				t.Fatalf("GetMetricData: %v", err)
			}
			if got := main.CallCount("CreateQueue"); got != 1 {
				t.Errorf("CreateQueue calls on the endpoint = %d, want 1", got)
			}
			if got := main.CallCount("GetMetricData"); got != tt.wantCWMain {
				t.Errorf("GetMetricData calls on the main endpoint = %d, want %d", got, tt.wantCWMain)
			}
			if got := other.CallCount("GetMetricData"); got != 1-tt.wantCWMain {
				t.Errorf("GetMetricData calls on the CloudWatch endpoint = %d, want %d", got, 1-tt.wantCWMain)
			}
		})
	}
}

func TestLoadRetriesThrottlingAndServerErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name  string
		fault sqsim.Fault
		code  string
	}{
		{"throttled", sqsim.Fault{ThrottleRate: 1}, "RequestThrottled"},
		{"500", sqsim.Fault{ErrorRate: 1}, "InternalError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, url := newSim(t)
			clients, err := Load(ctx, Options{EndpointURL: url, StaticCredentials: true, MaxAttempts: 4, MaxBackoff: time.Millisecond})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			sq := clients.SQS
			sim.SetFault("ListQueues", tt.fault)
			_, err = sq.ListQueues(ctx, &sqs.ListQueuesInput{})
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.code {
				t.Fatalf("ListQueues error = %v, want code %s", err, tt.code)
			}
			if got := sim.CallCount("ListQueues"); got != 4 {
				t.Errorf("ListQueues attempts = %d, want 4 (MaxAttempts)", got)
			}
			sim.SetFault("ListQueues", sqsim.Fault{})
			if _, err := sq.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
				t.Errorf("ListQueues after the fault cleared: %v", err)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	// Keep the developer's own AWS configuration out of the test.
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    Options
		wantErr error
	}{
		{"no region", Options{}, ErrNoRegion},
		{"bad retry mode", Options{Region: "us-east-1", RetryMode: "sometimes"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(ctx, tt.opts)
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("Load error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	// A local endpoint needs no region: any will do to sign with.
	if _, err := Load(ctx, Options{EndpointURL: "http://127.0.0.1:1", StaticCredentials: true}); err != nil {
		t.Errorf("Load with an endpoint and no region: %v", err)
	}
}

// TestActionsHaveTheirOwnRetryQuota: an endpoint answering 500 to everything drains the
// collector's retry quota (its client then fails fast with "retry quota exceeded"), while the
// actions' client of the same region still retries, so that an operator's redrive gets its
// attempts.
func TestActionsHaveTheirOwnRetryQuota(t *testing.T) {
	ctx := context.Background()
	sim, url := newSim(t)
	clients, err := Load(ctx, Options{EndpointURL: url, StaticCredentials: true, MaxAttempts: 3, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sim.SetFault("ListMessageMoveTasks", sqsim.Fault{ErrorRate: 1})
	in := &sqs.ListMessageMoveTasksInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:000000000000:dlq")}
	drained := false
	for range 200 {
		_, err := clients.SQS.ListMessageMoveTasks(ctx, in)
		var quota ratelimit.QuotaExceededError
		if errors.As(err, &quota) {
			drained = true
			break
		}
	}
	if !drained {
		t.Fatal("the collector's retry quota never ran out: the test does not test what it says")
	}
	sim.ResetCallCounts()
	_, err = clients.ActionsSQS.ListMessageMoveTasks(ctx, in)
	var quota ratelimit.QuotaExceededError
	if errors.As(err, &quota) {
		t.Fatalf("the actions' client shares the drained quota: %v", err)
	}
	if n := sim.CallCount("ListMessageMoveTasks"); n != 3 {
		t.Errorf("the actions' client made %d attempts, want 3", n)
	}
}

// TestLoadAssumedReachesTheRolesAccount: clients built with LoadAssumed assume the role (with
// its external id) through the endpoint's STS and reach the role's account; a role that cannot
// be assumed fails the clients' first call, not LoadAssumed.
func TestLoadAssumedReachesTheRolesAccount(t *testing.T) {
	ctx := context.Background()
	clock := sqsim.NewManualClock(t0)
	home := sqsim.New(sqsim.Options{Clock: clock, AccountID: "000000000000"})
	prod := sqsim.New(sqsim.Options{Clock: clock, AccountID: "111111111111"})
	accounts := sqsim.NewAccounts(home, prod)
	const role = "arn:aws:iam::111111111111:role/toolq-reader"
	if err := accounts.AddRole(role, "ext-1"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(accounts)
	t.Cleanup(srv.Close)
	opts := Options{Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true}

	tests := []struct {
		name, role, externalID string
		wantAccount            string // "": the first call fails
	}{
		{"the role with its external id", role, "ext-1", "111111111111"},
		{"a wrong external id", role, "nope", ""},
		{"a role nobody may assume", "arn:aws:iam::111111111111:role/other", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clients, err := LoadAssumed(ctx, opts, tt.role, tt.externalID)
			if err != nil {
				t.Fatalf("LoadAssumed: %v", err)
			}
			who, err := clients.STS.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			_, sqsErr := clients.SQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q-" + tt.externalID)})
			if tt.wantAccount == "" {
				if err == nil || sqsErr == nil {
					t.Fatalf("GetCallerIdentity = %v, CreateQueue = %v; want both to fail", err, sqsErr)
				}
				return
			}
			if err != nil || aws.ToString(who.Account) != tt.wantAccount {
				t.Fatalf("GetCallerIdentity = %+v, %v; want account %s", who, err, tt.wantAccount)
			}
			if sqsErr != nil {
				t.Fatalf("CreateQueue: %v", sqsErr)
			}
			if prod.CallCount("CreateQueue") != 1 || home.CallCount("CreateQueue") != 0 {
				t.Errorf("CreateQueue calls: role's account %d, default account %d; want 1 and 0",
					prod.CallCount("CreateQueue"), home.CallCount("CreateQueue"))
			}
		})
	}
}
