package actions_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/sqsim"
)

// TestRedriveInItsOwnAccount: two accounts each have orders → orders-dlq with messages in the
// DLQ; the second is reached through an assumed role. A redrive of the second account's DLQ
// moves its messages with its own account's client and leaves the first account's alone; a
// destination in the other account is refused before AWS is asked; the shared name is
// ambiguous, each ARN is not.
func TestRedriveInItsOwnAccount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clock := sqsim.NewManualClock(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	home := sqsim.New(sqsim.Options{Clock: clock, Seed: 1})
	prod := sqsim.New(sqsim.Options{Clock: clock, Seed: 2, AccountID: "111111111111"})
	accounts := sqsim.NewAccounts(home, prod)
	const role = "arn:aws:iam::111111111111:role/toolq-operator"
	if err := accounts.AddRole(role, ""); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(accounts)
	defer srv.Close()
	opts := awsconf.Options{Region: "us-east-1", EndpointURL: srv.URL, StaticCredentials: true}
	homeClients, err := awsconf.Load(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	prodClients, err := awsconf.LoadAssumed(ctx, opts, role, "")
	if err != nil {
		t.Fatal(err)
	}
	st := storetest.Open(t)

	type account struct {
		name, id string
		client   *sqs.Client
		sim      *sqsim.Simulator
		messages int
		dlqARN   string
		srcARN   string
	}
	accts := []*account{
		{name: "home", id: "000000000000", client: homeClients.SQS, sim: home, messages: 5},
		{name: "prod", id: "111111111111", client: prodClients.SQS, sim: prod, messages: 7},
	}
	for _, a := range accts {
		a.dlqARN = "arn:aws:sqs:us-east-1:" + a.id + ":orders-dlq"
		a.srcARN = "arn:aws:sqs:us-east-1:" + a.id + ":orders"
		createAndStore(t, st, a.name, a.client, "orders-dlq", nil, "")
		srcURL := createAndStore(t, st, a.name, a.client, "orders", map[string]string{
			"RedrivePolicy": `{"deadLetterTargetArn":"` + a.dlqARN + `","maxReceiveCount":1}`}, a.dlqARN)
		for range a.messages {
			if _, err := a.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(srcURL), MessageBody: aws.String(`{"toolName":"x"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		// Received once, each message moves to the DLQ at its next receive.
		for range 4 {
			if _, err := a.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL), MaxNumberOfMessages: 10, VisibilityTimeout: 1}); err != nil {
				t.Fatal(err)
			}
			clock.Advance(2 * time.Second)
			home.Tick()
			prod.Tick()
		}
		if n := count(t, a.sim, "orders-dlq"); n != a.messages {
			t.Fatalf("%s orders-dlq holds %d, want %d", a.name, n, a.messages)
		}
	}
	svc := actions.New(actions.Options{
		Clients: map[string]actions.SQSAPI{"home/us-east-1": homeClients.ActionsSQS, "prod/us-east-1": prodClients.ActionsSQS},
		Store:   st, Now: clock.Now,
	})

	refusals := []struct {
		name string
		req  actions.StartRedriveRequest
		code string
		kind actions.Kind
	}{
		{"a name in two accounts", actions.StartRedriveRequest{Queue: "orders-dlq"}, "ambiguous_queue", actions.Conflict},
		{"a watched destination in the other account", actions.StartRedriveRequest{Queue: accts[0].dlqARN, Destination: accts[1].srcARN}, "destination_other_account", actions.Unprocessable},
		{"an unwatched destination in another account", actions.StartRedriveRequest{Queue: accts[1].dlqARN, Destination: "arn:aws:sqs:us-east-1:222222222222:orders"}, "destination_other_account", actions.Unprocessable},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.StartRedrive(ctx, operator, tt.req)
			wantRefusal(t, err, tt.code, tt.kind)
		})
	}
	if n := home.CallCount("StartMessageMoveTask") + prod.CallCount("StartMessageMoveTask"); n != 0 {
		t.Fatalf("StartMessageMoveTask calls after refusals = %d, want 0", n)
	}

	task, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: accts[1].dlqARN})
	if err != nil {
		t.Fatalf("StartRedrive of prod's DLQ: %v", err)
	}
	if task.ToMove != 7 {
		t.Errorf("task = %+v, want 7 to move", task)
	}
	if home.CallCount("StartMessageMoveTask") != 0 || prod.CallCount("StartMessageMoveTask") != 1 {
		t.Errorf("StartMessageMoveTask calls: home %d, prod %d; want 0 and 1", home.CallCount("StartMessageMoveTask"), prod.CallCount("StartMessageMoveTask"))
	}
	for range 5 {
		clock.Advance(time.Second)
		home.Tick()
		prod.Tick()
	}
	if got := count(t, prod, "orders"); got != 7 || count(t, prod, "orders-dlq") != 0 {
		t.Errorf("prod: orders %d, orders-dlq %d; want all 7 back in orders", got, count(t, prod, "orders-dlq"))
	}
	if got := count(t, home, "orders-dlq"); got != 5 || count(t, home, "orders") != 0 {
		t.Errorf("home: orders-dlq %d, orders %d; want the 5 untouched in the DLQ", got, count(t, home, "orders"))
	}
}

// createAndStore creates a queue in an account and stores it as the collector would, with its
// account's name and its RedrivePolicy's target.
func createAndStore(t *testing.T, st *store.Store, account string, client *sqs.Client, name string, attrs map[string]string, dlqARN string) string {
	t.Helper()
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("CreateQueue %s: %v", name, err)
	}
	got, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	id, err := st.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Account: account, Name: name, URL: aws.ToString(out.QueueUrl),
		ARN: got.Attributes["QueueArn"], FirstSeen: now, LastSeen: now})
	if err != nil {
		t.Fatal(err)
	}
	maxReceive := 0
	if dlqARN != "" {
		maxReceive = 1
	}
	if err := st.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: id, At: now, Attributes: got.Attributes,
		DeadLetterTargetARN: dlqARN, MaxReceiveCount: maxReceive}); err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func count(t *testing.T, sim *sqsim.Simulator, name string) int {
	t.Helper()
	msgs, err := sim.Snapshot(name)
	if err != nil {
		t.Fatalf("Snapshot(%s): %v", name, err)
	}
	return len(msgs)
}
