package sqsim

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// Custom metrics are those clients publish with PutMetricData, in any
// namespace but AWS/ ones: an MCP server's own latency or error counts, say.
// CloudWatch identifies a metric by its namespace, its name and its whole set
// of dimensions; a query names all three, and the dimensions must match
// exactly (a metric with dimensions is not found by a query without them).
// GetMetricData, GetMetricStatistics, ListMetrics and alarms read them as
// they read the simulator's own AWS/SQS metrics.

// dimension is one name and value of a metric's identity.
type dimension struct {
	Name, Value string
}

// customMetric is one metric published with PutMetricData.
type customMetric struct {
	namespace, name string
	dims            []dimension // as first published
	// points holds the data by unit, then by the second its storage interval
	// starts: the second itself for high-resolution data (StorageResolution
	// 1), the minute's first second otherwise.
	points map[string]map[int64]statistic
}

// metricKey is a metric's identity as one string: the order of its
// dimensions does not count.
func metricKey(namespace, name string, dims []dimension) string {
	sorted := slices.SortedFunc(slices.Values(dims), func(a, b dimension) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	b.WriteString(namespace + "\x00" + name)
	for _, d := range sorted {
		b.WriteString("\x00" + d.Name + "\x00" + d.Value)
	}
	return b.String()
}

// Limits of PutMetricData, from the CloudWatch API reference.
const (
	maxMetricData       = 1000
	maxDistinctValues   = 150
	maxMetricDimensions = 30
	maxMetricNameLength = 255
	maxDimensionValue   = 1024
	// highResolutionKept is how long CloudWatch keeps data points of less
	// than a minute; older ones are kept as one-minute points.
	highResolutionKept = 3 * time.Hour
	// The window of time stamps PutMetricData takes.
	maxMetricAge    = 14 * 24 * time.Hour
	maxMetricFuture = 2 * time.Hour
)

// maxMetricValue bounds a value: CloudWatch refuses magnitudes beyond 2^360.
var maxMetricValue = math.Pow(2, 360)

// standardUnits are the units CloudWatch knows.
var standardUnits = []string{
	"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes",
	"Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count",
	"Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second",
	"Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second",
	"Count/Second", "None",
}

// datum is one validated entry of PutMetricData's MetricData.
type datum struct {
	name string
	dims []dimension
	unit string
	at   int64 // the second its storage interval starts
	data statistic
}

func (s *Simulator) putMetricData(in *cborInput) (cbor.Map, *apiError) {
	namespace, hasNamespace := in.str(in.m, "Namespace")
	entries := in.structures(in.m, "MetricData")
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case !hasNamespace || namespace == "":
		return nil, errCWMissingParameter("Namespace")
	case len(namespace) > maxMetricNameLength || strings.HasPrefix(namespace, "AWS/") || strings.TrimSpace(namespace) == "":
		return nil, errCWInvalidParameterValue("The value %s for parameter Namespace is invalid.", truncate(namespace, 300))
	case len(entries) == 0:
		return nil, errCWMissingParameter("MetricData")
	case len(entries) > maxMetricData:
		return nil, errCWInvalidParameterValue("The collection MetricData must not have a size greater than %d.", maxMetricData)
	}
	// Every entry is checked before any is stored: a request refused
	// changes nothing.
	now := s.clock.Now()
	data := make([]datum, 0, len(entries))
	for i, e := range entries {
		d, err := in.datum(e, i+1, now)
		if err != nil {
			return nil, err
		}
		data = append(data, d)
	}
	for _, d := range data {
		s.recordDatum(namespace, d)
	}
	return cbor.Map{}, nil
}

