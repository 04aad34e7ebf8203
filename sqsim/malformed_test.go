package sqsim

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/smithy-go/encoding/cbor"
)

// fingerprint describes everything a request could change: queues with
// their attributes, tags and messages, alarms and move tasks with their
// status.
func (s *Simulator) fingerprint() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	now := s.clock.Now()
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range s.queues {
			if !yield(n) {
				return
			}
		}
	}) {
		q := s.queues[name]
		fmt.Fprintf(&b, "queue %s %+v tags=%v modified=%v\n", name, q.attrs, q.tags, q.modifiedAt)
		for _, m := range q.messages {
			if !m.gone {
				fmt.Fprintf(&b, "  %s %q receives=%d visibleAt=%v\n", m.id, m.body, m.receiveCount, m.visibleAt.Sub(now))
			}
		}
	}
	for name, a := range s.alarms {
		fmt.Fprintf(&b, "alarm %s %s\n", name, a.state)
	}
	fmt.Fprintf(&b, "tasks %d\n", len(s.tasks))
	for _, handle := range slices.Sorted(maps.Keys(s.tasks)) {
		t := s.tasks[handle]
		fmt.Fprintf(&b, "  task %s moved=%d\n", t.status, t.moved)
	}
	for name, bus := range s.buses {
		for rule, r := range bus.rules {
			fmt.Fprintf(&b, "rule %s/%s %s targets=%d\n", name, rule, r.state, len(r.targets))
		}
	}
	fmt.Fprintf(&b, "functions %d mappings %d\n", len(s.functions), len(s.mappings))
	return b.String()
}

