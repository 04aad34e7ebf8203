package sqsim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// TestAlarmEvaluation drives alarms on a queue's metrics minute by minute
// and checks the state DescribeAlarms reports at each minute: the seeds'
// DLQ alarms (depth, and NumberOfMessagesSent, at least 1 in one minute), M
// out of N datapoints, and TreatMissingData on a queue that has no data.
func TestAlarmEvaluation(t *testing.T) {
	t.Parallel()
	type alarmSpec struct {
		queue, metric, stat string
		threshold           float64
		op                  cwtypes.ComparisonOperator
		periods, toAlarm    int32
		missing             string
	}
	tests := []struct {
		name  string
		alarm alarmSpec
		// sends[m] messages are sent at minute m plus ten seconds.
		sends map[int]int
		// want[m] is the state read at minute m, before that minute's sends.
		want []cwtypes.StateValue
	}{
		{
			name:  "dlq depth",
			alarm: alarmSpec{queue: "calls-dlq", metric: "ApproximateNumberOfMessagesVisible", stat: "Maximum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 1},
			sends: map[int]int{1: 1},
			// The minute-2 gauge sees the message; it is evaluated once
			// that minute has ended.
			want: []cwtypes.StateValue{"INSUFFICIENT_DATA", "OK", "OK", "ALARM", "ALARM"},
		},
		{
			name:  "dlq arrivals per minute",
			alarm: alarmSpec{queue: "calls-dlq", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 1},
			sends: map[int]int{1: 2},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "OK", "ALARM", "OK", "OK"},
		},
		{
			name:  "2 out of 3",
			alarm: alarmSpec{queue: "calls-dlq", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 3, toAlarm: 2},
			sends: map[int]int{1: 1, 3: 1},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "OK", "OK", "OK", "ALARM", "OK"},
		},
		{
			name:  "less than",
			alarm: alarmSpec{queue: "calls-dlq", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorLessThanThreshold, periods: 1},
			sends: map[int]int{1: 1},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "ALARM", "OK", "ALARM"},
		},
		{
			name:  "no data, missing",
			alarm: alarmSpec{queue: "nope", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 1},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "INSUFFICIENT_DATA", "INSUFFICIENT_DATA"},
		},
		{
			name:  "no data, notBreaching",
			alarm: alarmSpec{queue: "nope", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 1, missing: "notBreaching"},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "OK", "OK"},
		},
		{
			name:  "no data, breaching",
			alarm: alarmSpec{queue: "nope", metric: "NumberOfMessagesSent", stat: "Sum", threshold: 1, op: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold, periods: 1, missing: "breaching"},
			want:  []cwtypes.StateValue{"INSUFFICIENT_DATA", "ALARM", "ALARM"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			url := h.createQueue(t, "calls-dlq", nil)
			in := &cloudwatch.PutMetricAlarmInput{
				AlarmName:          aws.String("a"),
				Namespace:          aws.String("AWS/SQS"),
				MetricName:         aws.String(tt.alarm.metric),
				Dimensions:         []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String(tt.alarm.queue)}},
				Statistic:          cwtypes.Statistic(tt.alarm.stat),
				Period:             aws.Int32(60),
				EvaluationPeriods:  aws.Int32(tt.alarm.periods),
				Threshold:          aws.Float64(tt.alarm.threshold),
				ComparisonOperator: tt.alarm.op,
			}
			if tt.alarm.toAlarm > 0 {
				in.DatapointsToAlarm = aws.Int32(tt.alarm.toAlarm)
			}
			if tt.alarm.missing != "" {
				in.TreatMissingData = aws.String(tt.alarm.missing)
			}
			if _, err := h.cw.PutMetricAlarm(ctx, in); err != nil {
				t.Fatal(err)
			}
			var got []cwtypes.StateValue
			for m := range tt.want {
				if m > 0 {
					h.clock.Set(t0.Add(time.Duration(m) * time.Minute))
					h.sim.Tick()
				}
				got = append(got, h.alarm(t, "a").StateValue)
				h.clock.Set(t0.Add(time.Duration(m)*time.Minute + 10*time.Second))
				for i := range tt.sends[m] {
					h.send(t, url, fmt.Sprint("m", m, "-", i))
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("states by minute %v, want %v", got, tt.want)
			}
		})
	}
}

func (h *harness) alarm(t *testing.T, name string) cwtypes.MetricAlarm {
	t.Helper()
	out, err := h.cw.DescribeAlarms(context.Background(), &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.MetricAlarms) != 1 {
		t.Fatalf("DescribeAlarms %s: %d alarms", name, len(out.MetricAlarms))
	}
	return out.MetricAlarms[0]
}

