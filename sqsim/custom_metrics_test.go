package sqsim

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"
)

// customQuery asks for one statistic of a custom metric.
func customQuery(id, namespace, metric, stat string, period int32, dims ...cwtypes.Dimension) cwtypes.MetricDataQuery {
	return cwtypes.MetricDataQuery{Id: aws.String(id), MetricStat: &cwtypes.MetricStat{
		Metric: &cwtypes.Metric{Namespace: aws.String(namespace), MetricName: aws.String(metric), Dimensions: dims},
		Period: aws.Int32(period), Stat: aws.String(stat),
	}}
}

func dim(name, value string) cwtypes.Dimension {
	return cwtypes.Dimension{Name: aws.String(name), Value: aws.String(value)}
}

// values returns each query's values, by id, over the ten minutes around t0.
func (h *harness) values(t *testing.T, queries ...cwtypes.MetricDataQuery) map[string][]float64 {
	t.Helper()
	out, err := h.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(t0.Add(-5 * time.Minute)), EndTime: aws.Time(t0.Add(5 * time.Minute)),
		MetricDataQueries: queries, ScanBy: cwtypes.ScanByTimestampAscending,
	})
	if err != nil {
		t.Fatalf("GetMetricData: %v", err)
	}
	got := map[string][]float64{}
	for _, r := range out.MetricDataResults {
		got[aws.ToString(r.Id)] = r.Values
	}
	return got
}

func (h *harness) put(t *testing.T, namespace string, data ...cwtypes.MetricDatum) {
	t.Helper()
	if _, err := h.cw.PutMetricData(context.Background(), &cloudwatch.PutMetricDataInput{Namespace: aws.String(namespace), MetricData: data}); err != nil {
		t.Fatalf("PutMetricData: %v", err)
	}
}

// TestPutMetricData publishes an MCP server's own metrics as AWS-verified
// test cases of a peer emulator do (values, Values with Counts, statistic
// sets, dimensions, units) and reads them back with GetMetricData,
// GetMetricStatistics and ListMetrics, with the values those cases record.
func TestPutMetricData(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	const ns = "mcp/tools"
	at := aws.Time(t0)
	h.put(t, ns, cwtypes.MetricDatum{MetricName: aws.String("calls"), Timestamp: at, Values: []float64{1, 10}, Counts: []float64{2, 4}, Unit: cwtypes.StandardUnitCount})
	h.put(t, ns,
		cwtypes.MetricDatum{MetricName: aws.String("latency"), Timestamp: at, Value: aws.Float64(11), Unit: cwtypes.StandardUnitSeconds},
		cwtypes.MetricDatum{MetricName: aws.String("latency"), Timestamp: at, Unit: cwtypes.StandardUnitSeconds,
			StatisticValues: &cwtypes.StatisticSet{SampleCount: aws.Float64(10), Sum: aws.Float64(55), Minimum: aws.Float64(1), Maximum: aws.Float64(10)}})
	h.put(t, ns,
		cwtypes.MetricDatum{MetricName: aws.String("errors"), Timestamp: at, Value: aws.Float64(3), Dimensions: []cwtypes.Dimension{dim("server", "research"), dim("tool", "web_search")}},
		cwtypes.MetricDatum{MetricName: aws.String("errors"), Timestamp: at, Value: aws.Float64(4), Dimensions: []cwtypes.Dimension{dim("server", "docs")}},
		cwtypes.MetricDatum{MetricName: aws.String("errors"), Timestamp: at, Value: aws.Float64(5)})

	stats, err := h.cw.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String(ns), MetricName: aws.String("calls"), StartTime: aws.Time(t0.Add(-time.Minute)), EndTime: aws.Time(t0.Add(time.Minute)),
		Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticSampleCount, cwtypes.StatisticSum, cwtypes.StatisticMaximum},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := stats.Datapoints; len(p) != 1 || aws.ToFloat64(p[0].SampleCount) != 6 || aws.ToFloat64(p[0].Sum) != 42 || aws.ToFloat64(p[0].Maximum) != 10 || p[0].Unit != cwtypes.StandardUnitCount {
		t.Errorf("Values with Counts: %+v, want SampleCount 6, Sum 42, Maximum 10 in Count", p)
	}

	got := h.values(t,
		customQuery("sum", ns, "latency", "Sum", 60), customQuery("n", ns, "latency", "SampleCount", 60),
		customQuery("lo", ns, "latency", "Minimum", 60), customQuery("hi", ns, "latency", "Maximum", 60),
		customQuery("avg", ns, "latency", "Average", 60),
		// A metric is its whole set of dimensions, in any order.
		customQuery("both", ns, "errors", "Sum", 60, dim("tool", "web_search"), dim("server", "research")),
		customQuery("one", ns, "errors", "Sum", 60, dim("server", "docs")),
		customQuery("none", ns, "errors", "Sum", 60),
		customQuery("part", ns, "errors", "Sum", 60, dim("server", "research")))
	want := map[string][]float64{"sum": {66}, "n": {11}, "lo": {1}, "hi": {11}, "avg": {6}, "both": {3}, "one": {4}, "none": {5}, "part": nil}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("%s: %v, want %v", id, got[id], w)
		}
	}

	list, err := h.cw.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: aws.String(ns), MetricName: aws.String("errors"),
		Dimensions: []cwtypes.DimensionFilter{{Name: aws.String("server")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Metrics) != 2 {
		t.Errorf("ListMetrics of errors with a server dimension: %d metrics, want 2", len(list.Metrics))
	}
	list, err = h.cw.ListMetrics(ctx, &cloudwatch.ListMetricsInput{Namespace: aws.String(ns)})
	if err != nil || len(list.Metrics) != 5 {
		t.Errorf("ListMetrics of %s: %v, %v; want calls, latency and three errors", ns, list, err)
	}
}

