package sqsim

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// TestPermissions runs AWS's permission lifecycle (the AWS-verified steps of
// a peer emulator's suite) through the stock client: each label a
// statement of the queue's Policy in SQS's document, a second label beside
// it, AWS's texts for a label given twice or missing, and no Policy once
// the last label is removed.
func TestPermissions(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	queueURL := h.createQueue(t, "calls", nil)
	arn := "arn:aws:sqs:us-east-1:000000000000:calls"
	policy := func() string {
		t.Helper()
		out, err := h.sqs.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(queueURL), AttributeNames: []types.QueueAttributeName{"Policy"}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes["Policy"]
	}
	add := func(label string, accounts ...string) error {
		_, err := h.sqs.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(queueURL), Label: aws.String(label),
			AWSAccountIds: accounts, Actions: []string{"ReceiveMessage"}})
		return err
	}
	remove := func(label string) error {
		_, err := h.sqs.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: aws.String(queueURL), Label: aws.String(label)})
		return err
	}
	statement := func(label, principal string) string {
		return `{"Sid":"` + label + `","Effect":"Allow","Principal":{"AWS":` + principal + `},"Action":"SQS:ReceiveMessage","Resource":"` + arn + `"}`
	}
	document := func(statements string) string {
		return `{"Version":"2008-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[` + statements + `]}`
	}
	ok := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	wantError := func(err error, message string) {
		t.Helper()
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" || api.ErrorMessage() != message {
			t.Errorf("err = %v, want InvalidParameterValue %q", err, message)
		}
	}

	ok(add("crossaccountpermission", "668614515564", "000000000000"))
	if got, want := policy(), document(statement("crossaccountpermission", `["arn:aws:iam::668614515564:root","arn:aws:iam::000000000000:root"]`)); got != want {
		t.Errorf("Policy\n got %s\nwant %s", got, want)
	}
	ok(remove("crossaccountpermission"))
	if got := policy(); got != "" {
		t.Errorf("Policy after the last label's removal: %s, want none", got)
	}
	ok(add("crossaccountpermission", "000000000000"))
	wantError(add("crossaccountpermission", "668614515564"), "Value crossaccountpermission for parameter Label is invalid. Reason: Already exists.")
	ok(add("crossaccountpermission2", "000000000000"))
	one, two := statement("crossaccountpermission", `"arn:aws:iam::000000000000:root"`), statement("crossaccountpermission2", `"arn:aws:iam::000000000000:root"`)
	if got, want := policy(), document(one+","+two); got != want {
		t.Errorf("Policy with two labels\n got %s\nwant %s", got, want)
	}
	ok(remove("crossaccountpermission"))
	if got, want := policy(), document(two); got != want {
		t.Errorf("Policy after the first label's removal\n got %s\nwant %s", got, want)
	}
	ok(remove("crossaccountpermission2"))
	wantError(remove("crossaccountpermission2"), "Value crossaccountpermission2 for parameter Label is invalid. Reason: can't find label.")

	// Refused, changing nothing: an action no one but the owner may take, too
	// many actions, no account.
	_, err := h.sqs.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(queueURL), Label: aws.String("x"),
		AWSAccountIds: []string{"000000000000"}, Actions: []string{"DeleteQueue"}})
	wantError(err, "Value SQS:DeleteQueue for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action.")
	_, err = h.sqs.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: aws.String(queueURL), Label: aws.String("x"),
		AWSAccountIds: []string{"000000000000"}, Actions: []string{"SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes", "GetQueueUrl", "PurgeQueue", "ListDeadLetterSourceQueues"}})
	if _, ok := errors.AsType[*types.OverLimit](err); !ok {
		t.Errorf("eight actions: %v, want OverLimit", err)
	}
	// The SDK refuses an empty account list itself; other clients send it.
	if status, header, body := h.sqsCall(t, "AddPermission", `{"QueueUrl":"`+queueURL+`","Label":"x","AWSAccountIds":[],"Actions":["SendMessage"]}`); status != 400 ||
		header.Get("X-Amzn-Query-Error") != "InvalidParameterValue;Sender" || !strings.Contains(body, "Value [] for parameter PrincipalId is invalid. Reason: Unable to verify.") {
		t.Errorf("no account: %d %s %s", status, header.Get("X-Amzn-Query-Error"), body)
	}
	if got := policy(); got != "" {
		t.Errorf("refused AddPermissions left a Policy: %s", got)
	}

	// The Query protocol's names: AWSAccountId.N and ActionName.N.
	status, body := h.queryCall(t, url.Values{"Action": {"AddPermission"}, "QueueUrl": {queueURL}, "Label": {"q"},
		"AWSAccountId.1": {"000000000000"}, "ActionName.1": {"SendMessage"}, "ActionName.2": {"ReceiveMessage"}})
	want := document(`{"Sid":"q","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::000000000000:root"},"Action":["SQS:SendMessage","SQS:ReceiveMessage"],"Resource":"` + arn + `"}`)
	if got := policy(); status != 200 || got != want {
		t.Errorf("Query AddPermission: %d %s; Policy\n got %s\nwant %s", status, body, got, want)
	}
}
