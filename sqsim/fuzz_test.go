package sqsim

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/smithy-go/encoding/cbor"
)

// FuzzRequests feeds arbitrary bodies to every operation of both services,
// and of SQS in both its protocols ("q:" operations are form-encoded Query
// requests).
// The simulator must answer each with a well-formed status, never panic
// (a recovered panic answers 500 InternalError, which fails the fuzz), and
// never let a rejected request change a queue.
func FuzzRequests(f *testing.F) {
	f.Add("SendMessage", []byte(`{"QueueUrl":"http://x/000000000000/q","MessageBody":"hi"}`))
	f.Add("ReceiveMessage", []byte(`{"QueueUrl":"http://x/000000000000/q","MaxNumberOfMessages":10,"AttributeNames":["All"]}`))
	f.Add("SetQueueAttributes", []byte(`{"QueueUrl":"http://x/000000000000/q","Attributes":{"RedrivePolicy":"{\"maxReceiveCount\":\"1e9\"}"}}`))
	f.Add("SendMessageBatch", []byte(`{"QueueUrl":"http://x/000000000000/q","Entries":[{"Id":"a","MessageBody":"x","MessageAttributes":{"n":{"DataType":"Number","StringValue":"NaN"}}}]}`))
	f.Add("CancelMessageMoveTask", []byte(`{"TaskHandle":"eyJ0YXNrSWQiOiIxIn0="}`))
	f.Add("cw:GetMetricData", cbor.Encode(cbor.Map{"MetricDataQueries": cbor.List{cbor.Map{"Id": cbor.String("a")}}}))
	f.Add("cw:DescribeAlarms", cbor.Encode(cbor.Map{"MaxRecords": cbor.NegInt(5)}))
	f.Add("cw:PutMetricAlarm", []byte{0xbf, 0xff})
	f.Add("q:SendMessage", []byte(`QueueUrl=http://x/000000000000/q&MessageBody=hi&MessageAttribute.1.Name=n&MessageAttribute.1.Value.DataType=Number&MessageAttribute.1.Value.StringValue=1`))
	f.Add("q:SendMessageBatch", []byte(`QueueUrl=http://x/000000000000/q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=x&SendMessageBatchRequestEntry.3.Id=c`))
	f.Add("q:SetQueueAttributes", []byte(`QueueUrl=http://x/000000000000/q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=%zz`))
	f.Fuzz(func(t *testing.T, op string, body []byte) {
		sim := New(Options{Clock: NewManualClock(t0)})
		var req *http.Request
		if name, ok := bytes.CutPrefix([]byte(op), []byte("cw:")); ok {
			req = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
			// Set after construction: any operation name, however odd.
			req.URL.Path = cloudWatchPathPrefix + string(name)
		} else {
			if action, ok := strings.CutPrefix(op, "q:"); ok {
				form := append([]byte("Action="+url.QueryEscape(action)+"&"), body...)
				req = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			} else {
				req = httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
				req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
			}
			// Give the request a queue to act on.
			create := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(`{"QueueName":"q"}`)))
			create.Header.Set("X-Amz-Target", "AmazonSQS.CreateQueue")
			sim.ServeHTTP(httptest.NewRecorder(), create)
		}
		rec := httptest.NewRecorder()
		sim.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s: status %d: %s", op, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 && op != "CreateQueue" && op != "q:CreateQueue" {
			if snap, err := sim.Snapshot("q"); err == nil && len(snap) != 0 {
				t.Fatalf("%s: rejected request left %d messages", op, len(snap))
			}
		}
	})
}
