package sqsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

func TestSendReceiveDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", nil)
	body := `{"toolCallId":"tc_1","toolName":"create_document","toolArgs":{"title":"<b>&</b>"}}`
	sent, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl:    aws.String(url),
		MessageBody: aws.String(body),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"tool":    {DataType: aws.String("String"), StringValue: aws.String("create_document")},
			"attempt": {DataType: aws.String("Number"), StringValue: aws.String("1")},
			"blob":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The SDK has checked MD5OfMessageBody; the attributes' digest must
	// be there and match on receive.
	if aws.ToString(sent.MD5OfMessageAttributes) == "" {
		t.Error("no MD5OfMessageAttributes")
	}
	h.advance(2 * time.Second)
	msgs := h.receive(t, url, 10)
	if len(msgs) != 1 {
		t.Fatalf("received %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if aws.ToString(m.Body) != body || aws.ToString(m.MessageId) != aws.ToString(sent.MessageId) {
		t.Errorf("received %q id %s", aws.ToString(m.Body), aws.ToString(m.MessageId))
	}
	if aws.ToString(m.MD5OfMessageAttributes) != aws.ToString(sent.MD5OfMessageAttributes) {
		t.Errorf("MD5OfMessageAttributes on receive %s, on send %s", aws.ToString(m.MD5OfMessageAttributes), aws.ToString(sent.MD5OfMessageAttributes))
	}
	if got := string(m.MessageAttributes["blob"].BinaryValue); got != "\x00\x01\x02" {
		t.Errorf("binary attribute = %q", got)
	}
	wantAttrs := map[string]string{
		"ApproximateReceiveCount":          "1",
		"SentTimestamp":                    strconv.FormatInt(t0.UnixMilli(), 10),
		"ApproximateFirstReceiveTimestamp": strconv.FormatInt(t0.Add(2*time.Second).UnixMilli(), 10),
		"SenderId":                         "AIDAVNXCXWDHDUWG24DTE", // PrincipalID("AKIDTEST")
	}
	for k, v := range wantAttrs {
		if m.Attributes[k] != v {
			t.Errorf("attribute %s = %q, want %q", k, m.Attributes[k], v)
		}
	}
	if got := h.attributes(t, url)["ApproximateNumberOfMessagesNotVisible"]; got != "1" {
		t.Errorf("NotVisible = %s, want 1", got)
	}
	h.delete(t, url, m)
	if n, _ := h.sim.Snapshot("q"); len(n) != 0 {
		t.Errorf("after delete the queue holds %d messages", len(n))
	}
}

// TestMD5OfMessageAttributes pins the encoding the digest covers to the
// byte layout the AWS SDKs (Java's MessageMD5ChecksumHandler) use.
func TestMD5OfMessageAttributes(t *testing.T) {
	t.Parallel()
	attrs := map[string]messageAttribute{
		"Name": {DataType: "String", StringValue: aws.String("Jane")},
	}
	// length-prefixed "Name", "String", 0x01, length-prefixed "Jane".
	want := md5Hex("\x00\x00\x00\x04Name\x00\x00\x00\x06String\x01\x00\x00\x00\x04Jane")
	if got := md5OfAttributes(attrs); got != want {
		t.Errorf("md5OfAttributes = %s, want %s", got, want)
	}
}

