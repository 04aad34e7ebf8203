package sqsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
)

func sqsQuery(id, queue, metric, stat string, period int32) cwtypes.MetricDataQuery {
	return cwtypes.MetricDataQuery{
		Id: aws.String(id),
		MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{
				Namespace:  aws.String("AWS/SQS"),
				MetricName: aws.String(metric),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(queue)}},
			},
			Period: aws.Int32(period),
			Stat:   aws.String(stat),
		},
	}
}

// points returns a result's points as minute offsets from t0 and values,
// oldest first.
func points(r cwtypes.MetricDataResult) map[int]float64 {
	out := map[int]float64{}
	for i, ts := range r.Timestamps {
		out[int(ts.Sub(t0)/time.Minute)] = r.Values[i]
	}
	return out
}

func TestMetricsMatchActivity(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "calls", nil)
	// Minute 0: 3 sends of 10, 20 and 30 bytes, one receive of 2, one
	// delete, one empty receive after a second receive.
	for _, size := range []int{10, 20, 30} {
		h.send(t, url, fmt.Sprintf("%0*d", size, 0))
	}
	got := h.receive(t, url, 2)
	h.delete(t, url, got[0])
	h.receive(t, url, 10) // the third message
	h.receive(t, url, 10) // empty
	// Minute 2: 5 sends.
	h.advance(2 * time.Minute)
	for i := range 5 {
		h.send(t, url, fmt.Sprint("m", i))
	}
	h.advance(time.Minute)

	queries := []cwtypes.MetricDataQuery{
		sqsQuery("sent", "calls", "NumberOfMessagesSent", "Sum", 60),
		sqsQuery("received", "calls", "NumberOfMessagesReceived", "Sum", 60),
		sqsQuery("deleted", "calls", "NumberOfMessagesDeleted", "Sum", 60),
		sqsQuery("empty", "calls", "NumberOfEmptyReceives", "Sum", 60),
		sqsQuery("size_avg", "calls", "SentMessageSize", "Average", 60),
		sqsQuery("size_max", "calls", "SentMessageSize", "Maximum", 60),
		sqsQuery("size_n", "calls", "SentMessageSize", "SampleCount", 60),
		sqsQuery("visible", "calls", "ApproximateNumberOfMessagesVisible", "Maximum", 60),
		sqsQuery("in_flight", "calls", "ApproximateNumberOfMessagesNotVisible", "Maximum", 60),
		sqsQuery("sent_5m", "calls", "NumberOfMessagesSent", "Sum", 300),
		sqsQuery("dedup", "calls", "NumberOfDeduplicatedSentMessages", "Sum", 60),
	}
	out, err := h.cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		MetricDataQueries: queries,
		StartTime:         aws.Time(t0),
		EndTime:           aws.Time(t0.Add(5 * time.Minute)),
		ScanBy:            cwtypes.ScanByTimestampAscending,
	})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]cwtypes.MetricDataResult{}
	for _, r := range out.MetricDataResults {
		byID[aws.ToString(r.Id)] = r
		if r.StatusCode != cwtypes.StatusCodeComplete {
			t.Errorf("%s: StatusCode %s", aws.ToString(r.Id), r.StatusCode)
		}
	}
	tests := []struct {
		id   string
		want map[int]float64
	}{
		{"sent", map[int]float64{0: 3, 1: 0, 2: 5, 3: 0}},
		{"received", map[int]float64{0: 3, 1: 0, 2: 0, 3: 0}},
		{"deleted", map[int]float64{0: 1, 1: 0, 2: 0, 3: 0}},
		{"empty", map[int]float64{0: 1, 1: 0, 2: 0, 3: 0}},
		{"size_avg", map[int]float64{0: 20, 2: 2}},
		{"size_max", map[int]float64{0: 30, 2: 2}},
		{"size_n", map[int]float64{0: 3, 2: 5}},
		// Gauges are sampled as each minute begins. The visibility timeout
		// (30 s) ended at 0:30, so the two undeleted messages are visible
		// again from minute 1 on.
		{"visible", map[int]float64{0: 0, 1: 2, 2: 2, 3: 7}},
		{"in_flight", map[int]float64{0: 0, 1: 0, 2: 0, 3: 0}},
		{"sent_5m", map[int]float64{0: 8}},
		{"dedup", map[int]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			r, ok := byID[tt.id]
			if !ok {
				t.Fatal("no result")
			}
			if got := points(r); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("points %v, want %v", got, tt.want)
			}
			if aws.ToString(r.Label) == "" {
				t.Error("no label")
			}
		})
	}
}

