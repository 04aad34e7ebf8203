package deploy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The demo's queues the test works on: it sends calls that web_search rejects on every attempt
// to web-search-dlq, redrives them to web-search, and they come back; the queue variable of the
// dashboard is tool-calls.fifo, the demo's FIFO queue, whose sessions block.
const (
	testDLQ    = "web-search-dlq"
	testSource = "web-search"
	testQueue  = "tool-calls.fifo"
	poisonSent = 4
)

// TestPrometheusAgainstTheDemo: a Prometheus server scrapes `dashboard demo` with the shipped
// rules loaded. A DLQ that fills fires the DLQ alert; a redrive whose messages fail again fires
// the bounce alert; every rule evaluates without error and toolq's alerts about itself stay
// quiet on a healthy demo; every expression of every dashboard panel returns data; and no rule
// or panel names a metric or label that toolq's /metrics does not export.
func TestPrometheusAgainstTheDemo(t *testing.T) {
	t.Parallel()
	prometheusBin := need(t, "prometheus")
	start := time.Now()
	step := func(what string) { t.Logf("%5.1f s: %s", time.Since(start).Seconds(), what) }
	d := startDemo(t)
	step("the demo is ready")
	p := startPrometheus(t, prometheusBin, d.addr)
	step("Prometheus is ready")

	d.sendPoison(t)
	p.waitAlert(t, "ToolqDeadLetterQueueNotEmpty", testDLQ)
	step("ToolqDeadLetterQueueNotEmpty fires")
	d.waitSampled(t)
	step("toolq sampled the test's calls")
	d.startRedrive(t)
	p.waitSeries(t, fmt.Sprintf(`toolq_redrive_to_move_messages{queue=%q}`, testDLQ), 30*time.Second)
	step("Prometheus saw the redrive running")
	p.waitAlert(t, "ToolqRedriveBouncedBack", testDLQ)
	p.waitSeries(t, fmt.Sprintf(`toolq_redrive_outcome_bounced_back_by_tool{queue=%q}`, testDLQ), 30*time.Second)
	step("ToolqRedriveBouncedBack fires")
	// CloudWatch's age of the oldest message comes as a datapoint a minute: the first within a
	// minute of the demo's start.
	p.waitSeries(t, fmt.Sprintf(`toolq_queue_oldest_message_age_seconds{queue=%q}`, testQueue), 90*time.Second)
	step("CloudWatch's age of the oldest message came")

	rules := p.rules(t)
	t.Run("every rule evaluates", func(t *testing.T) { checkRulesEvaluate(t, p, rules) })
	t.Run("toolq's alerts about itself are quiet", func(t *testing.T) { checkQuiet(t, p) })
	t.Run("every panel returns data", func(t *testing.T) { checkPanels(t, p) })
	t.Run("only what /metrics exports", func(t *testing.T) { checkExported(t, p, rules) })
}

// demo is `dashboard demo` running as a process of its own.
type demo struct {
	*process
	addr string // the dashboard's host:port
	sqs  *sqs.Client
}

// startDemo builds the binary and runs its demo with the collector's cadences in seconds, a
// webhook target here (so that the notification series exist) and EventBridge's
// ListEventBuses denied (so that an AWS operation fails, as the dashboard's panel of failing
// operations shows).
func startDemo(t *testing.T) *demo {
	t.Helper()
	need(t, "go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "dashboard")
	build := exec.Command("go", "build", "-o", bin, "./cmd/dashboard")
	build.Dir = ".." // the module root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/dashboard: %v\n%s", err, out)
	}
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(receiver.Close)
	d := &demo{addr: freeAddr(t)}
	simAddr := freeAddr(t)
	d.process = startProcess(t, "demo", bin, cleanEnv(), "demo", "--listen", d.addr, "--sim-listen", simAddr,
		"--seed", "7", "--db", filepath.Join(dir, "toolq.db"),
		"--attributes-interval", "1s", "--quiet-attributes-interval", "1s", "--quiet-dlq-interval", "1s",
		"--peek-dlq-interval", "2s", "--peek-source-interval", "5s", "--metrics-interval", "5s",
		"--fault", "ListEventBuses=deny",
		"--notify", "webhook:"+receiver.URL+"/toolq#name=deploy-test&secret=whsec_dGVzdC1zZWNyZXQtb2YtdGhlLWRlcGxveS10ZXN0")
	d.sqs = sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String("http://" + simAddr),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	waitFor(t, d.process, 90*time.Second, "the demo's /readyz", func() (bool, string) {
		err := getJSON(t.Context(), d.url("/readyz"), nil)
		return err == nil, fmt.Sprint(err)
	})
	return d
}

