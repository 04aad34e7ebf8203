package sqsim

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// queryCall sends one Query-protocol request as Debian's aws CLI 2.9 does:
// a form-encoded POST to the endpoint's root.
func (h *harness) queryCall(t *testing.T, params url.Values) (int, string) {
	t.Helper()
	params.Set("Version", "2012-11-05")
	resp, err := http.Post(h.url+"/", "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(params.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
		t.Errorf("Content-Type %q, want text/xml", ct)
	}
	return resp.StatusCode, string(body)
}

// form builds Query parameters from name, value pairs.
func form(pairs ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(pairs); i += 2 {
		v.Add(pairs[i], pairs[i+1])
	}
	return v
}

// queryResult is what the tests read of a Query answer; the XML parser
// checks that the answer is well formed and in SQS's namespace.
type queryResult struct {
	XMLName   xml.Name
	QueueURL  []string `xml:"CreateQueueResult>QueueUrl"`
	ListURLs  []string `xml:"ListQueuesResult>QueueUrl"`
	Attribute []struct {
		Name, Value string
	} `xml:"GetQueueAttributesResult>Attribute"`
	SendMessage struct {
		MessageId, MD5OfMessageBody, MD5OfMessageAttributes, SequenceNumber string
	} `xml:"SendMessageResult"`
	BatchOK     []struct{ Id, MessageId string } `xml:"SendMessageBatchResult>SendMessageBatchResultEntry"`
	BatchFailed []struct {
		Id, Code    string
		SenderFault bool
	} `xml:"SendMessageBatchResult>BatchResultErrorEntry"`
	Messages []struct {
		MessageID     string `xml:"MessageId"`
		ReceiptHandle string
		MD5OfBody     string
		Body          string
		Attribute     []struct{ Name, Value string }
		MessageAttr   []struct {
			Name  string
			Value struct{ DataType, StringValue, BinaryValue string }
		} `xml:"MessageAttribute"`
	} `xml:"ReceiveMessageResult>Message"`
	DeleteOK []struct{ Id string }         `xml:"DeleteMessageBatchResult>DeleteMessageBatchResultEntry"`
	Tags     []struct{ Key, Value string } `xml:"ListQueueTagsResult>Tag"`
	Error    struct {
		Type, Code, Message string
	} `xml:"Error"`
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

func parseQuery(t *testing.T, body string) queryResult {
	t.Helper()
	var r queryResult
	if err := xml.Unmarshal([]byte(body), &r); err != nil {
		t.Fatalf("answer is not XML: %v\n%s", err, body)
	}
	if r.XMLName.Space != queryNamespace {
		t.Errorf("namespace %q, want %q", r.XMLName.Space, queryNamespace)
	}
	return r
}

// TestQueryProtocol drives the main operations over the Query protocol and
// checks the XML answers and that both protocols share one state.
func TestQueryProtocol(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	qurl := h.url + "/000000000000/calls"
	// A body with the characters XML changes unless they are escaped.
	body := "{\"toolCallId\":\"tc_1\"}\r\n\t<b>&amp;</b>"

	status, out := h.queryCall(t, form("Action", "CreateQueue", "QueueName", "calls",
		"Attribute.1.Name", "VisibilityTimeout", "Attribute.1.Value", "40",
		"Tag.1.Key", "team", "Tag.1.Value", "agents"))
	if r := parseQuery(t, out); status != 200 || len(r.QueueURL) != 1 || r.QueueURL[0] != qurl || r.RequestID == "" {
		t.Fatalf("CreateQueue: %d %s", status, out)
	}
	if got := h.attributes(t, qurl)["VisibilityTimeout"]; got != "40" {
		t.Errorf("VisibilityTimeout through the SDK = %s, want 40", got)
	}

	tests := []struct {
		name   string
		params url.Values
		check  func(t *testing.T, r queryResult)
	}{
		{"ListQueues", form("Action", "ListQueues", "QueueNamePrefix", "ca"), func(t *testing.T, r queryResult) {
			if len(r.ListURLs) != 1 || r.ListURLs[0] != qurl {
				t.Errorf("QueueUrls %v", r.ListURLs)
			}
		}},
		{"GetQueueAttributes", form("Action", "GetQueueAttributes", "QueueUrl", qurl, "AttributeName.1", "VisibilityTimeout", "AttributeName.2", "QueueArn"), func(t *testing.T, r queryResult) {
			got := map[string]string{}
			for _, a := range r.Attribute {
				got[a.Name] = a.Value
			}
			if len(got) != 2 || got["VisibilityTimeout"] != "40" || got["QueueArn"] != "arn:aws:sqs:us-east-1:000000000000:calls" {
				t.Errorf("attributes %v", got)
			}
		}},
		{"ListQueueTags", form("Action", "ListQueueTags", "QueueUrl", qurl), func(t *testing.T, r queryResult) {
			if len(r.Tags) != 1 || r.Tags[0].Key != "team" || r.Tags[0].Value != "agents" {
				t.Errorf("tags %v", r.Tags)
			}
		}},
		{"SendMessage", form("Action", "SendMessage", "QueueUrl", qurl, "MessageBody", body,
			"MessageAttribute.1.Name", "toolName", "MessageAttribute.1.Value.DataType", "String", "MessageAttribute.1.Value.StringValue", "web_search",
			"MessageAttribute.2.Name", "blob", "MessageAttribute.2.Value.DataType", "Binary", "MessageAttribute.2.Value.BinaryValue", "AAEC",
		), func(t *testing.T, r queryResult) {
			want := map[string]messageAttribute{
				"toolName": {DataType: "String", StringValue: aws.String("web_search")},
				"blob":     {DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
			}
			if r.SendMessage.MessageId == "" || r.SendMessage.MD5OfMessageBody != md5Hex(body) || r.SendMessage.MD5OfMessageAttributes != md5OfAttributes(want) {
				t.Errorf("SendMessageResult %+v", r.SendMessage)
			}
		}},
		{"SendMessageBatch", form("Action", "SendMessageBatch", "QueueUrl", qurl,
			"SendMessageBatchRequestEntry.1.Id", "a", "SendMessageBatchRequestEntry.1.MessageBody", "second",
			"SendMessageBatchRequestEntry.2.Id", "b", "SendMessageBatchRequestEntry.2.MessageBody", "third", "SendMessageBatchRequestEntry.2.DelaySeconds", "60",
			"SendMessageBatchRequestEntry.3.Id", "c", "SendMessageBatchRequestEntry.3.MessageBody", "bad", "SendMessageBatchRequestEntry.3.DelaySeconds", "901",
		), func(t *testing.T, r queryResult) {
			if len(r.BatchOK) != 2 || r.BatchOK[0].Id != "a" || r.BatchOK[1].Id != "b" {
				t.Errorf("successful %+v", r.BatchOK)
			}
			if len(r.BatchFailed) != 1 || r.BatchFailed[0].Id != "c" || r.BatchFailed[0].Code != "InvalidParameterValue" || !r.BatchFailed[0].SenderFault {
				t.Errorf("failed %+v", r.BatchFailed)
			}
		}},
		{"ReceiveMessage", form("Action", "ReceiveMessage", "QueueUrl", qurl, "MaxNumberOfMessages", "10",
			"AttributeName.1", "All", "MessageAttributeName.1", "All"), func(t *testing.T, r queryResult) {
			if len(r.Messages) != 2 {
				t.Fatalf("received %d messages, want 2 (one is delayed)", len(r.Messages))
			}
			m := r.Messages[0]
			if m.Body != body || m.MD5OfBody != md5Hex(body) || m.ReceiptHandle == "" {
				t.Errorf("message %q md5 %s", m.Body, m.MD5OfBody)
			}
			attrs := map[string]string{}
			for _, a := range m.Attribute {
				attrs[a.Name] = a.Value
			}
			if attrs["ApproximateReceiveCount"] != "1" || attrs["SenderId"] != "000000000000" {
				t.Errorf("system attributes %v", attrs)
			}
			if len(m.MessageAttr) != 2 || m.MessageAttr[0].Name != "blob" || m.MessageAttr[0].Value.BinaryValue != "AAEC" ||
				m.MessageAttr[1].Value.StringValue != "web_search" || m.MessageAttr[1].Value.DataType != "String" {
				t.Errorf("message attributes %+v", m.MessageAttr)
			}
			// The second message was received too: delete both in a batch.
			status, out := h.queryCall(t, form("Action", "DeleteMessageBatch", "QueueUrl", qurl,
				"DeleteMessageBatchRequestEntry.1.Id", "x", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", r.Messages[0].ReceiptHandle,
				"DeleteMessageBatchRequestEntry.2.Id", "y", "DeleteMessageBatchRequestEntry.2.ReceiptHandle", r.Messages[1].ReceiptHandle))
			if d := parseQuery(t, out); status != 200 || len(d.DeleteOK) != 2 {
				t.Errorf("DeleteMessageBatch: %d %s", status, out)
			}
		}},
		{"PurgeQueue answers with no result", form("Action", "PurgeQueue", "QueueUrl", qurl), func(t *testing.T, r queryResult) {
			if r.XMLName.Local != "PurgeQueueResponse" {
				t.Errorf("root %s", r.XMLName.Local)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, out := h.queryCall(t, tt.params)
			if status != 200 {
				t.Fatalf("status %d: %s", status, out)
			}
			r := parseQuery(t, out)
			if want := tt.params.Get("Action") + "Response"; r.XMLName.Local != want {
				t.Errorf("root element %s, want %s", r.XMLName.Local, want)
			}
			tt.check(t, r)
		})
	}
	if snap, _ := h.sim.Snapshot("calls"); len(snap) != 0 {
		t.Errorf("after the purge the queue holds %d messages", len(snap))
	}
}

// TestQueryProtocolErrors checks the XML error shape with the legacy codes
// that Query clients map to their errors, and that a rejected request
// leaves the queue alone.
func TestQueryProtocolErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	qurl := h.createQueue(t, "q", map[string]string{"MaximumMessageSize": "1024"})
	h.send(t, qurl, "keep")
	tests := []struct {
		name       string
		body       string
		wantStatus int
		wantCode   string
	}{
		{"unknown action", "Action=DropTable", 400, "InvalidAction"},
		{"no action", "QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidAction"},
		{"malformed query string", "Action=SendMessage&QueueUrl=%zz", 400, "MalformedQueryString"},
		{"missing queue", "Action=SendMessage&MessageBody=x&QueueUrl=" + url.QueryEscape(h.url+"/000000000000/nope"), 400, "AWS.SimpleQueueService.NonExistentQueue"},
		{"missing body", "Action=SendMessage&QueueUrl=" + url.QueryEscape(qurl), 400, "MissingParameter"},
		{"not an integer", "Action=ReceiveMessage&MaxNumberOfMessages=ten&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidParameterValue"},
		{"out of range", "Action=ReceiveMessage&MaxNumberOfMessages=11&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidParameterValue"},
		{"bad base64", "Action=SendMessage&MessageBody=x&MessageAttribute.1.Name=b&MessageAttribute.1.Value.DataType=Binary&MessageAttribute.1.Value.BinaryValue=%21%21&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidParameterValue"},
		{"larger than MaximumMessageSize", "Action=SendMessage&MessageBody=" + strings.Repeat("x", 1025) + "&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidParameterValue"},
		{"body too large", "Action=SendMessage&MessageBody=" + strings.Repeat("x", maxRequestBody), 413, "RequestEntityTooLarge"},
		{"unknown attribute", "Action=SetQueueAttributes&Attribute.1.Name=Colour&Attribute.1.Value=blue&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidAttributeName"},
		{"attribute out of range", "Action=SetQueueAttributes&Attribute.1.Name=DelaySeconds&Attribute.1.Value=901&QueueUrl=" + url.QueryEscape(qurl), 400, "InvalidAttributeValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(h.url+"/", "application/x-www-form-urlencoded", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			r := parseQuery(t, string(body))
			if r.XMLName.Local != "ErrorResponse" || r.Error.Code != tt.wantCode || r.Error.Type != "Sender" || r.Error.Message == "" {
				t.Errorf("error %+v, want code %s:\n%s", r.Error, tt.wantCode, body)
			}
		})
	}
	snap, _ := h.sim.Snapshot("q")
	if len(snap) != 1 || snap[0].Body != "keep" || snap[0].ReceiveCount != 0 {
		t.Errorf("bad input changed the queue: %+v", snap)
	}
	if got := h.attributes(t, qurl)["DelaySeconds"]; got != "0" {
		t.Errorf("DelaySeconds = %s after a rejected change", got)
	}
}

// TestQueryProtocolQueueURLInPath covers clients of the original API, which
// send a queue's operations to the queue's URL, and GET requests.
func TestQueryProtocolQueueURLInPath(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	qurl := h.createQueue(t, "q", nil)
	resp, err := http.Post(qurl, "application/x-www-form-urlencoded", strings.NewReader("Action=SendMessage&MessageBody=hello"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("SendMessage to the queue URL: %d", resp.StatusCode)
	}
	h.advance(time.Second)
	resp, err = http.Get(qurl + "?Action=ReceiveMessage&Version=2012-11-05")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if r := parseQuery(t, string(body)); len(r.Messages) != 1 || r.Messages[0].Body != "hello" {
		t.Errorf("GET ReceiveMessage: %s", body)
	}
	if !bytes.Contains(body, []byte("<ReceiveMessageResult>")) {
		t.Errorf("no ReceiveMessageResult: %s", body)
	}
}
