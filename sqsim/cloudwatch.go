package sqsim

import (
	"cmp"
	"encoding/base64"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"
)

// cloudWatchPathPrefix starts the path of every RPC v2 CBOR request the
// CloudWatch client sends: /service/<service shape name>/operation/<op>.
const cloudWatchPathPrefix = "/service/GraniteServiceVersion20100801/operation/"

// cwOperation runs one CloudWatch operation on a decoded input, with s.mu
// held.
type cwOperation func(s *Simulator, in *cborInput) (cbor.Map, *apiError)

var cloudWatchOperations = map[string]cwOperation{
	"GetMetricData":           (*Simulator).getMetricData,
	"ListMetrics":             (*Simulator).listMetrics,
	"PutMetricAlarm":          (*Simulator).putMetricAlarm,
	"DescribeAlarms":          (*Simulator).describeAlarms,
	"DescribeAlarmsForMetric": (*Simulator).describeAlarmsForMetric,
	"DeleteAlarms":            (*Simulator).deleteAlarms,
	"SetAlarmState":           (*Simulator).setAlarmState,
	// GetMetricStatistics is the older way to read the same points.
	"GetMetricStatistics": (*Simulator).getMetricStatistics,
	"PutMetricData":       (*Simulator).putMetricData,
}

// serveCloudWatch answers an RPC v2 CBOR request, the protocol of
// aws-sdk-go-v2's service/cloudwatch.
func (s *Simulator) serveCloudWatch(w http.ResponseWriter, r *http.Request, rc *request) {
	op, ok := strings.CutPrefix(r.URL.Path, cloudWatchPathPrefix)
	defer s.recoverPanic(w, op, writeCBORError)
	if !ok || r.Method != http.MethodPost {
		writeCBORError(w, errInvalidAction(r.Method+" "+r.URL.Path))
		return
	}
	if _, known := cloudWatchOperations[op]; !known {
		writeCBORError(w, errInvalidAction(op))
		return
	}
	if !hasMediaType(r, "application/cbor") {
		writeCBORError(w, errUnsupportedMediaType(r.Header.Get("Content-Type")))
		return
	}
	body, err := readBody(w, r)
	if err != nil {
		writeCBORError(w, err)
		return
	}
	in, err := newCBORInput(body)
	if err != nil {
		writeCBORError(w, err)
		return
	}
	out, err := s.runCloudWatch(rc, "cbor", op, in)
	if err != nil {
		writeCBORError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.WriteHeader(http.StatusOK)
	w.Write(cbor.Encode(out))
}

// runCloudWatch runs a known operation on its decoded input, whatever the
// protocol: faults first, then the handler under the lock after the
// time-driven work.
func (s *Simulator) runCloudWatch(rc *request, protocol, op string, in *cborInput) (cbor.Map, *apiError) {
	if err := s.serveFaults(rc.ctx, op, errCWThrottling, errCWInternal); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.tick()
	out, err := cloudWatchOperations[op](s, in)
	s.mu.Unlock()
	s.log.Debug("sqsim: request", "service", "cloudwatch", "protocol", protocol, "operation", op, "error", errorCode(err))
	return out, err
}

func writeCBORError(w http.ResponseWriter, e *apiError) {
	// A CBOR text string is UTF-8: a message quoting the caller's bytes (an operation
	// named %FF in the path) would otherwise be an answer no client can decode.
	message := cbor.String(strings.ToValidUTF8(e.message, "\uFFFD"))
	body := cbor.Encode(cbor.Map{
		"__type":  cbor.String("com.amazonaws.cloudwatch#" + e.shape),
		"message": message,
		// Some CloudWatch error shapes spell their member Message.
		"Message": message,
	})
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("X-Amzn-Query-Error", e.queryErrorHeader())
	w.WriteHeader(e.status)
	w.Write(body)
}

// Limits of GetMetricData, from the CloudWatch API reference.
const (
	maxMetricDataQueries = 500
	maxDatapoints        = 100800
)

var metricQueryIDPattern = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]{0,254}$`)

// metricQuery is one validated MetricDataQuery.
type metricQuery struct {
	id, label  string
	returnData bool
	namespace  string
	metric     string
	dims       []dimension
	unit       string // empty: any
	period     int64  // seconds: 1, 5, 10, 20, 30 or a multiple of 60
	stat       string
}

// queueName returns the queue an AWS/SQS query names: its one dimension,
// QueueName.
func (q *metricQuery) queueName() string {
	if len(q.dims) == 1 && q.dims[0].Name == "QueueName" {
		return q.dims[0].Value
	}
	return ""
}

// validPeriod reports whether CloudWatch takes a period of p seconds: 1, 5,
// 10, 20 or 30 for high-resolution data, or a multiple of 60.
func validPeriod(p int64) bool {
	switch p {
	case 1, 5, 10, 20, 30:
		return true
	}
	return p > 0 && p%60 == 0
}

var statistics = []string{"Sum", "Average", "Minimum", "Maximum", "SampleCount"}

func (s *Simulator) getMetricData(in *cborInput) (cbor.Map, *apiError) {
	queries := in.structures(in.m, "MetricDataQueries")
	start, hasStart := in.timestamp(in.m, "StartTime")
	end, hasEnd := in.timestamp(in.m, "EndTime")
	scanBy, _ := in.str(in.m, "ScanBy")
	maxPoints, hasMax := in.integer(in.m, "MaxDatapoints")
	token, _ := in.str(in.m, "NextToken")
	parsed := make([]metricQuery, 0, len(queries))
	for _, q := range queries {
		mq, err := in.metricQuery(q)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, mq)
	}
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case len(queries) == 0:
		return nil, errCWMissingParameter("MetricDataQueries")
	case len(queries) > maxMetricDataQueries:
		return nil, errCWInvalidParameterValue("The collection MetricDataQueries must not have a size greater than %d.", maxMetricDataQueries)
	case !hasStart:
		return nil, errCWMissingParameter("StartTime")
	case !hasEnd:
		return nil, errCWMissingParameter("EndTime")
	case !start.Before(end):
		return nil, errCWInvalidParameterValue("The parameter StartTime must be less than the parameter EndTime.")
	case scanBy != "" && scanBy != "TimestampDescending" && scanBy != "TimestampAscending":
		return nil, errCWInvalidParameterValue("The parameter ScanBy must be TimestampDescending or TimestampAscending.")
	case hasMax && (maxPoints < 1 || maxPoints > maxDatapoints):
		return nil, errCWInvalidParameterValue("The parameter MaxDatapoints must be between 1 and %d.", maxDatapoints)
	}
	if !hasMax {
		maxPoints = maxDatapoints
	}
	seen := make(map[string]bool)
	for _, q := range parsed {
		if err := q.validate(); err != nil {
			return nil, err
		}
		if seen[q.id] {
			return nil, errCWInvalidParameterValue("The value %s for field Id is not unique.", truncate(q.id, 100))
		}
		seen[q.id] = true
	}
	skip := int64(0)
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		n, perr := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || perr != nil || n < 0 {
			return nil, errCWInvalidNextToken()
		}
		skip = n
	}
	s.stats.recordMetricQueries(len(queries))

	// Points are handed out in query order, each query's in scan order;
	// a page holds MaxDatapoints of them, and the token is how many
	// earlier pages handed out.
	results := cbor.List{}
	offset, budget := int64(0), maxPoints
	truncated := false
	for _, q := range parsed {
		if !q.returnData {
			continue
		}
		times, values := s.metricSeries(q, start, end, scanBy != "TimestampAscending")
		n := int64(len(times))
		from := min(max(skip-offset, 0), n)
		to := min(from+budget, n)
		offset += n
		budget -= to - from
		status := "Complete"
		if to < n {
			status, truncated = "PartialData", true
		}
		ts, vs := cbor.List{}, cbor.List{}
		for i := from; i < to; i++ {
			ts = append(ts, cborTime(times[i]))
			vs = append(vs, cbor.Float64(values[i]))
		}
		results = append(results, cbor.Map{
			"Id":         cbor.String(q.id),
			"Label":      cbor.String(q.label),
			"Timestamps": ts,
			"Values":     vs,
			"StatusCode": cbor.String(status),
		})
	}
	out := cbor.Map{"MetricDataResults": results, "Messages": cbor.List{}}
	if truncated {
		out["NextToken"] = cbor.String(base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(skip+maxPoints, 10))))
	}
	return out, nil
}

// metricQuery reads a MetricDataQuery; validate checks it.
func (in *cborInput) metricQuery(m cbor.Map) (metricQuery, *apiError) {
	q := metricQuery{returnData: true}
	q.id, _ = in.str(m, "Id")
	q.label, _ = in.str(m, "Label")
	if rd, ok := in.boolean(m, "ReturnData"); ok {
		q.returnData = rd
	}
	if _, ok := in.str(m, "Expression"); ok {
		q.stat = "expression"
		return q, in.err
	}
	ms, ok := in.structure(m, "MetricStat")
	if !ok {
		return q, in.err
	}
	q.period, _ = in.integer(ms, "Period")
	q.stat, _ = in.str(ms, "Stat")
	q.unit, _ = in.str(ms, "Unit")
	metric, _ := in.structure(ms, "Metric")
	q.namespace, _ = in.str(metric, "Namespace")
	q.metric, _ = in.str(metric, "MetricName")
	dims, err := in.dimensions(metric, "Dimensions", "MetricStat.Metric.Dimensions")
	if err != nil {
		return q, err
	}
	q.dims = dims
	if q.label == "" {
		q.label = q.metric
	}
	return q, in.err
}

func (q *metricQuery) validate() *apiError {
	switch {
	case !metricQueryIDPattern.MatchString(q.id):
		return errCWInvalidParameterValue("The value %s for field Id must start with a lowercase letter and contain only letters, numbers and underscores.", truncate(q.id, 100))
	case q.stat == "expression":
		return errCWInvalidParameterValue("Metric math expressions are not supported by this simulator (query %s).", q.id)
	case q.metric == "" || q.namespace == "":
		return errCWInvalidParameterCombination("Query %s must have either an Expression or a MetricStat with a Metric (Namespace and MetricName).", q.id)
	case !validPeriod(q.period):
		return errCWInvalidParameterValue("The parameter MetricDataQueries.member.Period of query %s must be 1, 5, 10, 20, 30 or a multiple of 60.", q.id)
	case !slices.Contains(statistics, q.stat):
		return errCWInvalidParameterValue("The statistic %s of query %s is not supported: use Sum, Average, Minimum, Maximum or SampleCount.", truncate(q.stat, 50), q.id)
	case q.unit != "" && !slices.Contains(standardUnits, q.unit):
		return errCWInvalidParameterValue("The unit %s of query %s is not one of CloudWatch's units.", truncate(q.unit, 60), q.id)
	}
	return nil
}

// metricSeries aggregates the query's metric into periods from start to
// end, in time order or, when descending, newest first. Periods start at
// start rounded down to a whole minute, as CloudWatch rounds recent data, or
// for a period of less than a minute to a multiple of the period. Periods
// without data have no point.
func (s *Simulator) metricSeries(q metricQuery, start, end time.Time, descending bool) ([]time.Time, []float64) {
	sr := newSeries(q, start, end)
	if q.namespace == "AWS/SQS" {
		s.sqsPoints(q, sr)
	} else {
		s.customPoints(q, sr)
	}
	sr.flush()
	if descending {
		slices.Reverse(sr.times)
		slices.Reverse(sr.values)
	}
	return sr.times, sr.values
}

// sqsPoints feeds the minutes of the queue's AWS/SQS metric that fall in
// the series' range to it, in time order. A queue's metrics are one-minute
// data: whatever the period, each minute's point lands in the period
// holding the minute's start.
func (s *Simulator) sqsPoints(q metricQuery, sr *series) {
	queue := s.queues[q.queueName()]
	if queue == nil || (q.unit != "" && q.unit != sqsMetrics[q.metric]) {
		return
	}
	if _, ok := sqsMetrics[q.metric]; !ok || (fifoOnlyMetrics[q.metric] && !queue.attrs.fifo) {
		return
	}
	// Only the minutes the queue keeps can hold data: a range of years
	// costs no more than its last 15 days.
	first := max(ceilDiv(sr.origin, 60), queue.metrics.first)
	last := min(ceilDiv(sr.end, 60)-1, queue.metrics.first+int64(len(queue.metrics.minutes))-1)
	for m := first; m <= last; m++ {
		if ms, ok := queue.metrics.lookup(m); ok {
			if v, ok := ms.value(q.metric); ok {
				sr.add(m*60, v)
			}
		}
	}
}

// series gathers data points, fed in time order, into periods, and the
// periods' values of one statistic.
type series struct {
	origin, end, period int64 // seconds: the first period's start, the range's end
	stat                string
	times               []time.Time
	values              []float64
	open                int64     // the period being gathered, counted from origin
	agg                 statistic // its data so far
}

func newSeries(q metricQuery, start, end time.Time) *series {
	origin := start.Unix() - mod(start.Unix(), 60)
	if q.period < 60 {
		origin = start.Unix() - mod(start.Unix(), q.period)
	}
	sr := &series{origin: origin, end: end.Unix(), period: q.period, stat: q.stat}
	if end.Nanosecond() > 0 {
		sr.end++
	}
	return sr
}

// covers reports whether a point at the second at is in the series' range.
func (sr *series) covers(at int64) bool {
	return at >= sr.origin && at < sr.end
}

// add gathers a point at the second at, which must be covered and no earlier
// than the points before it.
func (sr *series) add(at int64, st statistic) {
	if p := (at - sr.origin) / sr.period; p != sr.open {
		sr.flush()
		sr.open = p
	}
	sr.agg.merge(st)
}

// flush ends the open period, with a point if it gathered data.
func (sr *series) flush() {
	if sr.agg.count == 0 {
		return
	}
	sr.times = append(sr.times, time.Unix(sr.origin+sr.open*sr.period, 0).UTC())
	sr.values = append(sr.values, sr.agg.statistic(sr.stat))
	sr.agg = statistic{}
}

// ceilDiv is a/b rounded up, for b > 0.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}

func (st statistic) statistic(name string) float64 {
	switch name {
	case "Sum":
		return st.sum
	case "Average":
		return st.sum / st.count
	case "Minimum":
		return st.min
	case "Maximum":
		return st.max
	default:
		return st.count
	}
}

// maxStatisticsDatapoints is how many data points one GetMetricStatistics
// may ask for.
const maxStatisticsDatapoints = 1440

// getMetricStatistics answers GetMetricStatistics from the same data as
// GetMetricData: one datapoint per period with data and per unit, carrying
// each statistic asked for.
func (s *Simulator) getMetricStatistics(in *cborInput) (cbor.Map, *apiError) {
	q := metricQuery{id: "m", returnData: true}
	q.namespace, _ = in.str(in.m, "Namespace")
	q.metric, _ = in.str(in.m, "MetricName")
	q.unit, _ = in.str(in.m, "Unit")
	dims, err := in.dimensions(in.m, "Dimensions", "Dimensions")
	if err != nil {
		return nil, err
	}
	q.dims = dims
	start, hasStart := in.timestamp(in.m, "StartTime")
	end, hasEnd := in.timestamp(in.m, "EndTime")
	q.period, _ = in.integer(in.m, "Period")
	stats := in.strings(in.m, "Statistics")
	extended := in.strings(in.m, "ExtendedStatistics")
	if in.err != nil {
		return nil, in.err
	}
	switch {
	case q.namespace == "":
		return nil, errCWMissingParameter("Namespace")
	case q.metric == "":
		return nil, errCWMissingParameter("MetricName")
	case !hasStart:
		return nil, errCWMissingParameter("StartTime")
	case !hasEnd:
		return nil, errCWMissingParameter("EndTime")
	case !start.Before(end):
		return nil, errCWInvalidParameterValue("The parameter StartTime must be less than the parameter EndTime.")
	case !validPeriod(q.period):
		return nil, errCWInvalidParameterValue("The parameter Period must be 1, 5, 10, 20, 30 or a multiple of 60.")
	case len(stats) == 0 && len(extended) == 0:
		return nil, errCWMissingParameter("Statistics")
	case len(extended) > 0:
		return nil, errCWInvalidParameterValue("Extended statistics are not supported by this simulator.")
	case q.unit != "" && !slices.Contains(standardUnits, q.unit):
		return nil, errCWInvalidParameterValue("The value %s for parameter Unit is invalid.", truncate(q.unit, 60))
	}
	if n := ceilDiv(end.Unix()-start.Unix(), q.period); n > maxStatisticsDatapoints {
		return nil, errCWInvalidParameterCombination("You have requested up to %d datapoints, which exceeds the limit of %d. You may reduce the datapoints requested by increasing Period, or decreasing the time range.", n, maxStatisticsDatapoints)
	}
	for _, st := range stats {
		if !slices.Contains(statistics, st) {
			return nil, errCWInvalidParameterValue("The parameter Statistics.member.1 must be a value in the set [ Average, Sum, SampleCount, Maximum, Minimum ].")
		}
	}
	units := []string{sqsMetrics[q.metric]}
	if q.namespace != "AWS/SQS" {
		units = s.customUnits(q)
	}
	type pointKey struct {
		at   int64
		unit string
	}
	byKey := map[pointKey]cbor.Map{}
	var keys []pointKey
	for _, unit := range units {
		q.unit = unit
		for _, st := range stats {
			q.stat = st
			times, values := s.metricSeries(q, start, end, false)
			for i, t := range times {
				k := pointKey{t.Unix(), unit}
				p := byKey[k]
				if p == nil {
					p = cbor.Map{"Timestamp": cborTime(t), "Unit": cbor.String(unit)}
					byKey[k] = p
					keys = append(keys, k)
				}
				p[st] = cbor.Float64(values[i])
			}
		}
	}
	slices.SortFunc(keys, func(a, b pointKey) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return strings.Compare(a.unit, b.unit)
	})
	points := cbor.List{}
	for _, k := range keys {
		points = append(points, byKey[k])
	}
	return cbor.Map{"Label": cbor.String(q.metric), "Datapoints": points}, nil
}

// listedMetric is one metric ListMetrics may list.
type listedMetric struct {
	namespace, name string
	dims            []dimension
}

// sortKey orders the listed metrics and is their page token.
func (m listedMetric) sortKey() string { return metricKey(m.namespace, m.name, m.dims) }

// listMetrics lists the AWS/SQS metrics of the existing queues and the
// custom metrics published, filtered by namespace, metric name and
// dimensions (each filter a dimension name the metric must have, with its
// value if the filter gives one).
func (s *Simulator) listMetrics(in *cborInput) (cbor.Map, *apiError) {
	namespace, _ := in.str(in.m, "Namespace")
	metricName, _ := in.str(in.m, "MetricName")
	token, _ := in.str(in.m, "NextToken")
	filters := map[string]*string{}
	for _, d := range in.structures(in.m, "Dimensions") {
		name, _ := in.str(d, "Name")
		if value, ok := in.str(d, "Value"); ok {
			filters[name] = &value
		} else {
			filters[name] = nil
		}
	}
	if in.err != nil {
		return nil, in.err
	}
	matches := func(m listedMetric) bool {
		if (namespace != "" && m.namespace != namespace) || (metricName != "" && m.name != metricName) {
			return false
		}
		for name, value := range filters {
			i := slices.IndexFunc(m.dims, func(d dimension) bool { return d.Name == name })
			if i < 0 || (value != nil && m.dims[i].Value != *value) {
				return false
			}
		}
		return true
	}
	var found []listedMetric
	for name, q := range s.queues {
		for metric := range sqsMetrics {
			m := listedMetric{"AWS/SQS", metric, []dimension{{"QueueName", name}}}
			if (!fifoOnlyMetrics[metric] || q.attrs.fifo) && matches(m) {
				found = append(found, m)
			}
		}
	}
	for _, c := range s.customMetrics {
		if m := (listedMetric{c.namespace, c.name, c.dims}); matches(m) {
			found = append(found, m)
		}
	}
	slices.SortFunc(found, func(a, b listedMetric) int { return strings.Compare(a.sortKey(), b.sortKey()) })
	if token != "" {
		after, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, errCWInvalidNextToken()
		}
		i, _ := slices.BinarySearchFunc(found, string(after), func(m listedMetric, key string) int { return strings.Compare(m.sortKey(), key) })
		if i < len(found) && found[i].sortKey() == string(after) {
			i++
		}
		found = found[i:]
	}
	const pageSize = 500
	out := cbor.Map{}
	if len(found) > pageSize {
		found = found[:pageSize]
		out["NextToken"] = cbor.String(base64.RawURLEncoding.EncodeToString([]byte(found[pageSize-1].sortKey())))
	}
	metrics := cbor.List{}
	for _, m := range found {
		metrics = append(metrics, cbor.Map{
			"Namespace":  cbor.String(m.namespace),
			"MetricName": cbor.String(m.name),
			"Dimensions": cborDimensions(m.dims),
		})
	}
	out["Metrics"] = metrics
	return out, nil
}

// cborDimensions is a list of dimensions as the outputs write it.
func cborDimensions(dims []dimension) cbor.List {
	l := cbor.List{}
	for _, d := range dims {
		l = append(l, cbor.Map{"Name": cbor.String(d.Name), "Value": cbor.String(d.Value)})
	}
	return l
}