// TestPutMetricDataUnits: data is kept per unit, as CloudWatch keeps it:
// GetMetricStatistics gives a datapoint per unit, and a query naming a unit
// sees only that unit's data.
func TestPutMetricDataUnits(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.put(t, "units",
		cwtypes.MetricDatum{MetricName: aws.String("m"), Value: aws.Float64(1), Unit: cwtypes.StandardUnitSeconds},
		cwtypes.MetricDatum{MetricName: aws.String("m"), Value: aws.Float64(5), Unit: cwtypes.StandardUnitCount},
		cwtypes.MetricDatum{MetricName: aws.String("m"), Value: aws.Float64(10)})
	stats, err := h.cw.GetMetricStatistics(context.Background(), &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String("units"), MetricName: aws.String("m"), StartTime: aws.Time(t0.Add(-time.Minute)), EndTime: aws.Time(t0.Add(time.Minute)),
		Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticAverage},
	})
	if err != nil {
		t.Fatal(err)
	}
	byUnit := map[cwtypes.StandardUnit]float64{}
	for _, p := range stats.Datapoints {
		byUnit[p.Unit] = aws.ToFloat64(p.Average)
	}
	if want := map[cwtypes.StandardUnit]float64{"Seconds": 1, "Count": 5, "None": 10}; len(byUnit) != 3 || byUnit["Seconds"] != 1 || byUnit["Count"] != 5 || byUnit["None"] != 10 {
		t.Errorf("datapoints by unit %v, want %v", byUnit, want)
	}
	q := customQuery("s", "units", "m", "Sum", 60)
	q.MetricStat.Unit = cwtypes.StandardUnitSeconds
	ms := customQuery("ms", "units", "m", "Sum", 60)
	ms.MetricStat.Unit = cwtypes.StandardUnitMilliseconds
	if got := h.values(t, q, ms); !slices.Equal(got["s"], []float64{1}) || len(got["ms"]) != 0 {
		t.Errorf("by unit: Seconds %v, Milliseconds %v; want [1] and none", got["s"], got["ms"])
	}
}

// TestHighResolutionMetrics: data published with StorageResolution 1 is
// read in periods of 1 to 30 seconds, one-minute data in any period, and
// after three hours high-resolution points are kept as one-minute points,
// as CloudWatch keeps them.
func TestHighResolutionMetrics(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for i, v := range []float64{1, 2, 4} {
		h.put(t, "hires", cwtypes.MetricDatum{MetricName: aws.String("latency"), Value: aws.Float64(v),
			Timestamp: aws.Time(t0.Add(time.Duration(5+10*i) * time.Second)), StorageResolution: aws.Int32(1)})
	}
	h.put(t, "hires", cwtypes.MetricDatum{MetricName: aws.String("calls"), Value: aws.Float64(7), Timestamp: aws.Time(t0.Add(25 * time.Second))})
	got := h.values(t,
		customQuery("p1", "hires", "latency", "Sum", 1), customQuery("p10", "hires", "latency", "Sum", 10),
		customQuery("p20", "hires", "latency", "Sum", 20), customQuery("p60", "hires", "latency", "Sum", 60),
		customQuery("std30", "hires", "calls", "Sum", 30))
	want := map[string][]float64{"p1": {1, 2, 4}, "p10": {1, 2, 4}, "p20": {3, 4}, "p60": {7}, "std30": {7}}
	for id, w := range want {
		if !slices.Equal(got[id], w) {
			t.Errorf("%s: %v, want %v", id, got[id], w)
		}
	}
	_, err := h.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(time.Minute)), MetricDataQueries: []cwtypes.MetricDataQuery{customQuery("p7", "hires", "latency", "Sum", 7)},
	})
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("Period 7: %v, want InvalidParameterValue", err)
	}

	h.advance(3*time.Hour + time.Minute)
	out, err := h.cw.GetMetricData(context.Background(), &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(time.Minute)), MetricDataQueries: []cwtypes.MetricDataQuery{customQuery("p1", "hires", "latency", "Sum", 1)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if r := out.MetricDataResults[0]; len(r.Values) != 1 || r.Values[0] != 7 || !r.Timestamps[0].Equal(t0) {
		t.Errorf("three hours on, one-second periods: %v at %v, want 7 at the minute's start", r.Values, r.Timestamps)
	}
}

