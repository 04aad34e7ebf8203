package sqsim_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"

	"github.com/toolq/toolq/sqsim"
)

// TestAccountsThroughAssumeRole: the stock STS client assumes a role of a second simulated
// account (with its external id), and the stock SQS client with those credentials sees that
// account's queues, ids in URLs and ARNs, and not the default account's.
func TestAccountsThroughAssumeRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := sqsim.New(sqsim.Options{AccountID: "111111111111"})
	prod := sqsim.New(sqsim.Options{AccountID: "222222222222"})
	accounts := sqsim.NewAccounts(home, prod)
	if err := accounts.AddRole("arn:aws:iam::222222222222:role/toolq-reader", "ext-42"); err != nil {
		t.Fatal(err)
	}
	if err := accounts.AddRole("arn:aws:iam::333333333333:role/x", ""); err == nil {
		t.Error("AddRole of an account that is not simulated succeeded")
	}
	srv := httptest.NewServer(accounts)
	defer srv.Close()

	ambient := credentials.NewStaticCredentialsProvider("AKIDHOME", "secret", "")
	stsClient := sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: ambient})
	sqsOf := func(creds aws.CredentialsProvider) *sqs.Client {
		return sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: creds})
	}
	if _, err := sqsOf(ambient).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("home-queue")}); err != nil {
		t.Fatal(err)
	}
	assumed := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, "arn:aws:iam::222222222222:role/toolq-reader",
		func(o *stscreds.AssumeRoleOptions) { o.ExternalID = aws.String("ext-42"); o.RoleSessionName = "toolq" }))
	prodSQS := sqsOf(assumed)
	out, err := prodSQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("prod-queue")})
	if err != nil {
		t.Fatalf("CreateQueue with assumed credentials: %v", err)
	}
	if !strings.Contains(aws.ToString(out.QueueUrl), "/222222222222/prod-queue") {
		t.Errorf("queue URL %q; want the second account's", aws.ToString(out.QueueUrl))
	}
	list, err := prodSQS.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 1 || !strings.HasSuffix(list.QueueUrls[0], "/prod-queue") {
		t.Errorf("ListQueues in the second account = %v, %v; want prod-queue alone", list, err)
	}
	attrs, err := prodSQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}})
	if err != nil || attrs.Attributes["QueueArn"] != "arn:aws:sqs:us-east-1:222222222222:prod-queue" {
		t.Errorf("QueueArn = %v, %v", attrs, err)
	}

	who, err := sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: assumed}).
		GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(who.Account) != "222222222222" || !strings.HasPrefix(aws.ToString(who.Arn), "arn:aws:sts::222222222222:assumed-role/toolq-reader/toolq") {
		t.Errorf("GetCallerIdentity with assumed credentials = %+v, %v", who, err)
	}
	who, err = stsClient.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil || aws.ToString(who.Account) != "111111111111" {
		t.Errorf("GetCallerIdentity with the ambient credentials = %+v, %v", who, err)
	}

	// A wrong external id is refused as AWS refuses it.
	wrong := stscreds.NewAssumeRoleProvider(stsClient, "arn:aws:iam::222222222222:role/toolq-reader",
		func(o *stscreds.AssumeRoleOptions) { o.ExternalID = aws.String("nope") })
	_, err = wrong.Retrieve(ctx)
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "AccessDenied" {
		t.Errorf("AssumeRole with a wrong external id = %v; want AccessDenied", err)
	}
}