func TestAttributeSelection(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", nil)
	h.send(t, url, "x", func(in *sqs.SendMessageInput) {
		in.MessageAttributes = map[string]types.MessageAttributeValue{
			"tool.name": {DataType: aws.String("String"), StringValue: aws.String("a")},
			"tool.args": {DataType: aws.String("String"), StringValue: aws.String("b")},
			"session":   {DataType: aws.String("String"), StringValue: aws.String("c")},
		}
	})
	tests := []struct {
		names []string
		want  []string
	}{
		{names: []string{"All"}, want: []string{"session", "tool.args", "tool.name"}},
		{names: []string{".*"}, want: []string{"session", "tool.args", "tool.name"}},
		{names: []string{"tool.*"}, want: []string{"tool.args", "tool.name"}},
		{names: []string{"session"}, want: []string{"session"}},
		{names: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.names), func(t *testing.T) {
			out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MessageAttributeNames: tt.names})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) != 1 {
				t.Fatalf("got %d messages", len(out.Messages))
			}
			var got []string
			for name := range out.Messages[0].MessageAttributes {
				got = append(got, name)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("attributes %v, want %v", got, tt.want)
			}
			h.release(t, url, out.Messages)
		})
	}
}

// release makes received messages visible again, as toolq releases what it
// sampled.
func (h *harness) release(t testing.TB, url string, msgs []types.Message) {
	t.Helper()
	var entries []types.ChangeMessageVisibilityBatchRequestEntry
	for i, m := range msgs {
		entries = append(entries, types.ChangeMessageVisibilityBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	}
	out, err := h.sqs.ChangeMessageVisibilityBatch(context.Background(), &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("ChangeMessageVisibilityBatch: %v %+v", err, out)
	}
}

func TestVisibilityTimeout(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", map[string]string{"VisibilityTimeout": "30"})
	h.send(t, url, "a")
	first := h.receive(t, url, 1)
	if len(first) != 1 {
		t.Fatal("nothing received")
	}
	if got := h.receive(t, url, 1); len(got) != 0 {
		t.Fatalf("in-flight message received again: %v", bodies(got))
	}
	h.advance(29 * time.Second)
	if got := h.receive(t, url, 1); len(got) != 0 {
		t.Fatal("received before the visibility timeout ended")
	}
	h.advance(time.Second)
	second := h.receive(t, url, 1)
	if len(second) != 1 || second[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after the timeout: %v", second)
	}
	// The first receipt handle is stale: deleting with it succeeds and
	// deletes nothing, as in SQS.
	h.delete(t, url, first[0])
	if snap, _ := h.sim.Snapshot("q"); len(snap) != 1 {
		t.Fatalf("stale handle deleted the message")
	}
	// Extend, then release.
	if _, err := h.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: second[0].ReceiptHandle, VisibilityTimeout: 600}); err != nil {
		t.Fatal(err)
	}
	h.advance(5 * time.Minute)
	if got := h.receive(t, url, 1); len(got) != 0 {
		t.Fatal("received during the extended timeout")
	}
	h.release(t, url, second)
	third := h.receive(t, url, 1)
	if len(third) != 1 || third[0].Attributes["ApproximateReceiveCount"] != "3" {
		t.Fatalf("after release: %v", third)
	}
	h.release(t, url, third)
	_, err := h.sqs.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: third[0].ReceiptHandle, VisibilityTimeout: 10})
	var notInflight *types.MessageNotInflight
	if !errors.As(err, &notInflight) {
		t.Errorf("ChangeMessageVisibility on a visible message: %v, want MessageNotInflight", err)
	}
	_, err = h.sqs.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String("garbage!")})
	var invalid *types.ReceiptHandleIsInvalid
	if !errors.As(err, &invalid) {
		t.Errorf("DeleteMessage with a garbled handle: %v, want ReceiptHandleIsInvalid", err)
	}
}