func TestMetricsFIFOGauges(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "s.fifo", map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "120"})
	for _, g := range []string{"a", "b", "c"} {
		h.send(t, url, "x"+g, inGroup(g, ""))
	}
	h.send(t, url, "xa", inGroup("a", "")) // deduplicated
	h.receive(t, url, 1)
	h.receive(t, url, 1)
	h.advance(time.Minute)
	out, err := h.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		MetricDataQueries: []cwtypes.MetricDataQuery{
			sqsQuery("groups", "s.fifo", "ApproximateNumberOfGroupsWithInflightMessages", "Maximum", 60),
			sqsQuery("dedup", "s.fifo", "NumberOfDeduplicatedSentMessages", "Sum", 60),
			sqsQuery("sent", "s.fifo", "NumberOfMessagesSent", "Sum", 60),
		},
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(2 * time.Minute)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[int]float64{
		"groups": {0: 0, 1: 2},
		"dedup":  {0: 1, 1: 0},
		"sent":   {0: 3, 1: 0},
	}
	for _, r := range out.MetricDataResults {
		// Default ScanBy is TimestampDescending.
		if !slices.IsSortedFunc(r.Timestamps, func(a, b time.Time) int { return b.Compare(a) }) {
			t.Errorf("%s: timestamps not descending", aws.ToString(r.Id))
		}
		if got := points(r); fmt.Sprint(got) != fmt.Sprint(want[aws.ToString(r.Id)]) {
			t.Errorf("%s: %v, want %v", aws.ToString(r.Id), got, want[aws.ToString(r.Id)])
		}
	}
}

func TestGetMetricDataLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	h.createQueue(t, "q", nil)
	many := func(n int) []cwtypes.MetricDataQuery {
		var qs []cwtypes.MetricDataQuery
		for i := range n {
			qs = append(qs, sqsQuery(fmt.Sprint("q", i), "q", "NumberOfMessagesSent", "Sum", 60))
		}
		return qs
	}
	tests := []struct {
		name    string
		queries []cwtypes.MetricDataQuery
		start   time.Time
		code    string
	}{
		{name: "500 queries", queries: many(500)},
		{name: "501 queries", queries: many(501), code: "InvalidParameterValue"},
		{name: "period not a multiple of 60", queries: []cwtypes.MetricDataQuery{sqsQuery("a", "q", "NumberOfMessagesSent", "Sum", 90)}, code: "InvalidParameterValue"},
		{name: "unknown statistic", queries: []cwtypes.MetricDataQuery{sqsQuery("a", "q", "NumberOfMessagesSent", "Median", 60)}, code: "InvalidParameterValue"},
		{name: "bad id", queries: []cwtypes.MetricDataQuery{sqsQuery("A", "q", "NumberOfMessagesSent", "Sum", 60)}, code: "InvalidParameterValue"},
		{name: "start after end", queries: many(1), start: t0.Add(time.Hour), code: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h.sim.ResetCallCounts()
			start := t0
			if !tt.start.IsZero() {
				start = tt.start
			}
			_, err := h.cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{MetricDataQueries: tt.queries, StartTime: aws.Time(start), EndTime: aws.Time(t0.Add(time.Minute))})
			if tt.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := h.sim.MetricQueriesPerCall(); !slices.Equal(got, []int{len(tt.queries)}) {
					t.Errorf("MetricQueriesPerCall = %v", got)
				}
				return
			}
			var apiErr smithy.APIError
			if !errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			var typed *cwtypes.InvalidParameterValueException
			if !errors.As(err, &typed) {
				t.Errorf("err %T is not *types.InvalidParameterValueException", err)
			}
			if h.sim.CallCount("GetMetricData") != 1 {
				t.Errorf("CallCount = %d", h.sim.CallCount("GetMetricData"))
			}
		})
	}
}

func TestGetMetricDataPagination(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	url := h.createQueue(t, "q", nil)
	for range 10 {
		h.send(t, url, "x")
		h.advance(time.Minute)
	}
	p := cloudwatch.NewGetMetricDataPaginator(h.cw, &cloudwatch.GetMetricDataInput{
		MetricDataQueries: []cwtypes.MetricDataQuery{
			sqsQuery("a", "q", "NumberOfMessagesSent", "Sum", 60),
			sqsQuery("b", "q", "SentMessageSize", "SampleCount", 60),
		},
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(10 * time.Minute)), MaxDatapoints: aws.Int32(3),
	})
	total, pages := 0, 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, r := range out.MetricDataResults {
			total += len(r.Values)
		}
	}
	if total != 20 || pages != 7 {
		t.Errorf("%d points in %d pages, want 20 in 7", total, pages)
	}
}

