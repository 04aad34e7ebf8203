package sqsim

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// Alarm states, as DescribeAlarms reports them.
const (
	alarmOK               = "OK"
	alarmAlarm            = "ALARM"
	alarmInsufficientData = "INSUFFICIENT_DATA"
)

// alarm is a metric alarm as PutMetricAlarm configured it, and the state
// its last evaluation left.
//
// Alarms are evaluated on the simulator's clock at the first Tick of every
// minute (of every period, for periods of 10 and 30 seconds), against the
// simulator's metrics, AWS/SQS or custom, over the last EvaluationPeriods
// periods that ended by then (periods are aligned to multiples of Period
// since the epoch). A newly created alarm is INSUFFICIENT_DATA until its
// first evaluation.
type alarm struct {
	name      string
	updatedAt time.Time
	// config holds the alarm's settings, re-encoded as DescribeAlarms
	// returns them.
	config cbor.Map

	// What evaluation needs of config. watch is the metric, period and
	// statistic evaluated: the alarm's own, or that of the one query of its
	// Metrics that returns data when that query is a MetricStat. Its stat is
	// empty for what the simulator does not evaluate (extended statistics,
	// metric math expressions).
	watch             metricQuery
	evaluationPeriods int64
	datapointsToAlarm int64
	threshold         float64
	hasThreshold      bool
	comparison        string
	treatMissingData  string

	state           string
	stateReason     string
	stateReasonData string
	stateUpdatedAt  time.Time
	// evaluated is the step of the last evaluation: now's Unix seconds
	// divided by the alarm's evaluation interval.
	evaluated int64
}

// interval is how often a is evaluated, in seconds: every minute, or every
// period for a high-resolution alarm.
func (a *alarm) interval() int64 {
	if a.watch.period > 0 && a.watch.period < 60 {
		return a.watch.period
	}
	return 60
}

var comparisonOperators = []string{
	"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold",
	"LessThanLowerOrGreaterThanUpperThreshold", "LessThanLowerThreshold", "GreaterThanUpperThreshold",
}

// comparisonPhrases are the words AWS's state reasons use for the
// operators the simulator evaluates.
var comparisonPhrases = map[string]string{
	"GreaterThanOrEqualToThreshold": "greater than or equal to",
	"GreaterThanThreshold":          "greater than",
	"LessThanThreshold":             "less than",
	"LessThanOrEqualToThreshold":    "less than or equal to",
}

var treatMissingDataValues = []string{"breaching", "notBreaching", "ignore", "missing"}