func TestDelay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		queueDelay string
		msgDelay   int32
		want       time.Duration
	}{
		{name: "queue delay", queueDelay: "10", want: 10 * time.Second},
		{name: "message delay overrides", queueDelay: "10", msgDelay: 3, want: 3 * time.Second},
		{name: "no delay", queueDelay: "0", want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			url := h.createQueue(t, "q", map[string]string{"DelaySeconds": tt.queueDelay})
			h.send(t, url, "a", func(in *sqs.SendMessageInput) { in.DelaySeconds = tt.msgDelay })
			if tt.want > 0 {
				if got := h.attributes(t, url)["ApproximateNumberOfMessagesDelayed"]; got != "1" {
					t.Errorf("Delayed = %s, want 1", got)
				}
				h.advance(tt.want - time.Second)
				if got := h.receive(t, url, 1); len(got) != 0 {
					t.Fatal("received before the delay ended")
				}
				h.advance(time.Second)
			}
			if got := h.receive(t, url, 1); len(got) != 1 {
				t.Fatal("not received after the delay")
			}
		})
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", map[string]string{"MessageRetentionPeriod": "60"})
	h.send(t, url, "old")
	h.advance(30 * time.Second)
	h.send(t, url, "young")
	h.advance(30 * time.Second)
	snap, _ := h.sim.Snapshot("q")
	if len(snap) != 1 || snap[0].Body != "young" {
		t.Fatalf("after 60 s the queue holds %+v, want only young", snap)
	}
	h.advance(30 * time.Second)
	if got := h.attributes(t, url)["ApproximateNumberOfMessages"]; got != "0" {
		t.Errorf("after 90 s %s messages remain", got)
	}
}

func TestLongPolling(t *testing.T) {
	t.Parallel()
	t.Run("wakes on send", func(t *testing.T) {
		h := newHarness(t)
		url := h.createQueue(t, "q", nil)
		done := make(chan []types.Message)
		go func() {
			out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
			if err != nil {
				t.Error(err)
			}
			done <- out.Messages
		}()
		// Wait until the poll is parked, then send.
		for h.sim.CallCount("ReceiveMessage") == 0 {
			time.Sleep(time.Millisecond)
		}
		h.send(t, url, "hello")
		if got := <-done; len(got) != 1 || aws.ToString(got[0].Body) != "hello" {
			t.Fatalf("long poll got %v", bodies(got))
		}
	})
	t.Run("ends when the clock passes the wait", func(t *testing.T) {
		h := newHarness(t)
		url := h.createQueue(t, "q", map[string]string{"ReceiveMessageWaitTimeSeconds": "20"})
		done := make(chan int)
		go func() {
			out, err := h.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
			if err != nil {
				t.Error(err)
			}
			done <- len(out.Messages)
		}()
		for h.sim.CallCount("ReceiveMessage") == 0 {
			time.Sleep(time.Millisecond)
		}
		h.advance(20 * time.Second)
		if n := <-done; n != 0 {
			t.Fatalf("got %d messages", n)
		}
	})
	t.Run("honours the request context", func(t *testing.T) {
		h := newHarness(t)
		url := h.createQueue(t, "q", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := h.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
	})
}

func TestSendMessageBatch(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "q", map[string]string{"MaximumMessageSize": "1024"})
	out, err := h.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("ok"), MessageBody: aws.String("fine")},
		{Id: aws.String("bad-char"), MessageBody: aws.String("nul \x00 inside")},
		{Id: aws.String("bad-attr"), MessageBody: aws.String("x"), MessageAttributes: map[string]types.MessageAttributeValue{
			"AWS.reserved": {DataType: aws.String("String"), StringValue: aws.String("v")},
		}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Successful) != 1 || aws.ToString(out.Successful[0].Id) != "ok" {
		t.Errorf("Successful = %+v", out.Successful)
	}
	failed := map[string]string{}
	for _, f := range out.Failed {
		failed[aws.ToString(f.Id)] = aws.ToString(f.Code)
	}
	if failed["bad-char"] != "InvalidMessageContents" || failed["bad-attr"] != "InvalidParameterValue" {
		t.Errorf("Failed = %v", failed)
	}

	tests := []struct {
		name    string
		entries []types.SendMessageBatchRequestEntry
		want    any
	}{
		{name: "empty", entries: []types.SendMessageBatchRequestEntry{}, want: new(*types.EmptyBatchRequest)},
		{name: "eleven", entries: batchOf(11, 10), want: new(*types.TooManyEntriesInBatchRequest)},
		{name: "same ids", entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("a"), MessageBody: aws.String("1")}, {Id: aws.String("a"), MessageBody: aws.String("2")}}, want: new(*types.BatchEntryIdsNotDistinct)},
		{name: "bad id", entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("a b"), MessageBody: aws.String("1")}}, want: new(*types.InvalidBatchEntryId)},
		{name: "too long", entries: batchOf(2, 600), want: new(*types.BatchRequestTooLong)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: tt.entries})
			if !errors.As(err, tt.want) {
				t.Fatalf("err = %v, want %T", err, tt.want)
			}
		})
	}
	// AWS's text does not quote the id back.
	_, err = h.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
		Entries: []types.SendMessageBatchRequestEntry{{Id: aws.String("a b"), MessageBody: aws.String("1")}}})
	const want = "A batch entry id can only contain alphanumeric characters, hyphens and underscores. It can be at most 80 letters long."
	if e, ok := errors.AsType[*types.InvalidBatchEntryId](err); !ok || e.ErrorMessage() != want {
		t.Errorf("bad id: %v, want %q", err, want)
	}
}