func TestAlarms(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, err := h.cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName:          aws.String("calls-dlq-arrivals"),
		Namespace:          aws.String("AWS/SQS"),
		MetricName:         aws.String("ApproximateNumberOfMessagesVisible"),
		Dimensions:         []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("calls-dlq")}},
		Statistic:          cwtypes.StatisticMaximum,
		Period:             aws.Int32(60),
		EvaluationPeriods:  aws.Int32(1),
		Threshold:          aws.Float64(1),
		ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
		AlarmActions:       []string{"arn:aws:sns:us-east-1:000000000000:oncall"},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   cloudwatch.DescribeAlarmsInput
		want []string
	}{
		{name: "by name", in: cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"calls-dlq-arrivals"}}, want: []string{"calls-dlq-arrivals"}},
		{name: "by prefix", in: cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("calls-")}, want: []string{"calls-dlq-arrivals"}},
		{name: "other prefix", in: cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String("orders-")}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := h.cw.DescribeAlarms(ctx, &tt.in)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, a := range out.MetricAlarms {
				names = append(names, aws.ToString(a.AlarmName))
				if aws.ToString(a.MetricName) != "ApproximateNumberOfMessagesVisible" || len(a.Dimensions) != 1 ||
					aws.ToFloat64(a.Threshold) != 1 || a.ComparisonOperator != cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold ||
					a.StateValue != cwtypes.StateValueInsufficientData || len(a.AlarmActions) != 1 {
					t.Errorf("alarm %+v", a)
				}
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("alarms %v, want %v", names, tt.want)
			}
		})
	}
	_, err = h.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"a"}, AlarmNamePrefix: aws.String("a")})
	var combo *cwtypes.InvalidParameterCombinationException
	if !errors.As(err, &combo) {
		t.Errorf("names with prefix: %v", err)
	}
}

func TestListMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createQueue(t, "std", nil)
	h.createQueue(t, "f.fifo", map[string]string{"FifoQueue": "true"})
	out, err := h.cw.ListMetrics(context.Background(), &cloudwatch.ListMetricsInput{Namespace: aws.String("AWS/SQS")})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Metrics) != 9+11 {
		t.Errorf("%d metrics, want 20 (9 standard, 11 FIFO)", len(out.Metrics))
	}
}

// TestAgeOfOldestMessage checks ApproximateAgeOfOldestMessage as each
// minute begins: counted from the send, skipping a standard queue's message
// received three times or more, and on a dead-letter queue counted from the
// move, for standard and FIFO alike, as AWS documents.
func TestAgeOfOldestMessage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// run creates queues and sends at t0 (the clock stands there), ends
		// at t0+3m and returns the queue whose age to read.
		run  func(t *testing.T, h *harness) string
		want map[int]float64
	}{
		{"one message", func(t *testing.T, h *harness) string {
			url := h.createQueue(t, "q", nil)
			h.advance(10 * time.Second)
			h.send(t, url, "m")
			h.advance(3*time.Minute - 10*time.Second)
			return "q"
		}, map[int]float64{0: 0, 1: 50, 2: 110, 3: 170}},
		{"poison pill skipped", func(t *testing.T, h *harness) string {
			url := h.createQueue(t, "q", map[string]string{"VisibilityTimeout": "0"})
			h.send(t, url, "poison")
			for range 3 {
				h.receive(t, url, 1)
			}
			h.advance(30 * time.Second)
			h.send(t, url, "next")
			h.advance(150 * time.Second)
			return "q"
		}, map[int]float64{0: 0, 1: 30, 2: 90, 3: 150}},
		{"standard dead-letter queue", func(t *testing.T, h *harness) string {
			return deadLetterAfterOneMinute(t, h, false)
		}, map[int]float64{0: 0, 1: 0, 2: 60, 3: 120}},
		{"fifo dead-letter queue", func(t *testing.T, h *harness) string {
			return deadLetterAfterOneMinute(t, h, true)
		}, map[int]float64{0: 0, 1: 0, 2: 60, 3: 120}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			queue := tt.run(t, h)
			out, err := h.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
				MetricDataQueries: []cwtypes.MetricDataQuery{sqsQuery("age", queue, "ApproximateAgeOfOldestMessage", "Maximum", 60)},
				StartTime:         aws.Time(t0),
				EndTime:           aws.Time(t0.Add(4 * time.Minute)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := points(out.MetricDataResults[0]); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("age points %v, want %v", got, tt.want)
			}
		})
	}
}

// deadLetterAfterOneMinute sends a message at t0 to a queue with
// maxReceiveCount 3, receives it three times, moves it to the DLQ with the
// fourth receive at t0+1m, and leaves the clock at t0+3m.
func deadLetterAfterOneMinute(t *testing.T, h *harness, fifo bool) string {
	suffix, attrs := "", map[string]string{}
	var opts []func(*sqs.SendMessageInput)
	if fifo {
		suffix, attrs = ".fifo", map[string]string{"FifoQueue": "true"}
		opts = append(opts, inGroup("sess", "tc_1"))
	}
	dlq := h.createQueue(t, "dlq"+suffix, attrs)
	attrs["VisibilityTimeout"] = "0"
	attrs["RedrivePolicy"] = `{"deadLetterTargetArn":"` + h.queueARN(t, dlq) + `","maxReceiveCount":3}`
	src := h.createQueue(t, "src"+suffix, attrs)
	h.send(t, src, "poison", opts...)
	for range 3 {
		if len(h.receive(t, src, 1)) != 1 {
			t.Fatal("receive got nothing")
		}
	}
	h.advance(time.Minute)
	if got := h.receive(t, src, 1); len(got) != 0 {
		t.Fatalf("fourth receive returned %v, want the message moved", bodies(got))
	}
	h.advance(2 * time.Minute)
	return "dlq" + suffix
}