func (s *Simulator) alarmARN(name string) string {
	return s.arn("cloudwatch", "alarm:"+name)
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
	threshold, hasThreshold := in.float(in.m, "Threshold")
	if hasThreshold {
		config["Threshold"] = cbor.Float64(threshold)
	}
	actionsEnabled := true
	if v, ok := in.boolean(in.m, "ActionsEnabled"); ok {
		actionsEnabled = v
	}
	config["ActionsEnabled"] = cbor.Bool(actionsEnabled)
	dims, err := in.dimensions(in.m, "Dimensions", "Dimensions")
	if err != nil {
		return nil, err
	}
	config["Dimensions"] = cborDimensions(dims)
	metrics, hasMetrics := in.list(in.m, "Metrics")
	op, _ := in.str(in.m, "ComparisonOperator")
	evaluationPeriods, _ := in.integer(in.m, "EvaluationPeriods")
	datapointsToAlarm, hasDatapoints := in.integer(in.m, "DatapointsToAlarm")
	period, hasPeriod := in.integer(in.m, "Period")
	statistic, _ := in.str(in.m, "Statistic")
	unit, _ := in.str(in.m, "Unit")
	treatMissing, hasTreatMissing := in.str(in.m, "TreatMissingData")
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
	case hasDatapoints && (datapointsToAlarm < 1 || datapointsToAlarm > evaluationPeriods):
		return nil, errCWInvalidParameterValue("DatapointsToAlarm must be between 1 and the EvaluationPeriods (%d).", evaluationPeriods)
	case hasMetrics && (config["MetricName"] != nil || config["Namespace"] != nil || statistic != "" || config["ExtendedStatistic"] != nil || hasPeriod || unit != "" || len(dims) > 0):
		return nil, errCWInvalidParameterCombination("The Metrics parameter excludes MetricName, Namespace, Dimensions, Period, Unit, Statistic and ExtendedStatistic: each query of Metrics names its own.")
	case config["MetricName"] != nil && !hasPeriod:
		return nil, errCWMissingParameter("Period")
	case hasPeriod && !validAlarmPeriod(period):
		return nil, errCWInvalidParameterValue("The parameter Period must be 10, 30 or a multiple of 60.")
	case statistic != "" && !slices.Contains(statistics, statistic):
		return nil, errCWInvalidParameterValue("Invalid value %s for Statistic.", truncate(statistic, 60))
	case unit != "" && !slices.Contains(standardUnits, unit):
		return nil, errCWInvalidParameterValue("Invalid value %s for Unit.", truncate(unit, 60))
	case hasTreatMissing && !slices.Contains(treatMissingDataValues, treatMissing):
		return nil, errCWInvalidParameterValue("Invalid value %s for TreatMissingData: use breaching, notBreaching, ignore or missing.", truncate(treatMissing, 60))
	}
	watch := metricQuery{period: period, stat: statistic, unit: unit, dims: dims}
	watch.namespace, _ = in.str(in.m, "Namespace")
	watch.metric, _ = in.str(in.m, "MetricName")
	if hasMetrics {
		queries, returned, err := in.alarmMetrics(metrics)
		if err != nil {
			return nil, err
		}
		config["Metrics"] = queries
		watch = returned
	}
	if !hasDatapoints {
		datapointsToAlarm = evaluationPeriods
	}
	config["ComparisonOperator"] = cbor.String(op)
	now := s.clock.Now()
	a := s.alarms[name]
	if a == nil {
		// An update keeps the state; a new alarm starts without one.
		a = &alarm{
			name:           name,
			state:          alarmInsufficientData,
			stateReason:    "Unchecked: Initial alarm creation",
			stateUpdatedAt: now,
		}
		s.alarms[name] = a
	}
	a.updatedAt, a.config = now, config
	a.watch, a.comparison = watch, op
	a.evaluationPeriods, a.datapointsToAlarm = evaluationPeriods, datapointsToAlarm
	a.threshold, a.hasThreshold = threshold, hasThreshold
	a.treatMissingData = treatMissing
	if a.treatMissingData == "" {
		a.treatMissingData = "missing"
	}
	// The first evaluation comes with the next interval.
	a.evaluated = now.Unix() / a.interval()
	return cbor.Map{}, nil
}

// validAlarmPeriod reports whether an alarm may evaluate periods of p
// seconds: 10 and 30 for high-resolution metrics, or a multiple of 60.
func validAlarmPeriod(p int64) bool {
	return p == 10 || p == 30 || (p > 0 && p%60 == 0)
}

// alarmMetrics reads a metric-math alarm's Metrics: each query an Id and
// either an Expression or a MetricStat, exactly one of them returning data.
// It returns them re-encoded as DescribeAlarms returns them, and what
// evaluation watches: the returned query's MetricStat, or nothing (an
// empty stat) when that query is an expression.
func (in *cborInput) alarmMetrics(l cbor.List) (cbor.List, metricQuery, *apiError) {
	var watch metricQuery
	out := cbor.List{}
	ids := map[string]bool{}
	returning := 0
	for i, v := range l {
		m, ok := v.(cbor.Map)
		if !ok {
			in.fail("Metrics", "a list of structures")
			return nil, watch, in.err
		}
		q, encoded, err := in.alarmMetric(m, i+1)
		if err != nil {
			return nil, watch, err
		}
		if ids[q.id] {
			return nil, watch, errCWInvalidParameterValue("The value %s for field Id is not unique.", truncate(q.id, 100))
		}
		ids[q.id] = true
		if q.returnData {
			returning++
			watch = q
		}
		out = append(out, encoded)
	}
	if returning != 1 {
		return nil, watch, errCWInvalidParameterValue("Exactly one element of the metrics list should return data.")
	}
	if watch.stat == "expression" {
		watch = metricQuery{}
	}
	return out, watch, nil
}