func (d *demo) url(path string) string { return "http://" + d.addr + path }

// sendPoison sends web-search-dlq calls that web-search's workers reject on every attempt.
func (d *demo) sendPoison(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	q, err := d.sqs.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(testDLQ)})
	if err != nil {
		t.Fatal(err)
	}
	var entries []types.SendMessageBatchRequestEntry
	for i := range poisonSent {
		// With the error a worker writes into a call it rejects for good, as the calls that
		// failed into the DLQ carry it: the worker sends it on unchanged, and what comes back is
		// the redriven body (toolq counts a call id with another body apart).
		body, _ := json.Marshal(map[string]any{"toolCallId": fmt.Sprintf("tc_deploy_%02d", i), "toolName": "web_search",
			"toolArgs": map[string]any{"query": ""}, "sessionId": "sess_deploy",
			"error": map[string]any{"code": "empty_query", "message": "query is empty", "at": time.Now().UnixMilli()}})
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(string(body)),
			MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String("deploy-test")}}})
	}
	out, err := d.sqs.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: q.QueueUrl, Entries: entries})
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("SendMessageBatch to %s: %v %v", testDLQ, err, out)
	}
}

// waitSampled waits until toolq's newest sample of the DLQ holds the test's calls: a redrive
// counts as its own only what that sample held before it started.
func (d *demo) waitSampled(t *testing.T) {
	t.Helper()
	waitFor(t, d.process, 60*time.Second, "a sample of "+testDLQ+" with the test's calls", func() (bool, string) {
		var page struct{ Matched int }
		err := getJSON(t.Context(), d.url("/api/v1/queues/"+testDLQ+"/messages?q=tc_deploy_&limit=50"), &page)
		return err == nil && page.Matched == poisonSent, fmt.Sprintf("%d matched, %v", page.Matched, err)
	})
}

// startRedrive redrives the DLQ to its source at a message a second, so that the move task runs
// across several scrapes. The source's visibility timeout goes from the demo's 6 s to 2 s first:
// a call its workers reject comes back to the DLQ after three deliveries, within seconds.
func (d *demo) startRedrive(t *testing.T) {
	t.Helper()
	q, err := d.sqs.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(testSource)})
	if err == nil {
		_, err = d.sqs.SetQueueAttributes(t.Context(), &sqs.SetQueueAttributesInput{QueueUrl: q.QueueUrl,
			Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): "2"}})
	}
	if err != nil {
		t.Fatalf("shorten %s's visibility timeout: %v", testSource, err)
	}
	body := fmt.Sprintf(`{"destination":%q,"maxMessagesPerSecond":1}`, testSource)
	if err := doJSON(t.Context(), http.MethodPost, d.url("/api/v1/queues/"+testDLQ+"/redrives"), body, nil); err != nil {
		t.Fatalf("start a redrive of %s: %v", testDLQ, err)
	}
}

// prometheus is a Prometheus server of the test's own.
type prometheus struct {
	*process
	api     string // http://host:port/api/v1
	started time.Time
}

