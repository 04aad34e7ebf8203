package sqsim

import (
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
	"GetMetricData":  (*Simulator).getMetricData,
	"ListMetrics":    (*Simulator).listMetrics,
	"PutMetricAlarm": (*Simulator).putMetricAlarm,
	"DescribeAlarms": (*Simulator).describeAlarms,
	"DeleteAlarms":   (*Simulator).deleteAlarms,
	"SetAlarmState":  (*Simulator).setAlarmState,
	// GetMetricStatistics is the older way to read the same points.
	"GetMetricStatistics": (*Simulator).getMetricStatistics,
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
	body := cbor.Encode(cbor.Map{
		"__type":  cbor.String("com.amazonaws.cloudwatch#" + e.shape),
		"message": cbor.String(e.message),
		// Some CloudWatch error shapes spell their member Message.
		"Message": cbor.String(e.message),
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
	queueName  string // empty when the dimensions do not name one queue
	period     int64  // seconds, a multiple of 60
	stat       string
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
		parsed = append(parsed, in.metricQuery(q))
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
func (in *cborInput) metricQuery(m cbor.Map) metricQuery {
	q := metricQuery{returnData: true}
	q.id, _ = in.str(m, "Id")
	q.label, _ = in.str(m, "Label")
	if rd, ok := in.boolean(m, "ReturnData"); ok {
		q.returnData = rd
	}
	if _, ok := in.str(m, "Expression"); ok {
		q.stat = "expression"
		return q
	}
	ms, ok := in.structure(m, "MetricStat")
	if !ok {
		return q
	}
	q.period, _ = in.integer(ms, "Period")
	q.stat, _ = in.str(ms, "Stat")
	metric, _ := in.structure(ms, "Metric")
	q.namespace, _ = in.str(metric, "Namespace")
	q.metric, _ = in.str(metric, "MetricName")
	dims := in.structures(metric, "Dimensions")
	if len(dims) == 1 {
		if name, _ := in.str(dims[0], "Name"); name == "QueueName" {
			q.queueName, _ = in.str(dims[0], "Value")
		}
	}
	if q.label == "" {
		q.label = q.metric
	}
	return q
}

func (q *metricQuery) validate() *apiError {
	switch {
	case !metricQueryIDPattern.MatchString(q.id):
		return errCWInvalidParameterValue("The value %s for field Id must start with a lowercase letter and contain only letters, numbers and underscores.", truncate(q.id, 100))
	case q.stat == "expression":
		return errCWInvalidParameterValue("Metric math expressions are not supported by this simulator (query %s).", q.id)
	case q.metric == "" || q.namespace == "":
		return errCWInvalidParameterCombination("Query %s must have either an Expression or a MetricStat with a Metric (Namespace and MetricName).", q.id)
	case q.period <= 0 || q.period%60 != 0:
		return errCWInvalidParameterValue("The parameter MetricDataQueries.member.Period of query %s must be a multiple of 60.", q.id)
	case !slices.Contains(statistics, q.stat):
		return errCWInvalidParameterValue("The statistic %s of query %s is not supported: use Sum, Average, Minimum, Maximum or SampleCount.", truncate(q.stat, 50), q.id)
	}
	return nil
}

// metricSeries aggregates the query's metric into periods from start
// (rounded down to a whole minute, as CloudWatch rounds recent data) to
// end. Periods without data have no point.
func (s *Simulator) metricSeries(q metricQuery, start, end time.Time, descending bool) ([]time.Time, []float64) {
	queue := s.queues[q.queueName]
	if q.namespace != "AWS/SQS" || queue == nil {
		return nil, nil
	}
	if _, ok := sqsMetrics[q.metric]; !ok || (fifoOnlyMetrics[q.metric] && !queue.attrs.fifo) {
		return nil, nil
	}
	var times []time.Time
	var values []float64
	first, last := minuteOf(start), minuteOf(end.Add(-time.Nanosecond))
	step := q.period / 60
	// Only the minutes the queue keeps can hold data: a range of years
	// costs no more than its last 15 days.
	kept, keptLast := queue.metrics.first, queue.metrics.first+int64(len(queue.metrics.minutes))-1
	if first < kept {
		first += (kept - first) / step * step
	}
	last = min(last, keptLast)
	for bucket := first; bucket <= last; bucket += step {
		var agg statistic
		for m := bucket; m < bucket+step && m <= last; m++ {
			if ms, ok := queue.metrics.lookup(m); ok {
				if v, ok := ms.value(q.metric); ok {
					agg.merge(v)
				}
			}
		}
		if agg.count == 0 {
			continue
		}
		times = append(times, time.Unix(bucket*60, 0).UTC())
		values = append(values, agg.statistic(q.stat))
	}
	if descending {
		slices.Reverse(times)
		slices.Reverse(values)
	}
	return times, values
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

// getMetricStatistics answers GetMetricStatistics from the same
// per-minute data as GetMetricData: one datapoint per period with data,
// carrying each statistic asked for.
func (s *Simulator) getMetricStatistics(in *cborInput) (cbor.Map, *apiError) {
	q := metricQuery{id: "m", returnData: true}
	q.namespace, _ = in.str(in.m, "Namespace")
	q.metric, _ = in.str(in.m, "MetricName")
	dims := in.structures(in.m, "Dimensions")
	if len(dims) == 1 {
		if name, _ := in.str(dims[0], "Name"); name == "QueueName" {
			q.queueName, _ = in.str(dims[0], "Value")
		}
	}
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
	case q.period <= 0 || q.period%60 != 0:
		return nil, errCWInvalidParameterValue("The parameter Period must be a multiple of 60.")
	case len(stats) == 0 && len(extended) == 0:
		return nil, errCWMissingParameter("Statistics")
	case len(extended) > 0:
		return nil, errCWInvalidParameterValue("Extended statistics are not supported by this simulator.")
	}
	for _, st := range stats {
		if !slices.Contains(statistics, st) {
			return nil, errCWInvalidParameterValue("The parameter Statistics.member.1 must be a value in the set [ Average, Sum, SampleCount, Maximum, Minimum ].")
		}
	}
	byTime := map[int64]cbor.Map{}
	var order []int64
	for _, st := range stats {
		q.stat = st
		times, values := s.metricSeries(q, start, end, false)
		for i, t := range times {
			p := byTime[t.Unix()]
			if p == nil {
				p = cbor.Map{"Timestamp": cborTime(t), "Unit": cbor.String(sqsMetrics[q.metric])}
				byTime[t.Unix()] = p
				order = append(order, t.Unix())
			}
			p[st] = cbor.Float64(values[i])
		}
	}
	slices.Sort(order)
	points := cbor.List{}
	for _, t := range order {
		points = append(points, byTime[t])
	}
	return cbor.Map{"Label": cbor.String(q.metric), "Datapoints": points}, nil
}

// listMetrics lists the AWS/SQS metrics of the existing queues.
func (s *Simulator) listMetrics(in *cborInput) (cbor.Map, *apiError) {
	namespace, _ := in.str(in.m, "Namespace")
	metricName, _ := in.str(in.m, "MetricName")
	token, _ := in.str(in.m, "NextToken")
	var queueFilter string
	for _, d := range in.structures(in.m, "Dimensions") {
		if name, _ := in.str(d, "Name"); name != "QueueName" {
			return cbor.Map{"Metrics": cbor.List{}}, in.err
		}
		queueFilter, _ = in.str(d, "Value")
	}
	if in.err != nil {
		return nil, in.err
	}
	var entries []string // "queue\x00metric", sorted, for paging
	if namespace == "" || namespace == "AWS/SQS" {
		for name, q := range s.queues {
			if queueFilter != "" && name != queueFilter {
				continue
			}
			for metric := range sqsMetrics {
				if (metricName == "" || metric == metricName) && (!fifoOnlyMetrics[metric] || q.attrs.fifo) {
					entries = append(entries, name+"\x00"+metric)
				}
			}
		}
	}
	slices.Sort(entries)
	if token != "" {
		after, err := base64.RawURLEncoding.DecodeString(token)
		if err != nil {
			return nil, errCWInvalidNextToken()
		}
		i, _ := slices.BinarySearch(entries, string(after))
		if i < len(entries) && entries[i] == string(after) {
			i++
		}
		entries = entries[i:]
	}
	const pageSize = 500
	out := cbor.Map{}
	if len(entries) > pageSize {
		entries = entries[:pageSize]
		out["NextToken"] = cbor.String(base64.RawURLEncoding.EncodeToString([]byte(entries[pageSize-1])))
	}
	metrics := cbor.List{}
	for _, e := range entries {
		queue, metric, _ := strings.Cut(e, "\x00")
		metrics = append(metrics, cbor.Map{
			"Namespace":  cbor.String("AWS/SQS"),
			"MetricName": cbor.String(metric),
			"Dimensions": cbor.List{cbor.Map{"Name": cbor.String("QueueName"), "Value": cbor.String(queue)}},
		})
	}
	out["Metrics"] = metrics
	return out, nil
}
