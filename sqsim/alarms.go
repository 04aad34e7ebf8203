package sqsim

import (
	"slices"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// alarm is a metric alarm as PutMetricAlarm configured it. The simulator
// stores alarms so that a client can ask whether one exists; it does not
// evaluate them, so their state stays INSUFFICIENT_DATA.
type alarm struct {
	name      string
	updatedAt time.Time
	// config holds the alarm's settings, re-encoded as DescribeAlarms
	// returns them.
	config cbor.Map
}

var comparisonOperators = []string{
	"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold",
	"LessThanLowerOrGreaterThanUpperThreshold", "LessThanLowerThreshold", "GreaterThanUpperThreshold",
}

func (s *Simulator) alarmARN(name string) string {
	return "arn:aws:cloudwatch:" + s.region + ":" + s.accountID + ":alarm:" + name
}

func (s *Simulator) putMetricAlarm(in *cborInput) (cbor.Map, *apiError) {
	name, _ := in.str(in.m, "AlarmName")
	config := cbor.Map{}
	// Each setting is read with its type checked, then kept as sent.
	for _, key := range []string{"AlarmDescription", "MetricName", "Namespace", "Statistic", "ExtendedStatistic", "Unit", "TreatMissingData", "EvaluateLowSampleCountPercentile", "ThresholdMetricId"} {
		if v, ok := in.str(in.m, key); ok {
			config[key] = cbor.String(v)
		}
	}
	for _, key := range []string{"Period", "EvaluationPeriods", "DatapointsToAlarm"} {
		if v, ok := in.integer(in.m, key); ok {
			config[key] = cborInt(v)
		}
	}
	for _, key := range []string{"OKActions", "AlarmActions", "InsufficientDataActions"} {
		config[key] = cborStrings(in.strings(in.m, key))
	}
	if v, ok := in.float(in.m, "Threshold"); ok {
		config["Threshold"] = cbor.Float64(v)
	}
	actionsEnabled := true
	if v, ok := in.boolean(in.m, "ActionsEnabled"); ok {
		actionsEnabled = v
	}
	config["ActionsEnabled"] = cbor.Bool(actionsEnabled)
	dims := cbor.List{}
	for _, d := range in.structures(in.m, "Dimensions") {
		n, _ := in.str(d, "Name")
		v, _ := in.str(d, "Value")
		dims = append(dims, cbor.Map{"Name": cbor.String(n), "Value": cbor.String(v)})
	}
	config["Dimensions"] = dims
	op, _ := in.str(in.m, "ComparisonOperator")
	evaluationPeriods, _ := in.integer(in.m, "EvaluationPeriods")
	period, hasPeriod := in.integer(in.m, "Period")
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case name == "" || len(name) > 255:
		return nil, errCWMissingParameter("AlarmName")
	case op == "":
		return nil, errCWMissingParameter("ComparisonOperator")
	case !slices.Contains(comparisonOperators, op):
		return nil, errCWInvalidParameterValue("Invalid value %s for ComparisonOperator.", truncate(op, 60))
	case evaluationPeriods < 1:
		return nil, errCWInvalidParameterValue("The parameter EvaluationPeriods must be greater than or equal to 1.")
	case config["MetricName"] != nil && !hasPeriod:
		return nil, errCWMissingParameter("Period")
	case hasPeriod && period != 10 && period != 30 && (period < 60 || period%60 != 0):
		return nil, errCWInvalidParameterValue("The parameter Period must be 10, 30 or a multiple of 60.")
	}
	config["ComparisonOperator"] = cbor.String(op)
	s.alarms[name] = &alarm{name: name, updatedAt: s.clock.Now(), config: config}
	return cbor.Map{}, nil
}

func (s *Simulator) describeAlarms(in *cborInput) (cbor.Map, *apiError) {
	names := in.strings(in.m, "AlarmNames")
	prefix, hasPrefix := in.str(in.m, "AlarmNamePrefix")
	state, _ := in.str(in.m, "StateValue")
	types := in.strings(in.m, "AlarmTypes")
	maxRecords, hasMax := in.integer(in.m, "MaxRecords")
	token, _ := in.str(in.m, "NextToken")
	if in.err != nil {
		return nil, in.err
	}
	if len(names) > 0 && hasPrefix {
		return nil, errCWInvalidParameterCombination("AlarmNames and AlarmNamePrefix cannot be used together.")
	}
	if hasMax && (maxRecords < 1 || maxRecords > 100) {
		return nil, errCWInvalidParameterValue("The parameter MaxRecords must be between 1 and 100.")
	}
	if !hasMax {
		maxRecords = 50
	}
	out := cbor.Map{"MetricAlarms": cbor.List{}, "CompositeAlarms": cbor.List{}}
	if len(types) > 0 && !slices.Contains(types, "MetricAlarm") {
		return out, nil
	}
	var matched []string
	for name := range s.alarms {
		if (len(names) == 0 || slices.Contains(names, name)) && strings.HasPrefix(name, prefix) &&
			(state == "" || state == "INSUFFICIENT_DATA") && name > token {
			matched = append(matched, name)
		}
	}
	slices.Sort(matched)
	if int64(len(matched)) > maxRecords {
		matched = matched[:maxRecords]
		out["NextToken"] = cbor.String(matched[len(matched)-1])
	}
	list := cbor.List{}
	for _, name := range matched {
		a := s.alarms[name]
		m := cbor.Map{
			"AlarmName":                          cbor.String(a.name),
			"AlarmArn":                           cbor.String(s.alarmARN(a.name)),
			"AlarmConfigurationUpdatedTimestamp": cborTime(a.updatedAt),
			"StateValue":                         cbor.String("INSUFFICIENT_DATA"),
			"StateReason":                        cbor.String("Unchecked: Initial alarm creation"),
			"StateUpdatedTimestamp":              cborTime(a.updatedAt),
		}
		for k, v := range a.config {
			m[k] = v
		}
		list = append(list, m)
	}
	out["MetricAlarms"] = list
	return out, nil
}

func (s *Simulator) deleteAlarms(in *cborInput) (cbor.Map, *apiError) {
	names := in.strings(in.m, "AlarmNames")
	if in.err != nil {
		return nil, in.err
	}
	for _, name := range names {
		if s.alarms[name] == nil {
			return nil, newAPIError(404, "ResourceNotFound", "ResourceNotFound", "The alarm %s does not exist.", truncate(name, 255))
		}
	}
	for _, name := range names {
		delete(s.alarms, name)
	}
	return cbor.Map{}, nil
}