// TestPutMetricDataRefused: AWS's texts for what it refuses (the three
// AWS-verified ones first), and a refused request stores nothing.
func TestPutMetricDataRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	name := aws.String("m")
	set := &cwtypes.StatisticSet{SampleCount: aws.Float64(10), Sum: aws.Float64(55), Minimum: aws.Float64(1), Maximum: aws.Float64(10)}
	tests := []struct {
		name      string
		namespace string
		datum     cwtypes.MetricDatum
		code, msg string
	}{
		{"Value and Values", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1.5), Values: []float64{1, 10}}, "InvalidParameterCombination",
			"The parameters MetricData.member.2.Value and MetricData.member.2.Values are mutually exclusive and you have specified both."},
		{"Counts of another size", "ns", cwtypes.MetricDatum{MetricName: name, Values: []float64{1, 10}, Counts: []float64{2, 4, 5}}, "InvalidParameterValue",
			"The parameters MetricData.member.2.Values and MetricData.member.2.Counts must be of the same size."},
		{"Value and StatisticValues", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1.5), StatisticValues: set}, "InvalidParameterCombination",
			"The parameters MetricData.member.2.Value and MetricData.member.2.StatisticValues are mutually exclusive and you have specified both."},
		{"an AWS namespace", "AWS/SQS", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1)}, "InvalidParameterValue", ""},
		{"storage resolution 5", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1), StorageResolution: aws.Int32(5)}, "InvalidParameterValue", ""},
		{"a time stamp three weeks old", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1), Timestamp: aws.Time(t0.Add(-21 * 24 * time.Hour))}, "InvalidParameterValue", ""},
		{"an unknown unit", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1), Unit: "Furlongs"}, "InvalidParameterValue", ""},
		{"two dimensions of one name", "ns", cwtypes.MetricDatum{MetricName: name, Value: aws.Float64(1), Dimensions: []cwtypes.Dimension{dim("a", "1"), dim("a", "2")}}, "InvalidParameterValue", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A valid datum first: it must not be stored either.
			_, err := h.cw.PutMetricData(context.Background(), &cloudwatch.PutMetricDataInput{Namespace: aws.String(tt.namespace),
				MetricData: []cwtypes.MetricDatum{{MetricName: aws.String("ok"), Value: aws.Float64(1)}, tt.datum}})
			var api smithy.APIError
			if !errors.As(err, &api) || api.ErrorCode() != tt.code || (tt.msg != "" && api.ErrorMessage() != tt.msg) {
				t.Errorf("err = %v, want %s %q", err, tt.code, tt.msg)
			}
		})
	}
	if list, err := h.cw.ListMetrics(context.Background(), &cloudwatch.ListMetricsInput{Namespace: aws.String("ns")}); err != nil || len(list.Metrics) != 0 {
		t.Errorf("refused requests left metrics: %v, %v", list, err)
	}
}

// TestPutMetricDataCompressed: the Go SDK gzips a PutMetricData of more than
// 10 KiB, as every SDK does; the simulator reads it.
func TestPutMetricDataCompressed(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var mu sync.Mutex
	var encodings []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		encodings = append(encodings, r.Header.Get("Content-Encoding"))
		mu.Unlock()
		h.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	_, cw := newClients(srv.URL)
	var data []cwtypes.MetricDatum
	for i := range 300 {
		data = append(data, cwtypes.MetricDatum{MetricName: aws.String("calls"), Value: aws.Float64(1),
			Dimensions: []cwtypes.Dimension{dim("tool", fmt.Sprintf("tool-%03d", i%3))}})
	}
	if _, err := cw.PutMetricData(context.Background(), &cloudwatch.PutMetricDataInput{Namespace: aws.String("mcp"), MetricData: data}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(encodings, []string{"gzip"}) {
		t.Errorf("Content-Encoding of the calls: %q, want one gzip", encodings)
	}
	if got := h.values(t, customQuery("n", "mcp", "calls", "SampleCount", 60, dim("tool", "tool-001"))); !slices.Equal(got["n"], []float64{100}) {
		t.Errorf("tool-001 calls: %v, want 100", got["n"])
	}
}

// TestGetMetricStatisticsLimit: GetMetricStatistics refuses more than 1,440
// data points with AWS's text, which one-second periods make easy to ask
// for.
func TestGetMetricStatisticsLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	_, err := h.cw.GetMetricStatistics(context.Background(), &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String("ns"), MetricName: aws.String("m"), StartTime: aws.Time(t0.Add(-24 * time.Hour)), EndTime: aws.Time(t0),
		Period: aws.Int32(1), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum},
	})
	const want = "You have requested up to 86400 datapoints, which exceeds the limit of 1440. You may reduce the datapoints requested by increasing Period, or decreasing the time range."
	var api smithy.APIError
	if !errors.As(err, &api) || api.ErrorCode() != "InvalidParameterCombination" || api.ErrorMessage() != want {
		t.Errorf("err = %v, want InvalidParameterCombination %q", err, want)
	}
}