// TestMalformedRequestsChangeNothing sends requests that name no operation
// exactly, in each protocol, and checks that each is refused with a 4xx in
// its protocol's error shape and that nothing changed. Each would delete or
// purge something if the simulator guessed the operation.
func TestMalformedRequestsChangeNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	qURL := h.createQueue(t, "q", nil)
	h.send(t, qURL, "keep")
	fifoURL := h.createQueue(t, "q.fifo", map[string]string{"FifoQueue": "true"})
	h.send(t, fifoURL, "keep", inGroup("g", "d"))
	if _, err := h.cw.PutMetricAlarm(t.Context(), &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String("a"), Namespace: aws.String("AWS/SQS"), MetricName: aws.String("NumberOfMessagesSent"),
		Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
	}); err != nil {
		t.Fatal(err)
	}
	eb := h.eventBridge()
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: aws.String("r"), EventPattern: aws.String(`{"source":["x"]}`)}); err != nil {
		t.Fatal(err)
	}
	deleteQueue := `{"QueueUrl":"` + qURL + `"}`
	deleteRule := `{"Name":"r"}`
	deleteAlarms := `{"AlarmNames":["a"]}`
	deleteForm := url.Values{"QueueUrl": {qURL}}.Encode()

	type request struct {
		method, path, target, contentType, body string
	}
	jsonReq := func(target, body string) request {
		return request{method: "POST", path: "/", target: target, contentType: "application/x-amz-json-1.0", body: body}
	}
	formReq := func(pathAndQuery, body string) request {
		return request{method: "POST", path: pathAndQuery, contentType: "application/x-www-form-urlencoded; charset=utf-8", body: body}
	}
	cborReq := func(op, contentType string) request {
		return request{method: "POST", path: "/service/GraniteServiceVersion20100801/operation/" + op, contentType: contentType,
			body: string(cbor.Encode(cbor.Map{"AlarmNames": cbor.List{cbor.String("a")}}))}
	}
	tests := []struct {
		name  string
		req   request
		shape string // json, xml or cbor
	}{
		// AWS JSON 1.0, SQS.
		{"target without the AmazonSQS prefix", jsonReq("DeleteQueue", deleteQueue), "json"},
		{"target without prefix, PurgeQueue", jsonReq("PurgeQueue", deleteQueue), "json"},
		{"prefix in lower case", jsonReq("amazonsqs.DeleteQueue", deleteQueue), "json"},
		{"operation in lower camel case", jsonReq("AmazonSQS.deleteQueue", deleteQueue), "json"},
		{"operation in upper case", jsonReq("AmazonSQS.DELETEQUEUE", deleteQueue), "json"},
		{"empty operation", jsonReq("AmazonSQS.", deleteQueue), "json"},
		{"operation with a suffix", jsonReq("AmazonSQS.DeleteQueue.Now", deleteQueue), "json"},
		{"prefix without its dot", jsonReq("AmazonSQSDeleteQueue", deleteQueue), "json"},
		{"versioned prefix", jsonReq("AmazonSQS_20121105.DeleteQueue", deleteQueue), "json"},
		{"other service's prefix", jsonReq("DynamoDB_20120810.DeleteQueue", deleteQueue), "json"},
		{"SQS operation under CloudWatch's prefix", jsonReq("GraniteServiceVersion20100801.DeleteQueue", deleteQueue), "json"},
		{"CloudWatch operation under SQS's prefix", jsonReq("AmazonSQS.DeleteAlarms", deleteAlarms), "json"},
		{"CloudWatch operation without prefix", jsonReq("DeleteAlarms", deleteAlarms), "json"},
		{"CloudWatch operation in lower case", jsonReq("GraniteServiceVersion20100801.deleteAlarms", deleteAlarms), "json"},
		{"content type text/plain", request{"POST", "/", "AmazonSQS.DeleteQueue", "text/plain", deleteQueue}, "json"},
		{"content type application/json", request{"POST", "/", "AmazonSQS.DeleteQueue", "application/json", deleteQueue}, "json"},
		{"content type AWS JSON 1.1", request{"POST", "/", "AmazonSQS.DeleteQueue", "application/x-amz-json-1.1", deleteQueue}, "json"},
		{"no content type with a body", request{"POST", "/", "AmazonSQS.DeleteQueue", "", deleteQueue}, "json"},
		{"form content type with a target", request{"POST", "/", "AmazonSQS.DeleteQueue", "application/x-www-form-urlencoded", deleteQueue}, "json"},
		{"CloudWatch JSON as CBOR", request{"POST", "/", "GraniteServiceVersion20100801.DeleteAlarms", "application/cbor", deleteAlarms}, "json"},
		{"GET with a target", request{"GET", "/", "AmazonSQS.DeleteQueue", "application/x-amz-json-1.0", ""}, "json"},
		{"PUT with a target", request{"PUT", "/", "AmazonSQS.DeleteQueue", "application/x-amz-json-1.0", deleteQueue}, "json"},
		{"JSON without a target", request{"POST", "/", "", "application/x-amz-json-1.0", deleteQueue}, "json"},
		{"unknown target over a form with an Action", request{"POST", "/", "Foo.Bar", "application/x-www-form-urlencoded", "Action=DeleteQueue&" + deleteForm}, "json"},
		// The Query protocol.
		{"Action in lower case", formReq("/", "Action=deletequeue&"+deleteForm), "xml"},
		{"Action in upper case", formReq("/", "Action=DELETEQUEUE&"+deleteForm), "xml"},
		{"Action with the JSON prefix", formReq("/", "Action=AmazonSQS.DeleteQueue&"+deleteForm), "xml"},
		{"no Action", formReq("/", deleteForm), "xml"},
		{"Actions in URL and body disagree", formReq("/?Action=ListQueues", "Action=DeleteQueue&"+deleteForm), "xml"},
		{"Actions in body and URL disagree", formReq("/?Action=DeleteQueue&"+deleteForm, "Action=ListQueues"), "xml"},
		{"Action twice in the body", formReq("/", "Action=DeleteQueue&Action=PurgeQueue&"+deleteForm), "xml"},
		{"Action twice in the URL", request{"GET", "/?Action=ListQueues&Action=DeleteQueue&" + deleteForm, "", "", ""}, "xml"},
		{"SQS Action with CloudWatch's Version", formReq("/", "Action=DeleteQueue&Version=2010-08-01&"+deleteForm), "xml"},
		{"CloudWatch Action with SQS's Version", formReq("/", "Action=DeleteAlarms&Version=2012-11-05&AlarmNames.member.1=a"), "xml"},
		{"unknown Version", formReq("/", "Action=DeleteQueue&Version=2099-01-01&"+deleteForm), "xml"},
		{"Versions in URL and body disagree", formReq("/?Version=2010-08-01", "Action=DeleteQueue&Version=2012-11-05&"+deleteForm), "xml"},
		{"form as application/json", request{"POST", "/", "", "application/json", "Action=DeleteQueue&" + deleteForm}, "xml"},
		{"form as text/plain", request{"POST", "/", "", "text/plain", "Action=PurgeQueue&" + deleteForm}, "xml"},
		{"form without content type", request{"POST", "/", "", "", "Action=DeleteQueue&" + deleteForm}, "xml"},
		{"queue URL path with a lower-case Action", formReq("/000000000000/q", "Action=purgequeue"), "xml"},
		// AWS JSON 1.1, EventBridge.
		{"EventBridge operation in lower case", request{"POST", "/", "AWSEvents.deleteRule", "application/x-amz-json-1.1", deleteRule}, "json11"},
		{"EventBridge target without prefix", request{"POST", "/", "DeleteRule", "application/x-amz-json-1.1", deleteRule}, "json"},
		{"EventBridge as AWS JSON 1.0", request{"POST", "/", "AWSEvents.DeleteRule", "application/x-amz-json-1.0", deleteRule}, "json11"},
		{"SQS operation under EventBridge's prefix", request{"POST", "/", "AWSEvents.DeleteQueue", "application/x-amz-json-1.1", deleteQueue}, "json11"},
		// REST-JSON, Lambda.
		{"Lambda unknown path", request{"DELETE", "/2015-03-31/queues/q", "", "", ""}, "lambda"},
		{"Lambda wrong method", request{"PATCH", "/2015-03-31/event-source-mappings", "", "application/json", `{}`}, "lambda"},
		{"Lambda body not JSON", request{"POST", "/2015-03-31/functions", "", "text/plain", `{"FunctionName":"f","Role":"r"}`}, "lambda"},
		// Smithy RPC v2 CBOR.
		{"CBOR operation in lower case", cborReq("deleteAlarms", "application/cbor"), "cbor"},
		{"SQS operation over CBOR", cborReq("DeleteQueue", "application/cbor"), "cbor"},
		{"CBOR operation with a suffix", cborReq("DeleteAlarms/now", "application/cbor"), "cbor"},
		{"CBOR under another service", request{"POST", "/service/AmazonSQS/operation/DeleteQueue", "", "application/cbor", deleteQueue}, "cbor"},
		{"CBOR as JSON", cborReq("DeleteAlarms", "application/json"), "cbor"},
		{"CBOR without content type", cborReq("DeleteAlarms", ""), "cbor"},
		{"CBOR with GET", request{"GET", "/service/GraniteServiceVersion20100801/operation/DeleteAlarms", "", "application/cbor", ""}, "cbor"},
		{"CBOR DeleteAlarms with an empty map", request{"POST", "/service/GraniteServiceVersion20100801/operation/DeleteAlarms", "", "application/cbor", string(cbor.Encode(cbor.Map{}))}, "cbor"},
		{"CBOR with a junk target", request{"POST", "/", "Junk.DeleteAlarms", "application/cbor", string(cbor.Encode(cbor.Map{"AlarmNames": cbor.List{cbor.String("a")}}))}, "cbor"},
		{"CBOR at the root without a target", request{"POST", "/", "", "application/cbor", string(cbor.Encode(cbor.Map{"AlarmNames": cbor.List{cbor.String("a")}}))}, "cbor"},
	}
	before := h.sim.fingerprint()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.req.method, h.url+tt.req.path, strings.NewReader(tt.req.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.req.target != "" {
				req.Header.Set("X-Amz-Target", tt.req.target)
			}
			req.Header.Del("Content-Type")
			if tt.req.contentType != "" {
				req.Header.Set("Content-Type", tt.req.contentType)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Errorf("status %d, want 4xx: %s", resp.StatusCode, body)
			}
			switch tt.shape {
			case "json":
				var e struct {
					Type    string `json:"__type"`
					Message string `json:"message"`
				}
				if err := json.Unmarshal(body, &e); err != nil || e.Type == "" || e.Message == "" {
					t.Errorf("not a JSON error with __type and message: %s", body)
				}
				if resp.Header.Get("Content-Type") != "application/x-amz-json-1.0" || !strings.Contains(resp.Header.Get("X-Amzn-Query-Error"), ";Sender") {
					t.Errorf("headers %v", resp.Header)
				}
			case "json11", "lambda":
				var e struct {
					Type string `json:"__type"`
				}
				if err := json.Unmarshal(body, &e); err != nil || e.Type == "" {
					t.Errorf("not a JSON error with __type: %s", body)
				}
				if tt.shape == "lambda" && resp.Header.Get("X-Amzn-Errortype") == "" {
					t.Errorf("no X-Amzn-Errortype: %v", resp.Header)
				}
			case "xml":
				var e struct {
					XMLName xml.Name `xml:"ErrorResponse"`
					Code    string   `xml:"Error>Code"`
					Type    string   `xml:"Error>Type"`
				}
				if err := xml.Unmarshal(body, &e); err != nil || e.Code == "" || e.Type != "Sender" {
					t.Errorf("not an XML ErrorResponse with a Code: %s", body)
				}
			case "cbor":
				v, err := cbor.Decode(body)
				m, _ := v.(cbor.Map)
				if err != nil || m["__type"] == nil {
					t.Errorf("not a CBOR error with __type: %x", body)
				}
			}
			if after := h.sim.fingerprint(); after != before {
				t.Fatalf("the request changed the simulator:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}