// datum reads and checks the nth MetricDatum (counted from 1, as AWS's
// messages count): the metric it is of, when, and its data.
func (in *cborInput) datum(e cbor.Map, n int, now time.Time) (datum, *apiError) {
	field := func(name string) string { return "MetricData.member." + strconv.Itoa(n) + "." + name }
	var d datum
	var hasName bool
	d.name, hasName = in.str(e, "MetricName")
	d.unit, _ = in.str(e, "Unit")
	at, hasAt := in.timestamp(e, "Timestamp")
	resolution, hasResolution := in.integer(e, "StorageResolution")
	dims, err := in.dimensions(e, "Dimensions", field("Dimensions"))
	if err != nil {
		return d, err
	}
	if in.err != nil {
		return d, in.err
	}
	d.dims = dims
	switch {
	case !hasName || d.name == "":
		return d, errCWMissingParameter(field("MetricName"))
	case len(d.name) > maxMetricNameLength:
		return d, errCWInvalidParameterValue("The value %s for parameter %s is invalid.", truncate(d.name, 300), field("MetricName"))
	case d.unit != "" && !slices.Contains(standardUnits, d.unit):
		return d, errCWInvalidParameterValue("The value %s for parameter %s is invalid.", truncate(d.unit, 60), field("Unit"))
	case hasResolution && resolution != 1 && resolution != 60:
		return d, errCWInvalidParameterValue("The value %d for parameter %s is invalid.", resolution, field("StorageResolution"))
	}
	if d.unit == "" {
		d.unit = "None"
	}
	if !hasAt {
		at = now
	}
	if at.Before(now.Add(-maxMetricAge)) || at.After(now.Add(maxMetricFuture)) {
		return d, errCWInvalidParameterValue("The parameter %s must be less than two weeks in the past and no more than two hours in the future.", field("Timestamp"))
	}
	// Standard-resolution data is stored by the minute.
	d.at = at.Unix()
	if !hasResolution || resolution == 60 {
		d.at -= mod(d.at, 60)
	}
	d.data, err = in.datumData(e, field)
	return d, err
}

// datumData reads and checks a datum's data: a Value, or Values with their
// Counts, or a StatisticValues set (which AWS also takes beside Values), as
// one statistic.
func (in *cborInput) datumData(e cbor.Map, field func(string) string) (statistic, *apiError) {
	var data statistic
	value, hasValue := in.float(e, "Value")
	values := in.floats(e, "Values")
	counts := in.floats(e, "Counts")
	set, hasSet := in.structure(e, "StatisticValues")
	if in.err != nil {
		return data, in.err
	}
	switch {
	case hasValue && len(values) > 0:
		return data, errCWInvalidParameterCombination("The parameters %s and %s are mutually exclusive and you have specified both.", field("Value"), field("Values"))
	case hasValue && hasSet:
		return data, errCWInvalidParameterCombination("The parameters %s and %s are mutually exclusive and you have specified both.", field("Value"), field("StatisticValues"))
	case len(values) > maxDistinctValues:
		return data, errCWInvalidParameterValue("The collection %s must not have a size greater than %d.", field("Values"), maxDistinctValues)
	case len(counts) > 0 && len(counts) != len(values):
		return data, errCWInvalidParameterValue("The parameters %s and %s must be of the same size.", field("Values"), field("Counts"))
	case hasValue && math.Abs(value) > maxMetricValue:
		return data, errCWInvalidParameterValue("The value %s for parameter %s is invalid.", formatFloat(value), field("Value"))
	}
	if hasValue {
		data.add(value)
	}
	for i, v := range values {
		c := 1.0
		if len(counts) > 0 {
			c = counts[i]
		}
		if math.Abs(v) > maxMetricValue || c < 0 {
			return data, errCWInvalidParameterValue("The value %s for parameter %s is invalid.", formatFloat(v), field("Values"))
		}
		if c > 0 {
			data.merge(statistic{sum: v * c, min: v, max: v, count: c})
		}
	}
	if hasSet {
		st, err := in.statisticSet(set, field("StatisticValues"))
		if err != nil {
			return data, err
		}
		data.merge(st)
	}
	return data, nil
}

// statisticSet reads StatisticValues: all four members, SampleCount
// positive and Minimum no more than Maximum.
func (in *cborInput) statisticSet(m cbor.Map, field string) (statistic, *apiError) {
	var st statistic
	var ok [4]bool
	st.count, ok[0] = in.float(m, "SampleCount")
	st.sum, ok[1] = in.float(m, "Sum")
	st.min, ok[2] = in.float(m, "Minimum")
	st.max, ok[3] = in.float(m, "Maximum")
	if in.err != nil {
		return st, in.err
	}
	for i, name := range []string{"SampleCount", "Sum", "Minimum", "Maximum"} {
		if !ok[i] {
			return st, errCWMissingParameter(field + "." + name)
		}
	}
	if st.count <= 0 || st.min > st.max {
		return st, errCWInvalidParameterValue("The parameter %s is invalid: SampleCount must be positive and Minimum no more than Maximum.", field)
	}
	return st, nil
}

