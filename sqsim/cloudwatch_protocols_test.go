package sqsim

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// cwCall sends one CloudWatch request as botocore does, in AWS JSON 1.0
// (body is the JSON input) or the Query protocol (body is the form).
func (h *harness) cwCall(t *testing.T, protocol, op, body string) (int, http.Header, string) {
	t.Helper()
	var req *http.Request
	switch protocol {
	case "json":
		req, _ = http.NewRequest(http.MethodPost, h.url+"/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "GraniteServiceVersion20100801."+op)
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	case "query":
		form := "Action=" + op + "&Version=2010-08-01"
		if body != "" {
			form += "&" + body
		}
		req, _ = http.NewRequest(http.MethodPost, h.url+"/", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestCloudWatchJSONAndQuery runs the same CloudWatch calls in AWS JSON 1.0
// and in the Query protocol and checks each answer in its protocol's shape:
// JSON with epoch-second timestamps, XML with <member> lists and ISO 8601
// timestamps, and each protocol's error shape.
func TestCloudWatchJSONAndQuery(t *testing.T) {
	t.Parallel()
	start, end := t0.Unix(), t0.Add(3*time.Minute).Unix()
	iso := func(ts int64) string { return url.QueryEscape(time.Unix(ts, 0).UTC().Format(time.RFC3339)) }
	type call struct {
		op         string
		json       string
		query      string
		wantStatus int
		// wantJSON and wantXML are substrings of the answers.
		wantJSON, wantXML []string
	}
	calls := []call{
		{
			op:         "PutMetricAlarm",
			json:       `{"AlarmName":"dlq","Namespace":"AWS/SQS","MetricName":"ApproximateNumberOfMessagesVisible","Dimensions":[{"Name":"QueueName","Value":"calls"}],"Statistic":"Maximum","Period":60,"EvaluationPeriods":1,"Threshold":1.0,"ComparisonOperator":"GreaterThanOrEqualToThreshold","AlarmActions":[]}`,
			query:      "AlarmName=dlq&Namespace=AWS%2FSQS&MetricName=ApproximateNumberOfMessagesVisible&Dimensions.member.1.Name=QueueName&Dimensions.member.1.Value=calls&Statistic=Maximum&Period=60&EvaluationPeriods=1&Threshold=1.0&ComparisonOperator=GreaterThanOrEqualToThreshold&AlarmActions=",
			wantStatus: 200, wantJSON: []string{"{}"}, wantXML: []string{"<PutMetricAlarmResponse"},
		},
		{
			op: "DescribeAlarms", json: `{"AlarmNames":["dlq"]}`, query: "AlarmNames.member.1=dlq", wantStatus: 200,
			wantJSON: []string{`"AlarmName":"dlq"`, `"StateValue":"INSUFFICIENT_DATA"`, `"Threshold":1`, `"Dimensions":[{"Name":"QueueName","Value":"calls"}]`, `"StateUpdatedTimestamp":` + jsonNumber(t0.Add(3*time.Minute).Unix())},
			wantXML:  []string{"<MetricAlarms><member>", "<AlarmName>dlq</AlarmName>", "<StateValue>INSUFFICIENT_DATA</StateValue>", "<Dimensions><member><Name>QueueName</Name><Value>calls</Value></member></Dimensions>", "<StateUpdatedTimestamp>2026-03-02T10:03:00.000Z</StateUpdatedTimestamp>"},
		},
		{
			op:         "GetMetricData",
			json:       `{"MetricDataQueries":[{"Id":"sent","MetricStat":{"Metric":{"Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent","Dimensions":[{"Name":"QueueName","Value":"calls"}]},"Period":60,"Stat":"Sum"}}],"StartTime":` + jsonNumber(start) + `,"EndTime":` + jsonNumber(end) + `,"ScanBy":"TimestampAscending"}`,
			query:      "MetricDataQueries.member.1.Id=sent&MetricDataQueries.member.1.MetricStat.Metric.Namespace=AWS%2FSQS&MetricDataQueries.member.1.MetricStat.Metric.MetricName=NumberOfMessagesSent&MetricDataQueries.member.1.MetricStat.Metric.Dimensions.member.1.Name=QueueName&MetricDataQueries.member.1.MetricStat.Metric.Dimensions.member.1.Value=calls&MetricDataQueries.member.1.MetricStat.Period=60&MetricDataQueries.member.1.MetricStat.Stat=Sum&StartTime=" + iso(start) + "&EndTime=" + iso(end) + "&ScanBy=TimestampAscending",
			wantStatus: 200,
			wantJSON:   []string{`"Id":"sent"`, `"Timestamps":[` + jsonNumber(start) + `,` + jsonNumber(start+60) + `,` + jsonNumber(start+120) + `]`, `"Values":[2,0,0]`},
			wantXML:    []string{"<Id>sent</Id>", "<Timestamps><member>2026-03-02T10:00:00.000Z</member>", "<Values><member>2</member><member>0</member><member>0</member></Values>"},
		},
		{
			op: "GetMetricStatistics", wantStatus: 200,
			json:     `{"Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent","Dimensions":[{"Name":"QueueName","Value":"calls"}],"StartTime":` + jsonNumber(start) + `,"EndTime":` + jsonNumber(start+60) + `,"Period":60,"Statistics":["Sum","SampleCount"]}`,
			query:    "Namespace=AWS%2FSQS&MetricName=NumberOfMessagesSent&Dimensions.member.1.Name=QueueName&Dimensions.member.1.Value=calls&StartTime=" + iso(start) + "&EndTime=" + iso(start+60) + "&Period=60&Statistics.member.1=Sum&Statistics.member.2=SampleCount",
			wantJSON: []string{`"Datapoints":[{"SampleCount":1,"Sum":2,"Timestamp":` + jsonNumber(start) + `,"Unit":"Count"}]`},
			wantXML:  []string{"<Datapoints><member><SampleCount>1</SampleCount><Sum>2</Sum><Timestamp>2026-03-02T10:00:00.000Z</Timestamp><Unit>Count</Unit></member></Datapoints>"},
		},
		{
			op: "ListMetrics", json: `{"Namespace":"AWS/SQS","MetricName":"NumberOfMessagesSent"}`, query: "Namespace=AWS%2FSQS&MetricName=NumberOfMessagesSent", wantStatus: 200,
			wantJSON: []string{`"Metrics":[{"Dimensions":[{"Name":"QueueName","Value":"calls"}],"MetricName":"NumberOfMessagesSent","Namespace":"AWS/SQS"}]`},
			wantXML:  []string{"<Metrics><member><Dimensions><member><Name>QueueName</Name><Value>calls</Value></member></Dimensions><MetricName>NumberOfMessagesSent</MetricName>"},
		},
		{
			op: "GetMetricData", json: `{"MetricDataQueries":[],"StartTime":1,"EndTime":2}`, query: "MetricDataQueries=&StartTime=1&EndTime=2", wantStatus: 400,
			wantJSON: []string{`"__type":"com.amazonaws.cloudwatch#MissingRequiredParameterException"`},
			wantXML:  []string{"<Code>MissingParameter</Code>", "<Type>Sender</Type>"},
		},
		{
			op: "PutMetricAlarm", json: `{"AlarmName":"x","ComparisonOperator":"Sideways","EvaluationPeriods":1}`, query: "AlarmName=x&ComparisonOperator=Sideways&EvaluationPeriods=1", wantStatus: 400,
			wantJSON: []string{`"__type":"com.amazonaws.cloudwatch#InvalidParameterValueException"`},
			wantXML:  []string{"<Code>InvalidParameterValue</Code>"},
		},
		{
			op: "PutMetricAlarm", json: `{"AlarmName":"x","EvaluationPeriods":"one"}`, query: "AlarmName=x&EvaluationPeriods=one", wantStatus: 400,
			wantJSON: []string{`"__type":"com.amazonaws.cloudwatch#SerializationException"`},
			wantXML:  []string{"<Code>SerializationException</Code>"},
		},
		{
			op:         "PutMetricData",
			json:       `{"Namespace":"mcp","MetricData":[{"MetricName":"latency","Timestamp":` + jsonNumber(start+5) + `,"Values":[1,10],"Counts":[2,4],"StorageResolution":1,"Unit":"Milliseconds"}]}`,
			query:      "Namespace=mcp&MetricData.member.1.MetricName=latency&MetricData.member.1.Timestamp=" + iso(start+5) + "&MetricData.member.1.Values.member.1=1&MetricData.member.1.Values.member.2=10&MetricData.member.1.Counts.member.1=2&MetricData.member.1.Counts.member.2=4&MetricData.member.1.StorageResolution=1&MetricData.member.1.Unit=Milliseconds",
			wantStatus: 200, wantJSON: []string{"{}"}, wantXML: []string{"<PutMetricDataResponse"},
		},
		{
			op: "GetMetricStatistics", wantStatus: 200,
			json:     `{"Namespace":"mcp","MetricName":"latency","StartTime":` + jsonNumber(start) + `,"EndTime":` + jsonNumber(start+60) + `,"Period":1,"Statistics":["Sum","SampleCount"]}`,
			query:    "Namespace=mcp&MetricName=latency&StartTime=" + iso(start) + "&EndTime=" + iso(start+60) + "&Period=1&Statistics.member.1=Sum&Statistics.member.2=SampleCount",
			wantJSON: []string{`"Datapoints":[{"SampleCount":6,"Sum":42,"Timestamp":` + jsonNumber(start+5) + `,"Unit":"Milliseconds"}]`},
			wantXML:  []string{"<Datapoints><member><SampleCount>6</SampleCount><Sum>42</Sum><Timestamp>2026-03-02T10:00:05.000Z</Timestamp><Unit>Milliseconds</Unit></member></Datapoints>"},
		},
		{
			op: "DeleteAlarms", json: `{"AlarmNames":["dlq"]}`, query: "AlarmNames.member.1=dlq", wantStatus: 200,
			wantJSON: []string{"{}"}, wantXML: []string{"<DeleteAlarmsResponse"},
		},
	}
	for _, protocol := range []string{"json", "query"} {
		t.Run(protocol, func(t *testing.T) {
			h := newHarness(t)
			url := h.createQueue(t, "calls", nil)
			h.send(t, url, "one")
			h.send(t, url, "two")
			h.advance(3 * time.Minute)
			for _, c := range calls {
				body := c.json
				if protocol == "query" {
					body = c.query
				}
				status, header, answer := h.cwCall(t, protocol, c.op, body)
				if status != c.wantStatus {
					t.Errorf("%s: status %d, want %d: %s", c.op, status, c.wantStatus, answer)
					continue
				}
				want := c.wantJSON
				if protocol == "query" {
					want = c.wantXML
					var doc struct{ XMLName xml.Name }
					if err := xml.Unmarshal([]byte(answer), &doc); err != nil || doc.XMLName.Space != cloudWatchNamespace {
						t.Errorf("%s: not XML in CloudWatch's namespace (%v): %s", c.op, err, answer)
					}
				} else {
					if !json.Valid([]byte(answer)) || header.Get("Content-Type") != "application/x-amz-json-1.0" {
						t.Errorf("%s: not AWS JSON 1.0 (%s): %s", c.op, header.Get("Content-Type"), answer)
					}
					if status != 200 && !strings.HasSuffix(header.Get("X-Amzn-Query-Error"), ";Sender") {
						t.Errorf("%s: x-amzn-query-error %q", c.op, header.Get("X-Amzn-Query-Error"))
					}
				}
				for _, w := range want {
					if !strings.Contains(answer, w) {
						t.Errorf("%s: answer lacks %s:\n%s", c.op, w, answer)
					}
				}
			}
		})
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}