func batchOf(n, size int) []types.SendMessageBatchRequestEntry {
	var entries []types.SendMessageBatchRequestEntry
	for i := range n {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(strings.Repeat("x", size))})
	}
	return entries
}

func TestMessageTooLarge(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", map[string]string{"MaximumMessageSize": "1024"})
	_, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(strings.Repeat("x", 1025))})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
		t.Fatalf("err = %v, want InvalidParameterValue", err)
	}
	if snap, _ := h.sim.Snapshot("q"); len(snap) != 0 {
		t.Error("the queue changed")
	}
}

func TestDeadLetterAfterMaxReceiveCount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fifo bool
	}{
		{name: "standard"},
		{name: "fifo", fifo: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			suffix, attrs := "", map[string]string{"VisibilityTimeout": "10"}
			if tt.fifo {
				suffix = ".fifo"
				attrs["FifoQueue"] = "true"
			}
			var dlqAttrs map[string]string
			if tt.fifo {
				dlqAttrs = map[string]string{"FifoQueue": "true"}
			}
			dlq := h.createQueue(t, "dlq"+suffix, dlqAttrs)
			attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + h.queueARN(t, dlq) + `","maxReceiveCount":"2"}`
			src := h.createQueue(t, "src"+suffix, attrs)
			opts := []func(*sqs.SendMessageInput){func(in *sqs.SendMessageInput) {
				in.MessageAttributes = map[string]types.MessageAttributeValue{"tool": {DataType: aws.String("String"), StringValue: aws.String("append_section")}}
			}}
			if tt.fifo {
				opts = append(opts, inGroup("sess_1", "tc_1"))
			}
			sent := h.send(t, src, "poison", opts...)
			h.advance(time.Minute)
			for i := range 2 {
				if got := h.receive(t, src, 1); len(got) != 1 {
					t.Fatalf("receive %d got nothing", i+1)
				}
				h.advance(10 * time.Second)
			}
			if got := h.receive(t, src, 1); len(got) != 0 {
				t.Fatalf("third receive returned %v, want the message moved", bodies(got))
			}
			snap, _ := h.sim.Snapshot("dlq" + suffix)
			if len(snap) != 1 {
				t.Fatalf("DLQ holds %d messages", len(snap))
			}
			m := snap[0]
			if m.MessageID != aws.ToString(sent.MessageId) || m.Body != "poison" || m.MessageAttributes["tool"] != "append_section" || m.ReceiveCount != 2 {
				t.Errorf("moved message %+v", m)
			}
			if m.DeadLetterSourceARN != h.queueARN(t, src) {
				t.Errorf("DeadLetterSourceARN = %s", m.DeadLetterSourceARN)
			}
			if tt.fifo && (m.GroupID != "sess_1" || m.DeduplicationID != "tc_1" || m.SequenceNumber == "") {
				t.Errorf("fifo ids lost: %+v", m)
			}
			got := h.receive(t, dlq, 1)
			if len(got) != 1 || got[0].Attributes["DeadLetterQueueSourceArn"] != h.queueARN(t, src) {
				t.Fatalf("DLQ receive %+v", got)
			}
		})
	}
}