// dimensions reads a list of dimensions, checked as CloudWatch checks them,
// in the order given.
func (in *cborInput) dimensions(m cbor.Map, key, field string) ([]dimension, *apiError) {
	var dims []dimension
	for i, d := range in.structures(m, key) {
		name, _ := in.str(d, "Name")
		value, _ := in.str(d, "Value")
		member := field + ".member." + strconv.Itoa(i+1)
		switch {
		case in.err != nil:
			return nil, in.err
		case name == "" || len(name) > maxMetricNameLength || strings.HasPrefix(name, ":"):
			return nil, errCWInvalidParameterValue("The value %s for parameter %s.Name is invalid.", truncate(name, 300), member)
		case value == "" || len(value) > maxDimensionValue:
			return nil, errCWInvalidParameterValue("The value %s for parameter %s.Value is invalid.", truncate(value, 300), member)
		}
		dims = append(dims, dimension{Name: name, Value: value})
	}
	if len(dims) > maxMetricDimensions {
		return nil, errCWInvalidParameterValue("The collection %s must not have a size greater than %d.", field, maxMetricDimensions)
	}
	seen := make(map[string]bool, len(dims))
	for _, d := range dims {
		if seen[d.Name] {
			return nil, errCWInvalidParameterValue("No metric may have two dimensions named %s.", truncate(d.Name, 300))
		}
		seen[d.Name] = true
	}
	return dims, in.err
}

// recordDatum adds a checked datum to its metric, creating the metric.
func (s *Simulator) recordDatum(namespace string, d datum) {
	key := metricKey(namespace, d.name, d.dims)
	m := s.customMetrics[key]
	if m == nil {
		m = &customMetric{namespace: namespace, name: d.name, dims: d.dims, points: map[string]map[int64]statistic{}}
		s.customMetrics[key] = m
	}
	if d.data.count == 0 {
		// A datum without a value names the metric and records nothing.
		return
	}
	byTime := m.points[d.unit]
	if byTime == nil {
		byTime = map[int64]statistic{}
		m.points[d.unit] = byTime
	}
	st := byTime[d.at]
	st.merge(d.data)
	byTime[d.at] = st
}

// ageCustomMetrics keeps custom metrics as CloudWatch keeps them: points of
// less than a minute become one-minute points after three hours, and points
// older than MetricHistory go. It runs once a minute.
func (s *Simulator) ageCustomMetrics(now time.Time) {
	oldest := now.Add(-MetricHistory).Unix()
	rollUp := now.Add(-highResolutionKept).Unix()
	for _, m := range s.customMetrics {
		for _, byTime := range m.points {
			for at, st := range byTime {
				switch {
				case at < oldest:
					delete(byTime, at)
				case at < rollUp && mod(at, 60) != 0:
					delete(byTime, at)
					minute := byTime[at-mod(at, 60)]
					minute.merge(st)
					byTime[at-mod(at, 60)] = minute
				}
			}
		}
	}
}

// customPoints feeds the points of q's custom metric that fall in the
// series' range to it, in time order: those of q's unit, or of every unit
// when q names none.
func (s *Simulator) customPoints(q metricQuery, sr *series) {
	m := s.customMetrics[metricKey(q.namespace, q.metric, q.dims)]
	if m == nil {
		return
	}
	var ats []int64
	merged := map[int64]statistic{}
	for unit, byTime := range m.points {
		if q.unit != "" && unit != q.unit {
			continue
		}
		for at, st := range byTime {
			if !sr.covers(at) {
				continue
			}
			prev, seen := merged[at]
			if !seen {
				ats = append(ats, at)
			}
			prev.merge(st)
			merged[at] = prev
		}
	}
	slices.Sort(ats)
	for _, at := range ats {
		sr.add(at, merged[at])
	}
}

// customUnits returns the units q's custom metric has data in, sorted, or
// q's unit alone when it names one.
func (s *Simulator) customUnits(q metricQuery) []string {
	if q.unit != "" {
		return []string{q.unit}
	}
	m := s.customMetrics[metricKey(q.namespace, q.metric, q.dims)]
	if m == nil {
		return nil
	}
	units := make([]string, 0, len(m.points))
	for unit := range m.points {
		units = append(units, unit)
	}
	slices.Sort(units)
	return units
}

// mod is a modulo that is never negative, for times before the epoch.
func mod(a, b int64) int64 {
	return (a%b + b) % b
}