// alarmMetric reads the nth query of an alarm's Metrics.
func (in *cborInput) alarmMetric(m cbor.Map, n int) (metricQuery, cbor.Map, *apiError) {
	field := "Metrics.member." + strconv.Itoa(n)
	q, err := in.metricQuery(m)
	if err != nil {
		return q, nil, err
	}
	expression, hasExpression := in.str(m, "Expression")
	_, hasStat := in.structure(m, "MetricStat")
	accountID, hasAccount := in.str(m, "AccountId")
	queryPeriod, hasQueryPeriod := in.integer(m, "Period")
	label, hasLabel := in.str(m, "Label")
	if in.err != nil {
		return q, nil, in.err
	}
	switch {
	case !metricQueryIDPattern.MatchString(q.id):
		return q, nil, errCWInvalidParameterValue("The value %s for parameter %s.Id is invalid: it must start with a lowercase letter and contain only letters, numbers and underscores.", truncate(q.id, 100), field)
	case hasExpression == hasStat:
		return q, nil, errCWInvalidParameterCombination("The parameters %s.Expression and %s.MetricStat are mutually exclusive and one of them must be specified.", field, field)
	case hasStat && (q.metric == "" || q.namespace == ""):
		return q, nil, errCWMissingParameter(field + ".MetricStat.Metric")
	case hasStat && !validAlarmPeriod(q.period):
		return q, nil, errCWInvalidParameterValue("The parameter %s.MetricStat.Period must be 10, 30 or a multiple of 60.", field)
	case hasStat && !slices.Contains(statistics, q.stat):
		return q, nil, errCWInvalidParameterValue("Invalid value %s for %s.MetricStat.Stat.", truncate(q.stat, 60), field)
	case q.unit != "" && !slices.Contains(standardUnits, q.unit):
		return q, nil, errCWInvalidParameterValue("Invalid value %s for %s.MetricStat.Unit.", truncate(q.unit, 60), field)
	}
	encoded := cbor.Map{"Id": cbor.String(q.id), "ReturnData": cbor.Bool(q.returnData)}
	if hasExpression {
		encoded["Expression"] = cbor.String(expression)
	}
	if hasLabel {
		encoded["Label"] = cbor.String(label)
	}
	if hasAccount {
		encoded["AccountId"] = cbor.String(accountID)
	}
	if hasQueryPeriod {
		encoded["Period"] = cborInt(queryPeriod)
	}
	if hasStat {
		stat := cbor.Map{
			"Metric": cbor.Map{"Namespace": cbor.String(q.namespace), "MetricName": cbor.String(q.metric), "Dimensions": cborDimensions(q.dims)},
			"Period": cborInt(q.period),
			"Stat":   cbor.String(q.stat),
		}
		if q.unit != "" {
			stat["Unit"] = cbor.String(q.unit)
		}
		encoded["MetricStat"] = stat
	}
	return q, encoded, nil
}

// evaluateAlarms evaluates every alarm whose evaluation interval began since
// its last evaluation.
func (s *Simulator) evaluateAlarms(now time.Time) {
	for _, a := range s.alarms {
		step := now.Unix() / a.interval()
		if step <= a.evaluated {
			continue
		}
		a.evaluated = step
		s.evaluate(a, now)
	}
}

// datapoint is one period's value of an alarm's metric.
type datapoint struct {
	at    time.Time
	value float64
}

// evaluate sets a's state from its metric over its evaluation range, as
// CloudWatch does for M out of N datapoints and TreatMissingData. The
// reason and its timestamp change only with the state.
func (s *Simulator) evaluate(a *alarm, now time.Time) {
	phrase, known := comparisonPhrases[a.comparison]
	if !known || a.watch.stat == "" || !a.hasThreshold || a.watch.metric == "" {
		// Extended statistics, anomaly bands and metric math are not
		// simulated: such an alarm keeps its state.
		return
	}
	period := time.Duration(a.watch.period) * time.Second
	end := time.Unix(now.Unix()/a.watch.period*a.watch.period, 0).UTC()
	start := end.Add(-time.Duration(a.evaluationPeriods) * period)
	times, values := s.metricSeries(a.watch, start, end, true)
	var points []datapoint // newest first
	for i := range times {
		points = append(points, datapoint{at: times[i], value: values[i]})
	}
	missing := int(a.evaluationPeriods) - len(points)
	breaching := 0
	for _, p := range points {
		if a.breaches(p.value) {
			breaching++
		}
	}
	switch a.treatMissingData {
	case "breaching":
		breaching += missing
	case "ignore":
		if len(points) == 0 {
			return
		}
	}
	state := alarmOK
	switch {
	case int64(breaching) >= a.datapointsToAlarm:
		state = alarmAlarm
	case len(points) == 0 && a.treatMissingData == "missing":
		state = alarmInsufficientData
	}
	if state == a.state {
		return
	}
	a.state = state
	a.stateUpdatedAt = now
	a.stateReason = a.reason(state, phrase, points, breaching, missing)
	a.stateReasonData = a.reasonData(now, start, points)
}

