package sqsim

import (
	"context"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// BenchmarkSendReceiveDelete measures a message's round trip through the
// stock SDK client: SendMessage, ReceiveMessage, DeleteMessage.
func BenchmarkSendReceiveDelete(b *testing.B) {
	for _, fifo := range []bool{false, true} {
		name, attrs := "standard", map[string]string{}
		if fifo {
			name, attrs = "fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}
		}
		b.Run(name, func(b *testing.B) {
			sim := New(Options{})
			srv := httptest.NewServer(sim)
			defer srv.Close()
			client, _ := newClients(srv.URL)
			ctx := context.Background()
			qname := "bench"
			if fifo {
				qname += ".fifo"
			}
			out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(qname), Attributes: attrs})
			if err != nil {
				b.Fatal(err)
			}
			url := out.QueueUrl
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				in := &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String(`{"toolCallId":"tc","n":` + strconv.Itoa(i) + `}`)}
				if fifo {
					in.MessageGroupId = aws.String("g")
					in.MessageDeduplicationId = aws.String("tc_" + strconv.Itoa(i))
				}
				if _, err := client.SendMessage(ctx, in); err != nil {
					b.Fatal(err)
				}
				got, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
				if err != nil || len(got.Messages) != 1 {
					b.Fatalf("receive: %v %d", err, len(got.Messages))
				}
				if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendMessageBatch measures batched sends of ten into a growing
// backlog.
func BenchmarkSendMessageBatch(b *testing.B) {
	sim := New(Options{})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	client, _ := newClients(srv.URL)
	ctx := context.Background()
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bench")})
	if err != nil {
		b.Fatal(err)
	}
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(`{"toolCallId":"tc"}`)})
	}
	for b.Loop() {
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: out.QueueUrl, Entries: entries}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueueReadsAmongQueues measures a GetQueueAttributes(All) and a
// ListDeadLetterSourceQueues of one queue in a region of 10 and of 10,000 queues, each holding a
// message: a request's cost must not grow with the queues it does not name (every request ticks
// first, and tick once walked them all; the sources of a dead-letter queue were found by walking
// them all too).
func BenchmarkQueueReadsAmongQueues(b *testing.B) {
	for _, n := range []int{10, 10000} {
		sim := New(Options{})
		srv := httptest.NewServer(sim)
		client, _ := newClients(srv.URL)
		ctx := context.Background()
		var url *string
		for i := range n {
			out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q-" + strconv.Itoa(i))})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("{}")}); err != nil {
				b.Fatal(err)
			}
			url = out.QueueUrl
		}
		reads := map[string]func() error{
			"GetQueueAttributes": func() error {
				_, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
				return err
			},
			"ListDeadLetterSourceQueues": func() error {
				_, err := client.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: url})
				return err
			},
		}
		for _, op := range []string{"GetQueueAttributes", "ListDeadLetterSourceQueues"} {
			b.Run(op+"/queues="+strconv.Itoa(n), func(b *testing.B) {
				for b.Loop() {
					if err := reads[op](); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		srv.Close()
	}
}