// startPrometheus runs Prometheus in a temporary directory, scraping target every second and
// evaluating the shipped rules every second.
func startPrometheus(t *testing.T, bin, target string) *prometheus {
	t.Helper()
	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - %q
scrape_configs:
  - job_name: toolq
    static_configs:
      - targets: [%q]
`, ruleFilePath(t), target)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := &prometheus{api: "http://" + addr + "/api/v1", started: time.Now()}
	p.process = startProcess(t, "prometheus", bin, os.Environ(), "--config.file="+configPath,
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+addr, "--log.level=warn")
	waitFor(t, p.process, 30*time.Second, "Prometheus's /-/ready", func() (bool, string) {
		err := getJSON(t.Context(), "http://"+addr+"/-/ready", nil)
		return err == nil, fmt.Sprint(err)
	})
	return p
}

// promAnswer is the envelope of every answer of Prometheus's HTTP API.
type promAnswer[T any] struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   T      `json:"data"`
}

// get reads an API path into the answer's data.
func get[T any](ctx context.Context, p *prometheus, path string, params url.Values) (T, error) {
	var a promAnswer[T]
	err := getJSON(ctx, p.api+path+"?"+params.Encode(), &a)
	if err == nil && a.Status != "success" {
		err = fmt.Errorf("%s: %s %s", path, a.Status, a.Error)
	}
	return a.Data, err
}

// promResult is a query's result: a vector's samples or a matrix's series.
type promResult struct {
	ResultType string `json:"resultType"`
	Result     []struct {
		Metric map[string]string `json:"metric"`
		Value  []any             `json:"value"`
		Values [][]any           `json:"values"`
	} `json:"result"`
}

// points counts the samples of a result.
func (r promResult) points() int {
	n := 0
	for _, s := range r.Result {
		n += len(s.Values)
		if s.Value != nil {
			n++
		}
	}
	return n
}

// instant evaluates expr now.
func (p *prometheus) instant(ctx context.Context, expr string) (promResult, error) {
	return get[promResult](ctx, p, "/query", url.Values{"query": {expr}})
}

// overRun evaluates expr every second since Prometheus started, up to now: the steps count back
// from now, so that the newest evaluation sees the newest scrape.
func (p *prometheus) overRun(ctx context.Context, expr string) (promResult, error) {
	end := time.Now()
	start := end.Add(-end.Sub(p.started).Truncate(time.Second))
	return get[promResult](ctx, p, "/query_range", url.Values{"query": {expr},
		"start": {unix(start)}, "end": {unix(end)}, "step": {"1"}})
}

func unix(at time.Time) string { return strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', 3, 64) }

// waitSeries waits until expr selects a series at Prometheus's newest evaluation.
func (p *prometheus) waitSeries(t *testing.T, expr string, timeout time.Duration) {
	t.Helper()
	waitFor(t, p.process, timeout, "Prometheus to hold "+expr, func() (bool, string) {
		r, err := p.instant(t.Context(), expr)
		return err == nil && r.points() > 0, fmt.Sprintf("%d samples, %v", r.points(), err)
	})
}

// promAlert is one alert of GET /api/v1/alerts.
type promAlert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // pending or firing
}

func (p *prometheus) alerts(t *testing.T) ([]promAlert, error) {
	a, err := get[struct{ Alerts []promAlert }](t.Context(), p, "/alerts", nil)
	return a.Alerts, err
}

// waitAlert waits until the alert fires for the queue.
func (p *prometheus) waitAlert(t *testing.T, name, queue string) {
	t.Helper()
	waitFor(t, p.process, 120*time.Second, name+" firing for "+queue, func() (bool, string) {
		alerts, err := p.alerts(t)
		return slices.ContainsFunc(alerts, func(a promAlert) bool {
			return a.Labels["alertname"] == name && a.Labels["queue"] == queue && a.State == "firing"
		}), fmt.Sprintf("%v %v", alerts, err)
	})
}

// promRule is one rule of GET /api/v1/rules.
type promRule struct {
	Name           string    `json:"name"`
	Query          string    `json:"query"`
	Type           string    `json:"type"` // alerting or recording
	Health         string    `json:"health"`
	LastError      string    `json:"lastError"`
	LastEvaluation time.Time `json:"lastEvaluation"`
}

func (p *prometheus) rules(t *testing.T) []promRule {
	t.Helper()
	data, err := get[struct{ Groups []struct{ Rules []promRule } }](t.Context(), p, "/rules", nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []promRule
	for _, g := range data.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

// checkRulesEvaluate: Prometheus loaded every rule of the file and evaluated each one, since it
// started, without error; each recording rule recorded series.
func checkRulesEvaluate(t *testing.T, p *prometheus, rules []promRule) {
	if want := len(regexp.MustCompile(`(?m)^\s*- (alert|record): `).FindAllString(readFile(t, rulesFile), -1)); len(rules) != want {
		t.Errorf("Prometheus loaded %d rules; %s has %d", len(rules), rulesFile, want)
	}
	for _, r := range rules {
		if r.Health != "ok" || r.LastError != "" || r.LastEvaluation.Before(p.started) {
			t.Errorf("%s %s: health %q, error %q, evaluated %s", r.Type, r.Name, r.Health, r.LastError, r.LastEvaluation)
		}
		if r.Type != "recording" {
			continue
		}
		if res, err := p.instant(t.Context(), r.Name); err != nil || res.points() == 0 {
			t.Errorf("recording rule %s recorded nothing: %v", r.Name, err)
		}
	}
}

// checkQuiet: on the healthy demo, toolq's alerts about itself are neither firing nor pending,
// but for the operation the demo was told to fail.
func checkQuiet(t *testing.T, p *prometheus) {
	alerts, err := p.alerts(t)
	if err != nil {
		t.Fatal(err)
	}
	quiet := []string{"ToolqRegionBlind", "ToolqCloudWatchFailing", "ToolqDataStale", "ToolqMetricsUnreadable",
		"ToolqMetricsAbsent", "ToolqNotificationsFailing"}
	var denied bool
	for _, a := range alerts {
		if slices.Contains(quiet, a.Labels["alertname"]) {
			t.Errorf("%s is %s on a healthy demo: %v", a.Labels["alertname"], a.State, a.Labels)
		}
		denied = denied || a.Labels["alertname"] == "ToolqAWSOperationFailing" && a.Labels["operation"] == "ListEventBuses"
	}
	if !denied {
		t.Errorf("ToolqAWSOperationFailing is not pending for the denied ListEventBuses: %v", alerts)
	}
}

// panelExpr is a panel's expression with the dashboard's variables as the test's Grafana would
// set them: the queue, and the intervals for a scrape every second.
func (p *prometheus) panelExpr(expr string) string {
	return strings.NewReplacer(
		"$queue", testQueue,
		"$__rate_interval", "10s",
		"$__range", strconv.Itoa(int(time.Since(p.started).Seconds())+1)+"s",
	).Replace(expr)
}

// checkPanels: every query of every panel returns data, an instant query now, a range query
// over the run; and the queue variable's query offers the queue the test sets.
func checkPanels(t *testing.T, p *prometheus) {
	values, err := get[[]string](t.Context(), p, "/label/queue/values", url.Values{"match[]": {"toolq_queue_health"}})
	if err != nil || !slices.Contains(values, testQueue) {
		t.Errorf("label_values(toolq_queue_health, queue) = %v, %v; want %s among them", values, err, testQueue)
	}
	for name, q := range readDashboard(t).queries() {
		t.Run(name, func(t *testing.T) {
			expr := p.panelExpr(q.Expr)
			query := p.overRun
			if q.Instant {
				query = p.instant
			}
			r, err := query(t.Context(), expr)
			if err != nil || r.points() == 0 {
				t.Errorf("%s (instant %v): %d samples, %v", expr, q.Instant, r.points(), err)
			}
		})
	}
}

// checkExported: every metric a rule or a panel names is one toolq's /metrics exported during
// the run, or a recording rule's; every label it names, one those series have.
func checkExported(t *testing.T, p *prometheus, rules []promRule) {
	exported := p.labelsByMetric(t, `{job="toolq"}`)
	for name := range exported {
		if name == "up" || strings.HasPrefix(name, "scrape_") { // Prometheus's own, of the scrape
			delete(exported, name)
		}
	}
	for _, labels := range exported {
		delete(labels, "job") // the target's labels, which Prometheus adds
		delete(labels, "instance")
	}
	known := map[string]map[string]bool{}
	exprs := map[string]string{}
	for _, r := range rules {
		exprs[r.Type+" rule "+r.Name] = r.Query
		if r.Type == "recording" {
			known[r.Name] = p.labelsByMetric(t, r.Name)[r.Name]
		}
	}
	for name, q := range readDashboard(t).queries() {
		exprs["panel "+name] = p.panelExpr(q.Expr)
	}
	for what, expr := range exprs {
		for _, problem := range unexported(expr, exported, known) {
			t.Errorf("%s: %s", what, problem)
		}
	}
}

// unexported lists what expr names that neither /metrics exported nor a recording rule records.
func unexported(expr string, exported, recorded map[string]map[string]bool) []string {
	use, err := usePromQL(expr)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", expr, err)}
	}
	var problems []string
	all := map[string]bool{}
	for _, s := range use.selectors {
		labels, ok := exported[s.metric]
		if !ok {
			labels, ok = recorded[s.metric]
		}
		if !ok {
			problems = append(problems, fmt.Sprintf("metric %s is not exported by /metrics (nor recorded by a rule)", s.metric))
			continue
		}
		for l := range labels {
			all[l] = true
		}
		for _, l := range s.labels {
			if !labels[l] {
				problems = append(problems, fmt.Sprintf("%s has no label %s", s.metric, l))
			}
		}
	}
	for _, l := range use.grouping {
		if !all[l] {
			problems = append(problems, fmt.Sprintf("grouped or matched by %s, which none of its metrics has", l))
		}
	}
	return problems
}

// labelsByMetric reads the series that match selected over the run, as each metric's labels.
func (p *prometheus) labelsByMetric(t *testing.T, selector string) map[string]map[string]bool {
	t.Helper()
	series, err := get[[]map[string]string](t.Context(), p, "/series", url.Values{"match[]": {selector},
		"start": {unix(p.started)}, "end": {unix(time.Now())}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, s := range series {
		name := s["__name__"]
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for l := range s {
			if l != "__name__" {
				out[name][l] = true
			}
		}
	}
	return out
}
