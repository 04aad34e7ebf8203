package sqsim

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

func (h *harness) putAlarm(t *testing.T, in *cloudwatch.PutMetricAlarmInput) {
	t.Helper()
	in.EvaluationPeriods = aws.Int32(1)
	in.ComparisonOperator = cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold
	if _, err := h.cw.PutMetricAlarm(context.Background(), in); err != nil {
		t.Fatalf("PutMetricAlarm %s: %v", aws.ToString(in.AlarmName), err)
	}
}

// TestAlarmOnCustomMetric: an alarm on a metric an MCP server publishes is
// evaluated as the AWS/SQS ones are, and a high-resolution alarm (Period 10)
// every ten seconds.
func TestAlarmOnCustomMetric(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	errorsOf := []cwtypes.Dimension{dim("tool", "web_search")}
	h.putAlarm(t, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("tool-errors"), Namespace: aws.String("mcp/tools"), MetricName: aws.String("errors"),
		Dimensions: errorsOf, Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), Threshold: aws.Float64(5)})
	h.putAlarm(t, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("slow-calls"), Namespace: aws.String("mcp/tools"), MetricName: aws.String("latency"),
		Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(10), Threshold: aws.Float64(200)})
	h.put(t, "mcp/tools",
		cwtypes.MetricDatum{MetricName: aws.String("errors"), Dimensions: errorsOf, Value: aws.Float64(3)},
		cwtypes.MetricDatum{MetricName: aws.String("errors"), Dimensions: errorsOf, Value: aws.Float64(4)},
		cwtypes.MetricDatum{MetricName: aws.String("latency"), Value: aws.Float64(250), StorageResolution: aws.Int32(1), Timestamp: aws.Time(t0.Add(5 * time.Second))})

	h.advance(10 * time.Second)
	if a := h.alarm(t, "slow-calls"); a.StateValue != cwtypes.StateValueAlarm {
		t.Errorf("slow-calls ten seconds on: %s (%s), want ALARM", a.StateValue, aws.ToString(a.StateReason))
	}
	if a := h.alarm(t, "tool-errors"); a.StateValue != cwtypes.StateValueInsufficientData {
		t.Errorf("tool-errors before its minute ended: %s, want INSUFFICIENT_DATA", a.StateValue)
	}
	h.advance(10 * time.Second)
	if a := h.alarm(t, "slow-calls"); a.StateValue != cwtypes.StateValueInsufficientData {
		t.Errorf("slow-calls after a period without data: %s, want INSUFFICIENT_DATA", a.StateValue)
	}
	h.advance(40 * time.Second)
	a := h.alarm(t, "tool-errors")
	const reason = "Threshold Crossed: 1 datapoint [7.0 (02/03/26 10:00:00)] was greater than or equal to the threshold (5.0)."
	if a.StateValue != cwtypes.StateValueAlarm || aws.ToString(a.StateReason) != reason {
		t.Errorf("tool-errors once its minute ended: %s %q, want ALARM %q", a.StateValue, aws.ToString(a.StateReason), reason)
	}
}

// TestDescribeAlarmsForMetric lists the alarms of one metric: its whole
// set of dimensions in any order, narrowed by statistic or period.
func TestDescribeAlarmsForMetric(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	dims := []cwtypes.Dimension{dim("server", "research"), dim("tool", "web_search")}
	metric := func(name string, stat cwtypes.Statistic, period int32, dims []cwtypes.Dimension) *cloudwatch.PutMetricAlarmInput {
		return &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name), Namespace: aws.String("mcp"), MetricName: aws.String("errors"),
			Dimensions: dims, Statistic: stat, Period: aws.Int32(period), Threshold: aws.Float64(1)}
	}
	h.putAlarm(t, metric("errors-sum", cwtypes.StatisticSum, 60, dims))
	h.putAlarm(t, metric("errors-max", cwtypes.StatisticMaximum, 300, dims))
	h.putAlarm(t, metric("errors-other-server", cwtypes.StatisticSum, 60, []cwtypes.Dimension{dim("server", "docs"), dim("tool", "web_search")}))
	h.putAlarm(t, metric("errors-no-dimensions", cwtypes.StatisticSum, 60, nil))
	tests := []struct {
		name string
		in   cloudwatch.DescribeAlarmsForMetricInput
		want []string
	}{
		{"the metric", cloudwatch.DescribeAlarmsForMetricInput{Dimensions: dims}, []string{"errors-max", "errors-sum"}},
		{"its dimensions in another order", cloudwatch.DescribeAlarmsForMetricInput{Dimensions: []cwtypes.Dimension{dims[1], dims[0]}}, []string{"errors-max", "errors-sum"}},
		{"a statistic", cloudwatch.DescribeAlarmsForMetricInput{Dimensions: dims, Statistic: cwtypes.StatisticMaximum}, []string{"errors-max"}},
		{"a period", cloudwatch.DescribeAlarmsForMetricInput{Dimensions: dims, Period: aws.Int32(60)}, []string{"errors-sum"}},
		{"no dimensions", cloudwatch.DescribeAlarmsForMetricInput{}, []string{"errors-no-dimensions"}},
		{"part of its dimensions", cloudwatch.DescribeAlarmsForMetricInput{Dimensions: dims[:1]}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			in.Namespace, in.MetricName = aws.String("mcp"), aws.String("errors")
			out, err := h.cw.DescribeAlarmsForMetric(ctx, &in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range out.MetricAlarms {
				got = append(got, aws.ToString(a.AlarmName))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("alarms %v, want %v", got, tt.want)
			}
		})
	}
}