func (a *alarm) breaches(v float64) bool {
	switch a.comparison {
	case "GreaterThanOrEqualToThreshold":
		return v >= a.threshold
	case "GreaterThanThreshold":
		return v > a.threshold
	case "LessThanThreshold":
		return v < a.threshold
	case "LessThanOrEqualToThreshold":
		return v <= a.threshold
	}
	return false
}

// reason words a state change as CloudWatch does, for example "Threshold
// Crossed: 1 datapoint [3.0 (02/03/26 10:01:00)] was greater than or equal
// to the threshold (1.0)."
func (a *alarm) reason(state, phrase string, points []datapoint, breaching, missing int) string {
	n := int(a.evaluationPeriods)
	if state == alarmInsufficientData {
		if n == 1 {
			return "Insufficient Data: 1 datapoint was unknown."
		}
		return fmt.Sprintf("Insufficient Data: %d datapoints were unknown.", n)
	}
	shown := make([]string, len(points))
	for i, p := range points {
		shown[i] = javaDouble(p.value) + " (" + p.at.UTC().Format("02/01/06 15:04:05") + ")"
	}
	list := "[" + strings.Join(shown, ", ") + "]"
	if len(points) == 0 {
		return fmt.Sprintf("Threshold Crossed: no datapoints were received for %d periods and %d missing datapoints were treated as [%s].",
			n, missing, map[bool]string{true: "Breaching", false: "NonBreaching"}[state == alarmAlarm])
	}
	not := ""
	if state == alarmOK {
		not = "not "
	}
	if n == 1 {
		return fmt.Sprintf("Threshold Crossed: 1 datapoint %s was %s%s the threshold (%s).", list, not, phrase, javaDouble(a.threshold))
	}
	count := breaching
	transition := "OK -> ALARM"
	if state == alarmOK {
		count = len(points) - min(breaching, len(points))
		transition = "ALARM -> OK"
	}
	verb := "were"
	if count == 1 {
		verb = "was"
	}
	return fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints %s %s %s%s the threshold (%s) (minimum %d datapoint%s for %s transition).",
		count, n, list, verb, not, phrase, javaDouble(a.threshold), a.datapointsToAlarm, plural(a.datapointsToAlarm), transition)
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// reasonData is the StateReasonData JSON CloudWatch attaches to a
// threshold alarm's state.
func (a *alarm) reasonData(now, start time.Time, points []datapoint) string {
	const layout = "2006-01-02T15:04:05.000+0000"
	type evaluated struct {
		Timestamp string  `json:"timestamp"`
		Value     float64 `json:"value"`
	}
	data := struct {
		Version             string      `json:"version"`
		QueryDate           string      `json:"queryDate"`
		StartDate           string      `json:"startDate"`
		Statistic           string      `json:"statistic"`
		Period              int64       `json:"period"`
		RecentDatapoints    []float64   `json:"recentDatapoints"`
		Threshold           float64     `json:"threshold"`
		EvaluatedDatapoints []evaluated `json:"evaluatedDatapoints"`
	}{
		Version: "1.0", QueryDate: now.UTC().Format(layout), StartDate: start.UTC().Format(layout),
		Statistic: a.watch.stat, Period: a.watch.period, Threshold: a.threshold,
		RecentDatapoints: []float64{}, EvaluatedDatapoints: []evaluated{},
	}
	for i := len(points) - 1; i >= 0; i-- {
		data.RecentDatapoints = append(data.RecentDatapoints, points[i].value)
	}
	for _, p := range points {
		data.EvaluatedDatapoints = append(data.EvaluatedDatapoints, evaluated{Timestamp: p.at.UTC().Format(layout), Value: p.value})
	}
	b, _ := json.Marshal(data)
	return string(b)
}

