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
