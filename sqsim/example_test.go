package sqsim_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/sqsim"
)

// A FIFO tool-call queue on the simulator, through the stock SQS client: the client needs only
// the simulator's URL as its BaseEndpoint and any static credentials.
func Example() {
	ctx := context.Background()
	sim := sqsim.New(sqsim.Options{})
	srv := httptest.NewServer(sim)
	defer srv.Close()

	client := sqs.New(sqs.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("tool-calls.fifo"),
		Attributes: map[string]string{"FifoQueue": "true"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:               q.QueueUrl,
		MessageBody:            aws.String(`{"toolCallId":"tc_1","toolName":"create_document","sessionId":"sess_abc"}`),
		MessageGroupId:         aws.String("sess_abc"),
		MessageDeduplicationId: aws.String("tc_1"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl:                    q.QueueUrl,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameMessageGroupId},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range out.Messages {
		fmt.Println(m.Attributes["MessageGroupId"], aws.ToString(m.Body))
	}
	// Output:
	// sess_abc {"toolCallId":"tc_1","toolName":"create_document","sessionId":"sess_abc"}
}