// javaDouble formats v as the Java services print a double: 1.0, 2.5.
func javaDouble(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e7 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
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
	if state != "" && state != alarmOK && state != alarmAlarm && state != alarmInsufficientData {
		return nil, errCWInvalidParameterValue("Invalid value %s for StateValue.", truncate(state, 60))
	}
	if !hasMax {
		maxRecords = 50
	}
	out := cbor.Map{"MetricAlarms": cbor.List{}, "CompositeAlarms": cbor.List{}}
	if len(types) > 0 && !slices.Contains(types, "MetricAlarm") {
		return out, nil
	}
	var matched []string
	for name, a := range s.alarms {
		if (len(names) == 0 || slices.Contains(names, name)) && strings.HasPrefix(name, prefix) &&
			(state == "" || state == a.state) && name > token {
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
		list = append(list, s.alarmView(s.alarms[name]))
	}
	out["MetricAlarms"] = list
	return out, nil
}

// alarmView is an alarm as DescribeAlarms and DescribeAlarmsForMetric show
// it: its configuration and its state.
func (s *Simulator) alarmView(a *alarm) cbor.Map {
	m := cbor.Map{
		"AlarmName":                          cbor.String(a.name),
		"AlarmArn":                           cbor.String(s.alarmARN(a.name)),
		"AlarmConfigurationUpdatedTimestamp": cborTime(a.updatedAt),
		"StateValue":                         cbor.String(a.state),
		"StateReason":                        cbor.String(a.stateReason),
		"StateUpdatedTimestamp":              cborTime(a.stateUpdatedAt),
		"StateTransitionedTimestamp":         cborTime(a.stateUpdatedAt),
	}
	if a.stateReasonData != "" {
		m["StateReasonData"] = cbor.String(a.stateReasonData)
	}
	for k, v := range a.config {
		m[k] = v
	}
	return m
}

// describeAlarmsForMetric lists the alarms on one metric: its namespace,
// name and whole set of dimensions, narrowed by the statistic, extended
// statistic, period and unit when given. Metric-math alarms watch no one
// metric and are not listed.
func (s *Simulator) describeAlarmsForMetric(in *cborInput) (cbor.Map, *apiError) {
	namespace, _ := in.str(in.m, "Namespace")
	metric, _ := in.str(in.m, "MetricName")
	filters := map[string]cbor.Value{}
	for _, key := range []string{"Statistic", "ExtendedStatistic", "Unit"} {
		if v, ok := in.str(in.m, key); ok {
			filters[key] = cbor.String(v)
		}
	}
	if v, ok := in.integer(in.m, "Period"); ok {
		filters["Period"] = cborInt(v)
	}
	dims, err := in.dimensions(in.m, "Dimensions", "Dimensions")
	if err != nil {
		return nil, err
	}
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case namespace == "":
		return nil, errCWMissingParameter("Namespace")
	case metric == "":
		return nil, errCWMissingParameter("MetricName")
	}
	want := metricKey(namespace, metric, dims)
	var names []string
	for name, a := range s.alarms {
		if a.config["Metrics"] != nil || metricKey(a.watch.namespace, a.watch.metric, a.watch.dims) != want {
			continue
		}
		matches := true
		for key, v := range filters {
			if !reflect.DeepEqual(a.config[key], v) {
				matches = false
			}
		}
		if matches {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	list := cbor.List{}
	for _, name := range names {
		list = append(list, s.alarmView(s.alarms[name]))
	}
	return cbor.Map{"MetricAlarms": list}, nil
}

// setAlarmState sets an alarm's state until its next evaluation, as
// CloudWatch's SetAlarmState does for testing alarm actions.
func (s *Simulator) setAlarmState(in *cborInput) (cbor.Map, *apiError) {
	name, _ := in.str(in.m, "AlarmName")
	state, _ := in.str(in.m, "StateValue")
	reason, hasReason := in.str(in.m, "StateReason")
	data, _ := in.str(in.m, "StateReasonData")
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case name == "":
		return nil, errCWMissingParameter("AlarmName")
	case !hasReason:
		return nil, errCWMissingParameter("StateReason")
	case state != alarmOK && state != alarmAlarm && state != alarmInsufficientData:
		return nil, errCWInvalidParameterValue("Invalid value %s for StateValue.", truncate(state, 60))
	case data != "" && !json.Valid([]byte(data)):
		return nil, newAPIError(400, "InvalidFormatFault", "InvalidFormat", "StateReasonData is not valid JSON.")
	}
	a := s.alarms[name]
	if a == nil {
		return nil, newAPIError(404, "ResourceNotFound", "ResourceNotFound", "The alarm %s does not exist.", truncate(name, 255))
	}
	now := s.clock.Now()
	if a.state != state {
		a.stateUpdatedAt = now
	}
	a.state, a.stateReason, a.stateReasonData = state, reason, data
	return cbor.Map{}, nil
}

func (s *Simulator) deleteAlarms(in *cborInput) (cbor.Map, *apiError) {
	// AlarmNames is required: a request without it (an empty map) is a mistake, not a
	// deletion of nothing.
	if _, ok := present(in.m, "AlarmNames"); !ok {
		return nil, errCWMissingParameter("AlarmNames")
	}
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