// TestAlarmStateDetails checks what DescribeAlarms says of a state change:
// AWS's reason text, the reason data, the time of the change (not of the
// latest evaluation), the StateValue filter, and that an update of the
// alarm keeps its state.
func TestAlarmStateDetails(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	url := h.createQueue(t, "calls-dlq", nil)
	put := func(description string) {
		t.Helper()
		_, err := h.cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String("calls-dlq-depth"), AlarmDescription: aws.String(description),
			Namespace: aws.String("AWS/SQS"), MetricName: aws.String("ApproximateNumberOfMessagesVisible"),
			Dimensions: []cwtypes.Dimension{{Name: aws.String("QueueName"), Value: aws.String("calls-dlq")}},
			Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1),
			Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanOrEqualToThreshold,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("first")
	a := h.alarm(t, "calls-dlq-depth")
	if aws.ToString(a.StateReason) != "Unchecked: Initial alarm creation" || !aws.ToTime(a.StateUpdatedTimestamp).Equal(t0) {
		t.Errorf("new alarm: %q at %v", aws.ToString(a.StateReason), aws.ToTime(a.StateUpdatedTimestamp))
	}
	h.send(t, url, "dead letter")
	h.advance(2 * time.Minute) // the minute-1 gauge (1 message) ended at 10:02
	a = h.alarm(t, "calls-dlq-depth")
	wantReason := "Threshold Crossed: 1 datapoint [1.0 (02/03/26 10:01:00)] was greater than or equal to the threshold (1.0)."
	if a.StateValue != cwtypes.StateValueAlarm || aws.ToString(a.StateReason) != wantReason {
		t.Errorf("state %s %q, want ALARM %q", a.StateValue, aws.ToString(a.StateReason), wantReason)
	}
	changedAt := t0.Add(2 * time.Minute)
	if !aws.ToTime(a.StateUpdatedTimestamp).Equal(changedAt) || !aws.ToTime(a.StateTransitionedTimestamp).Equal(changedAt) {
		t.Errorf("state updated %v, transitioned %v, want %v", aws.ToTime(a.StateUpdatedTimestamp), aws.ToTime(a.StateTransitionedTimestamp), changedAt)
	}
	var data struct {
		Statistic        string    `json:"statistic"`
		Period           int       `json:"period"`
		RecentDatapoints []float64 `json:"recentDatapoints"`
		Threshold        float64   `json:"threshold"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(a.StateReasonData)), &data); err != nil || data.Statistic != "Maximum" || data.Period != 60 ||
		!slices.Equal(data.RecentDatapoints, []float64{1}) || data.Threshold != 1 {
		t.Errorf("reason data %s (%v)", aws.ToString(a.StateReasonData), err)
	}

	// Still in ALARM a minute later: the change time stays.
	h.advance(time.Minute)
	put("second") // an update keeps the state
	a = h.alarm(t, "calls-dlq-depth")
	if a.StateValue != cwtypes.StateValueAlarm || !aws.ToTime(a.StateUpdatedTimestamp).Equal(changedAt) || aws.ToString(a.AlarmDescription) != "second" {
		t.Errorf("after an update: %s since %v, description %q", a.StateValue, aws.ToTime(a.StateUpdatedTimestamp), aws.ToString(a.AlarmDescription))
	}
	for _, tc := range []struct {
		state cwtypes.StateValue
		want  int
	}{{cwtypes.StateValueAlarm, 1}, {cwtypes.StateValueOk, 0}, {cwtypes.StateValueInsufficientData, 0}} {
		out, err := h.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{StateValue: tc.state})
		if err != nil || len(out.MetricAlarms) != tc.want {
			t.Errorf("StateValue %s: %d alarms (%v), want %d", tc.state, len(out.MetricAlarms), err, tc.want)
		}
	}

	// Emptied, the queue's alarm goes back to OK once a minute's gauge
	// says so.
	got := h.receive(t, url, 1)
	h.delete(t, url, got[0])
	h.advance(2 * time.Minute)
	a = h.alarm(t, "calls-dlq-depth")
	if a.StateValue != cwtypes.StateValueOk || !strings.Contains(aws.ToString(a.StateReason), "was not greater than or equal to the threshold (1.0)") {
		t.Errorf("after emptying: %s %q", a.StateValue, aws.ToString(a.StateReason))
	}

	// SetAlarmState holds until the next evaluation changes it back.
	if _, err := h.cw.SetAlarmState(ctx, &cloudwatch.SetAlarmStateInput{AlarmName: aws.String("calls-dlq-depth"), StateValue: cwtypes.StateValueAlarm, StateReason: aws.String("testing the pager")}); err != nil {
		t.Fatal(err)
	}
	if a = h.alarm(t, "calls-dlq-depth"); a.StateValue != cwtypes.StateValueAlarm || aws.ToString(a.StateReason) != "testing the pager" {
		t.Errorf("after SetAlarmState: %s %q", a.StateValue, aws.ToString(a.StateReason))
	}
	h.advance(time.Minute)
	if a = h.alarm(t, "calls-dlq-depth"); a.StateValue != cwtypes.StateValueOk {
		t.Errorf("next evaluation after SetAlarmState: %s, want OK", a.StateValue)
	}
}