// TestAssumeRoleValidation: STS's texts for what AssumeRole refuses, word
// for word, the AWS-verified ones of a peer emulator's suite among them
// (several broken constraints are joined as AWS's validation joins them in
// every service: "N validation errors detected: …; …").
func TestAssumeRoleValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := sqsim.New(sqsim.Options{})
	prod := sqsim.New(sqsim.Options{AccountID: "222222222222"})
	accounts := sqsim.NewAccounts(home, prod)
	const role = "arn:aws:iam::222222222222:role/toolq-reader"
	if err := accounts.AddRole(role, ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(accounts)
	defer srv.Close()
	stsClient := sts.New(sts.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDHOME", "secret", "")})
	tests := []struct {
		name     string
		in       sts.AssumeRoleInput
		code     string
		message  string
		accepted bool
	}{
		{name: "a colon in the session name", in: sts.AssumeRoleInput{RoleArn: aws.String("arn:a:b:::something/test-role"), RoleSessionName: aws.String("Session1:2")},
			code: "ValidationError", message: `1 validation error detected: Value 'Session1:2' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\w+=,.@-]*`},
		{name: "spaces and a bang", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("my session!")},
			code: "ValidationError", message: `1 validation error detected: Value 'my session!' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\w+=,.@-]*`},
		{name: "one character", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("a")},
			code: "ValidationError", message: `1 validation error detected: Value 'a' at 'roleSessionName' failed to satisfy constraint: Member must have length greater than or equal to 2`},
		{name: "one bad character", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("!")},
			code: "ValidationError", message: `2 validation errors detected: Value '!' at 'roleSessionName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\w+=,.@-]*; Value '!' at 'roleSessionName' failed to satisfy constraint: Member must have length greater than or equal to 2`},
		{name: "twelve hours and a second", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), DurationSeconds: aws.Int32(43201)},
			code: "ValidationError", message: `1 validation error detected: Value '43201' at 'durationSeconds' failed to satisfy constraint: Member must have value less than or equal to 43200`},
		{name: "less than fifteen minutes", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), DurationSeconds: aws.Int32(899)},
			code: "ValidationError", message: `1 validation error detected: Value '899' at 'durationSeconds' failed to satisfy constraint: Member must have value greater than or equal to 900`},
		{name: "more than the role's hour", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), DurationSeconds: aws.Int32(7200)},
			code: "ValidationError", message: "The requested DurationSeconds exceeds the MaxSessionDuration set for this role."},
		{name: "no ARN", in: sts.AssumeRoleInput{RoleArn: aws.String("nothing-valid-in-here"), RoleSessionName: aws.String("Session1")},
			code: "ValidationError", message: "nothing-valid-in-here is invalid"},
		{name: "no partition", in: sts.AssumeRoleInput{RoleArn: aws.String("arn::b:::something/test-role"), RoleSessionName: aws.String("Session1")},
			code: "ValidationError", message: "arn::b:::something/test-role is invalid"},
		{name: "a role of no account", in: sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::333333333333:role/x"), RoleSessionName: aws.String("Session1")},
			code: "AccessDenied", message: "User is not authorized to perform: sts:AssumeRole on resource: arn:aws:iam::333333333333:role/x"},
		{name: "a session policy that is not JSON", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), Policy: aws.String(`{"Version":"2012-10-17",`)},
			code: "MalformedPolicyDocument", message: "The policy is not in the valid JSON format."},
		{name: "a session policy that is a list", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), Policy: aws.String(`["sqs:*"]`)},
			code: "MalformedPolicyDocument", message: "The policy is not in the valid JSON format."},
		{name: "a session policy without statements", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), Policy: aws.String(`{"Version":"2012-10-17"}`)},
			code: "MalformedPolicyDocument", message: "The policy is not in the valid JSON format."},
		{name: "a session policy with more after it", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), Policy: aws.String(`{"Statement":[]} {}`)},
			code: "MalformedPolicyDocument", message: "The policy is not in the valid JSON format."},
		{name: "a session policy over 2048 characters", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq"), Policy: aws.String(`{"Statement":[` + strings.Repeat(" ", 2048) + `]}`)},
			code: "ValidationError", message: `1 validation error detected: Value '{"Statement":[` + strings.Repeat(" ", 256-len(`{"Statement":[`)) + `' at 'policy' failed to satisfy constraint: Member must have length less than or equal to 2048`},
		{name: "a session policy, well formed", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq+ci=1,a.b@c-d"),
			Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"sqs:ReceiveMessage","Resource":"*"}]}`)}, accepted: true},
		{name: "an hour, by the rules", in: sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("toolq+ci=1,a.b@c-d"), DurationSeconds: aws.Int32(3600)}, accepted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := stsClient.AssumeRole(ctx, &tt.in)
			if tt.accepted {
				if err != nil || !strings.HasSuffix(aws.ToString(out.AssumedRoleUser.Arn), "/toolq+ci=1,a.b@c-d") {
					t.Errorf("AssumeRole = %v, %v", out, err)
				}
				return
			}
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code || api.ErrorMessage() != tt.message {
				t.Errorf("err = %v\nwant %s: %s", err, tt.code, tt.message)
			}
		})
	}
}

// TestAssumedRoleInAnotherRegion: credentials of an assumed role, signed
// for another region, reach that region of the role's account.
func TestAssumedRoleInAnotherRegion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := sqsim.New(sqsim.Options{})
	prod := sqsim.New(sqsim.Options{AccountID: "222222222222"})
	accounts := sqsim.NewAccounts(home, prod)
	if err := accounts.AddRole("arn:aws:iam::222222222222:role/toolq", ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(accounts)
	defer srv.Close()
	ambient := credentials.NewStaticCredentialsProvider("AKIDHOME", "secret", "")
	stsClient := sts.New(sts.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), Credentials: ambient})
	assumed := aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(stsClient, "arn:aws:iam::222222222222:role/toolq"))
	eu := sqs.New(sqs.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), Credentials: assumed})
	if _, err := eu.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("calls")}); err != nil {
		t.Fatal(err)
	}
	if snap, err := prod.Region("eu-west-1").Snapshot("calls"); err != nil || len(snap) != 0 {
		t.Errorf("the role's account has no calls queue in eu-west-1: %v", err)
	}
	if _, err := prod.Snapshot("calls"); err == nil {
		t.Error("the queue is in the role's account's home region too")
	}
}

// TestSTSPartitions: the ARNs STS gives are of the partition of the region the request is
// signed for, and a role of another partition can be assumed.
func TestSTSPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	home := sqsim.New(sqsim.Options{Region: "cn-north-1"})
	prod := sqsim.New(sqsim.Options{AccountID: "222222222222", Region: "cn-north-1"})
	accounts := sqsim.NewAccounts(home, prod)
	const role = "arn:aws-cn:iam::222222222222:role/toolq"
	if err := accounts.AddRole(role, ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(accounts)
	defer srv.Close()
	for _, tt := range []struct{ region, partition string }{{"cn-north-1", "aws-cn"}, {"cn-northwest-1", "aws-cn"}, {"us-east-1", "aws"}} {
		stsClient := sts.New(sts.Options{Region: tt.region, BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider("AKIDHOME", "secret", "")})
		who, err := stsClient.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if want := "arn:" + tt.partition + ":iam::000000000000:root"; err != nil || aws.ToString(who.Arn) != want {
			t.Errorf("%s: GetCallerIdentity = %v, %v; want %s", tt.region, who, err, want)
		}
		if tt.partition == "aws" {
			continue // the role is China's
		}
		out, err := stsClient.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(role), RoleSessionName: aws.String("ci")})
		if want := "arn:" + tt.partition + ":sts::222222222222:assumed-role/toolq/ci"; err != nil || aws.ToString(out.AssumedRoleUser.Arn) != want {
			t.Errorf("%s: AssumeRole = %v, %v; want %s", tt.region, out, err, want)
		}
	}
}