// TestDeadLetterRetention shows the documented trap: a standard message
// keeps its enqueue time in the DLQ, so a DLQ whose retention is not longer
// than the source's loses it early; a FIFO message starts afresh.
func TestDeadLetterRetention(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			h := newHarness(t)
			suffix, fifoAttr := "", map[string]string{}
			if fifo {
				suffix, fifoAttr = ".fifo", map[string]string{"FifoQueue": "true"}
			}
			dlqAttrs := map[string]string{"MessageRetentionPeriod": "600"}
			srcAttrs := map[string]string{"MessageRetentionPeriod": "600", "VisibilityTimeout": "0"}
			for k, v := range fifoAttr {
				dlqAttrs[k], srcAttrs[k] = v, v
			}
			dlq := h.createQueue(t, "dlq"+suffix, dlqAttrs)
			srcAttrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + h.queueARN(t, dlq) + `","maxReceiveCount":1}`
			src := h.createQueue(t, "src"+suffix, srcAttrs)
			var opts []func(*sqs.SendMessageInput)
			if fifo {
				opts = append(opts, inGroup("g", "d"))
			}
			h.send(t, src, "m", opts...)
			h.advance(5 * time.Minute)
			h.receive(t, src, 1) // count 1, visible at once (timeout 0)
			h.receive(t, src, 1) // moves it
			h.advance(5 * time.Minute)
			snap, _ := h.sim.Snapshot("dlq" + suffix)
			if want := map[bool]int{false: 0, true: 1}[fifo]; len(snap) != want {
				t.Fatalf("DLQ holds %d messages 10 minutes after the send, want %d", len(snap), want)
			}
		})
	}
}

func TestMissingQueueIsTyped(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{
		QueueUrl: aws.String(h.url + "/000000000000/nope"), MessageBody: aws.String("x"),
	})
	var missing *types.QueueDoesNotExist
	if !errors.As(err, &missing) {
		t.Fatalf("err = %v, want *types.QueueDoesNotExist", err)
	}
}

