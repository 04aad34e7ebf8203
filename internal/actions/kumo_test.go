package actions_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/sivchari/kumo"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/store"
)

// TestKumoWithoutMoveTasks runs a redrive against kumo, an emulator nobody here wrote, which has
// no move tasks: the operator gets a clear 502 naming AWS's code, the attempt is audited as
// failed, and nothing panics.
func TestKumoWithoutMoveTasks(t *testing.T) {
	t.Parallel()
	srv := kumo.NewServer()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "")})
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "toolq.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })

	now := time.Now().UTC()
	arnOf := map[string]string{}
	ids := map[string]int64{}
	for _, name := range []string{"jobs-dlq", "jobs"} {
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatalf("kumo CreateQueue: %v", err)
		}
		attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
		if err != nil {
			t.Fatalf("kumo GetQueueAttributes: %v", err)
		}
		arnOf[name] = attrs.Attributes["QueueArn"]
		ids[name], err = st.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Name: name, URL: aws.ToString(out.QueueUrl), ARN: arnOf[name], FirstSeen: now, LastSeen: now})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.SaveQueueAttributes(ctx, store.QueueAttributes{QueueID: ids["jobs"], At: now, Attributes: map[string]string{}, DeadLetterTargetARN: arnOf["jobs-dlq"], MaxReceiveCount: 3, Depth: store.AttributeSample{QueueID: ids["jobs"], At: now}}); err != nil {
		t.Fatal(err)
	}

	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{"us-east-1": client}, Store: st})
	_, err = svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "jobs-dlq"})
	wantRefusal(t, err, "aws_error", actions.Upstream)
	t.Logf("kumo: %v", err)
	if msg := err.(*actions.Error).Message; !strings.HasPrefix(msg, "AWS refused to list the move tasks") {
		t.Errorf("message = %q", msg)
	}
	entries, _ := st.ListAudit(ctx, store.AuditFilter{Limit: 1})
	if len(entries) != 1 || entries[0].Result != store.AuditFailed {
		t.Errorf("audit = %+v", entries)
	}
}