// TestMetricMathAlarm: an alarm on a metric-math expression keeps its
// Metrics as given, for DescribeAlarms to return (the simulator does not
// evaluate the expression: the alarm keeps its state); Metrics is refused
// beside MetricName, and with other than one query returning data.
func TestMetricMathAlarm(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	stat := func(metric string) *cwtypes.MetricStat {
		return &cwtypes.MetricStat{Metric: &cwtypes.Metric{Namespace: aws.String("mcp"), MetricName: aws.String(metric),
			Dimensions: []cwtypes.Dimension{dim("tool", "web_search")}}, Period: aws.Int32(60), Stat: aws.String("Sum")}
	}
	metrics := []cwtypes.MetricDataQuery{
		{Id: aws.String("rate"), Expression: aws.String("100 * errors / calls"), Label: aws.String("error rate"), ReturnData: aws.Bool(true)},
		{Id: aws.String("errors"), MetricStat: stat("errors"), ReturnData: aws.Bool(false)},
		{Id: aws.String("calls"), MetricStat: stat("calls"), ReturnData: aws.Bool(false)},
	}
	h.putAlarm(t, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("error-rate"), Metrics: metrics, Threshold: aws.Float64(5)})
	h.advance(2 * time.Minute)
	a := h.alarm(t, "error-rate")
	if !reflect.DeepEqual(a.Metrics, metrics) {
		t.Errorf("Metrics\n got %+v\nwant %+v", a.Metrics, metrics)
	}
	if a.MetricName != nil || a.StateValue != cwtypes.StateValueInsufficientData {
		t.Errorf("MetricName %v, state %s; want none and INSUFFICIENT_DATA kept", a.MetricName, a.StateValue)
	}
	refused := []struct {
		name string
		in   cloudwatch.PutMetricAlarmInput
		code string
	}{
		{"Metrics beside MetricName", cloudwatch.PutMetricAlarmInput{Metrics: metrics, Namespace: aws.String("mcp"), MetricName: aws.String("errors")}, "InvalidParameterCombination"},
		{"two queries returning data", cloudwatch.PutMetricAlarmInput{Metrics: []cwtypes.MetricDataQuery{metrics[0], {Id: aws.String("errors"), MetricStat: stat("errors")}}}, "InvalidParameterValue"},
		{"a query with neither expression nor metric", cloudwatch.PutMetricAlarmInput{Metrics: []cwtypes.MetricDataQuery{{Id: aws.String("x"), ReturnData: aws.Bool(true)}}}, "InvalidParameterCombination"},
	}
	for _, tt := range refused {
		in := tt.in
		in.AlarmName, in.Threshold, in.EvaluationPeriods = aws.String("refused"), aws.Float64(1), aws.Int32(1)
		in.ComparisonOperator = cwtypes.ComparisonOperatorGreaterThanThreshold
		_, err := h.cw.PutMetricAlarm(ctx, &in)
		var api smithy.APIError
		if !errors.As(err, &api) || api.ErrorCode() != tt.code {
			t.Errorf("%s: %v, want %s", tt.name, err, tt.code)
		}
	}
	if out, _ := h.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"refused"}}); len(out.MetricAlarms) != 0 {
		t.Error("a refused alarm was stored")
	}
}