// TestQueueURLForms: SQS takes a queue's URL, or its bare name. The simulator is one endpoint
// that clients reach by several names (127.0.0.1 or localhost, a docker service's name,
// LocalStack's), and some clients (watermill-aws) build AWS's own URL of the queue, so a URL
// on any host names the queue, but an AWS (or LocalStack) host of another region or partition,
// whose queues this region does not have, as on AWS; so does another account. What is no
// queue URL at all (no /account/name path, a trailing slash) is InvalidAddress. Each region's
// client is checked with its own region's AWS hosts.
func TestQueueURLForms(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, port, _ := strings.Cut(strings.TrimPrefix(h.url, "http://"), ":")
	type form struct {
		name, queueURL string
		want           any // nil: found
	}
	// forms are the six URL forms of issue 37 and the refused ones, for a client of region
	// (whose partition's domain is domain, another's otherDomain) and the queue's URL as
	// CreateQueue gave it.
	forms := func(region, domain, otherDomain, own string) []form {
		path := "/000000000000/calls"
		return []form{
			{"the queue's URL", own, nil},
			{"localhost for 127.0.0.1", "http://localhost:" + port + path, nil},
			{"AWS's host", "https://sqs." + region + "." + domain + path, nil},
			{"AWS's legacy host", "https://" + region + ".queue." + domain + path, nil},
			{"AWS's dual-stack host", "https://sqs." + region + ".api.aws" + path, region != "cn-north-1"},
			{"LocalStack's host", "http://sqs." + region + ".localhost.localstack.cloud:4566" + path, nil},
			{"a docker service's name", "http://sqs-sim:4566" + path, nil},
			{"its name", "calls", nil},
			{"another region's AWS host", "https://sqs.ap-south-1." + domain + path, new(*types.QueueDoesNotExist)},
			{"another region's legacy AWS host", "https://ap-south-1.queue." + domain + path, new(*types.QueueDoesNotExist)},
			{"another region's LocalStack host", "http://sqs.ap-south-1.localhost.localstack.cloud:4566" + path, new(*types.QueueDoesNotExist)},
			{"another partition's AWS host", "https://sqs." + region + "." + otherDomain + path, new(*types.QueueDoesNotExist)},
			{"another account", "http://localhost:" + port + "/111111111111/calls", new(*types.QueueDoesNotExist)},
			{"another account on AWS's host", "https://sqs." + region + "." + domain + "/111111111111/calls", new(*types.QueueDoesNotExist)},
			{"the name of no queue", "nope", new(*types.QueueDoesNotExist)},
			{"a trailing slash", own + "/", new(*types.InvalidAddress)},
			{"a trailing slash on AWS's host", "https://sqs." + region + "." + domain + path + "/", new(*types.InvalidAddress)},
			{"no queue in the path", h.url + "/calls", new(*types.InvalidAddress)},
			{"no host", "http:///000000000000/calls", new(*types.InvalidAddress)},
		}
	}
	for _, rt := range []struct{ region, domain, otherDomain string }{
		{"us-east-1", "amazonaws.com", "amazonaws.com.cn"}, {"us-west-2", "amazonaws.com", "amazonaws.com.cn"}, {"cn-north-1", "amazonaws.com.cn", "amazonaws.com"},
	} {
		t.Run(rt.region, func(t *testing.T) {
			client, _, _ := h.regionClients(rt.region)
			out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("calls")})
			if err != nil {
				t.Fatal(err)
			}
			sent := 0
			for _, f := range forms(rt.region, rt.domain, rt.otherDomain, aws.ToString(out.QueueUrl)) {
				// A bool is whether the form is found, where that depends on the region.
				if found, ok := f.want.(bool); ok {
					f.want = map[bool]any{true: nil, false: new(*types.QueueDoesNotExist)}[found]
				}
				t.Run(f.name, func(t *testing.T) {
					_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.queueURL), MessageBody: aws.String("x")})
					switch {
					case f.want == nil && err != nil:
						t.Errorf("SendMessage to %q: %v", f.queueURL, err)
					case f.want != nil && !errors.As(err, f.want):
						t.Errorf("SendMessage to %q: err = %v, want %T", f.queueURL, err, f.want)
					}
					if _, ok := errors.AsType[*types.QueueDoesNotExist](err); ok {
						if re, _ := errors.AsType[*awshttp.ResponseError](err); re == nil || re.HTTPStatusCode() != http.StatusBadRequest {
							t.Errorf("NonExistentQueue with status %v, want 400", re)
						}
					}
				})
				if f.want == nil {
					sent++
				}
			}
			if snap, _ := h.sim.Region(rt.region).Snapshot("calls"); len(snap) != sent {
				t.Errorf("calls holds %d messages, want the %d sent to it", len(snap), sent)
			}
		})
	}
	// queue.amazonaws.com, AWS's first host, is us-east-1's.
	us, _, _ := h.regionClients("us-east-1")
	west, _, _ := h.regionClients("us-west-2")
	for client, want := range map[*sqs.Client]bool{us: true, west: false} {
		_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String("https://queue.amazonaws.com/000000000000/calls"), MessageBody: aws.String("x")})
		if (err == nil) != want {
			t.Errorf("queue.amazonaws.com from %s: %v, want found %v", client.Options().Region, err, want)
		}
	}
}
