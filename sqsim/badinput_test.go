package sqsim

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/encoding/cbor"
)

func TestBadInputOverRawHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", nil)
	h.send(t, url, "keep")
	sqsReq := func(target, body string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, h.url+"/", strings.NewReader(body))
		r.Header.Set("X-Amz-Target", target)
		r.Header.Set("Content-Type", "application/x-amz-json-1.0")
		return r
	}
	cwReq := func(op string, body []byte) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, h.url+cloudWatchPathPrefix+op, bytes.NewReader(body))
		r.Header.Set("Smithy-Protocol", "rpc-v2-cbor")
		r.Header.Set("Content-Type", "application/cbor")
		return r
	}
	huge := bytes.Repeat([]byte("x"), maxRequestBody+1)
	gzipped := func(r *http.Request) *http.Request {
		r.Header.Set("Content-Encoding", "gzip")
		return r
	}
	var bomb bytes.Buffer
	zw := gzip.NewWriter(&bomb)
	zw.Write(huge)
	zw.Close()
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantQuery  string // x-amzn-query-error code
	}{
		{"malformed json", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":`), 400, "SerializationException"},
		{"wrong json type", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":5,"MessageBody":"x"}`), 400, "SerializationException"},
		{"json array", sqsReq("AmazonSQS.ReceiveMessage", `[]`), 400, "SerializationException"},
		{"unknown target", sqsReq("AmazonSQS.DropTable", `{}`), 400, "InvalidAction"},
		{"other service target", sqsReq("DynamoDB_20120810.GetItem", `{}`), 400, "InvalidAction"},
		{"missing body parameter", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":"`+url+`"}`), 400, "MissingParameter"},
		{"nul in body", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"a\u0000b"}`), 400, "InvalidMessageContents"},
		{"max messages 11", sqsReq("AmazonSQS.ReceiveMessage", `{"QueueUrl":"`+url+`","MaxNumberOfMessages":11}`), 400, "InvalidParameterValue"},
		{"wait 21", sqsReq("AmazonSQS.ReceiveMessage", `{"QueueUrl":"`+url+`","WaitTimeSeconds":21}`), 400, "InvalidParameterValue"},
		{"visibility -1", sqsReq("AmazonSQS.ReceiveMessage", `{"QueueUrl":"`+url+`","VisibilityTimeout":-1}`), 400, "InvalidParameterValue"},
		{"huge int", sqsReq("AmazonSQS.ReceiveMessage", `{"QueueUrl":"`+url+`","MaxNumberOfMessages":99999999999999}`), 400, "SerializationException"},
		{"body too large", sqsReq("AmazonSQS.SendMessage", string(huge)), 413, "RequestEntityTooLarge"},
		{"larger than MaximumMessageSize", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"`+strings.Repeat("x", defaultMaximumMessageSize+1)+`"}`), 400, "InvalidParameterValue"},
		{"batch larger than MaximumMessageSize", sqsReq("AmazonSQS.SendMessageBatch", `{"QueueUrl":"`+url+`","Entries":[{"Id":"a","MessageBody":"`+strings.Repeat("x", defaultMaximumMessageSize/2+1)+`"},{"Id":"b","MessageBody":"`+strings.Repeat("x", defaultMaximumMessageSize/2+1)+`"}]}`), 400, "AWS.SimpleQueueService.BatchRequestTooLong"},
		{"attribute out of range", sqsReq("AmazonSQS.SetQueueAttributes", `{"QueueUrl":"`+url+`","Attributes":{"DelaySeconds":"60","VisibilityTimeout":"43201"}}`), 400, "InvalidAttributeValue"},
		{"delay out of range", sqsReq("AmazonSQS.SendMessage", `{"QueueUrl":"`+url+`","MessageBody":"x","DelaySeconds":901}`), 400, "InvalidParameterValue"},
		{"malformed cbor", cwReq("GetMetricData", []byte{0xbf, 0x61}), 400, "SerializationException"},
		{"cbor not a map", cwReq("GetMetricData", cbor.Encode(cbor.String("hi"))), 400, "SerializationException"},
		{"cbor wrong member type", cwReq("GetMetricData", cbor.Encode(cbor.Map{"MetricDataQueries": cbor.String("x")})), 400, "SerializationException"},
		{"unknown cloudwatch operation", cwReq("DeleteEverything", nil), 400, "InvalidAction"},
		{"cbor body too large", cwReq("GetMetricData", huge), 413, "RequestEntityTooLarge"},
		{"gzip that is not", gzipped(cwReq("PutMetricData", cbor.Encode(cbor.Map{}))), 400, "SerializationException"},
		{"gzip bomb", gzipped(cwReq("PutMetricData", bomb.Bytes())), 413, "RequestEntityTooLarge"},
		{"unknown content encoding", func() *http.Request {
			r := cwReq("PutMetricData", cbor.Encode(cbor.Map{}))
			r.Header.Set("Content-Encoding", "br")
			return r
		}(), 400, "SerializationException"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tt.wantStatus, body)
			}
			code, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Query-Error"), ";")
			if code != tt.wantQuery {
				t.Errorf("query error %q, want %q", code, tt.wantQuery)
			}
			if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/x-amz-json") {
				var e struct {
					Type string `json:"__type"`
				}
				if json.Unmarshal(body, &e) != nil || e.Type == "" {
					t.Errorf("error body %q has no __type", body)
				}
			}
		})
	}
	snap, _ := h.sim.Snapshot("q")
	if len(snap) != 1 || snap[0].Body != "keep" || snap[0].ReceiveCount != 0 {
		t.Errorf("bad input changed the queue: %+v", snap)
	}
	// A rejected SetQueueAttributes applies none of its attributes.
	if attrs := h.attributes(t, url); attrs["DelaySeconds"] != "0" || attrs["VisibilityTimeout"] != "30" {
		t.Errorf("bad input changed the attributes: DelaySeconds %s, VisibilityTimeout %s", attrs["DelaySeconds"], attrs["VisibilityTimeout"])
	}
}

// TestOtherRequests checks that what is neither SQS nor CloudWatch gets a
// plain 404 (the Query protocol has tests of its own).
func TestOtherRequests(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	resp, err := http.Get(h.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("GET /: %d", resp.StatusCode)
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		fault Fault
		check func(error) bool
	}{
		{"throttle", Fault{ThrottleRate: 1}, func(err error) bool {
			var e *types.RequestThrottled
			return errors.As(err, &e) && e.ErrorCode() == "RequestThrottled"
		}},
		{"error", Fault{ErrorRate: 1}, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "StatusCode: 500")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			url := h.createQueue(t, "q", nil)
			h.sim.SetFault("SendMessage", tt.fault)
			_, err := h.sqs.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")})
			if !tt.check(err) {
				t.Fatalf("err = %v", err)
			}
			if snap, _ := h.sim.Snapshot("q"); len(snap) != 0 {
				t.Error("a failed call changed the queue")
			}
			// Other operations are unaffected; clearing the fault restores
			// the operation.
			h.receive(t, url, 1)
			h.sim.SetFault("SendMessage", Fault{})
			h.send(t, url, "x")
			if n := h.sim.CallCount("SendMessage"); n != 2 {
				t.Errorf("CallCount(SendMessage) = %d, want 2", n)
			}
		})
	}
	t.Run("sdk retries internal errors", func(t *testing.T) {
		h := newHarness(t)
		url := h.createQueue(t, "q", nil)
		h.sim.SetFault("*", Fault{ErrorRate: 0.5})
		client, _ := newClients(h.url)
		retrying := sqs.New(client.Options(), func(o *sqs.Options) { o.RetryMaxAttempts = 10 })
		for range 5 {
			if _, err := retrying.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if n := h.sim.CallCount("SendMessage"); n <= 5 {
			t.Errorf("CallCount = %d: no call failed at a 50%% error rate", n)
		}
		if snap, _ := h.sim.Snapshot("q"); len(snap) != 5 {
			t.Errorf("queue holds %d, want 5", len(snap))
		}
	})
}

func TestParseFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    map[string]Fault
		wantErr bool
	}{
		{spec: "", want: map[string]Fault{}},
		{spec: "ReceiveMessage=throttle:0.2,latency:20ms;GetMetricData=error:0.1;*=latency:5ms", want: map[string]Fault{
			"ReceiveMessage": {ThrottleRate: 0.2, Latency: 20e6},
			"GetMetricData":  {ErrorRate: 0.1},
			"*":              {Latency: 5e6},
		}},
		{spec: " SendMessage = error:1 ; ", want: map[string]Fault{"SendMessage": {ErrorRate: 1}}},
		{spec: "SendMessageBatch=deny;DeleteMessageBatch=deny,latency:1ms", want: map[string]Fault{
			"SendMessageBatch": {Deny: true}, "DeleteMessageBatch": {Deny: true, Latency: 1e6},
		}},
		{spec: "SendMessage=throttle:1.5", wantErr: true},
		{spec: "SendMessage=throttle:0.6,error:0.6", wantErr: true},
		{spec: "SendMessage=latency:soon", wantErr: true},
		{spec: "SendMessage=jitter:1", wantErr: true},
		{spec: "=error:0.1", wantErr: true},
		{spec: "SendMessage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := ParseFaults(tt.spec)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if !tt.wantErr && len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for op, f := range tt.want {
				if got[op] != f {
					t.Errorf("%s: %+v, want %+v", op, got[op], f)
				}
			}
		})
	}
}
