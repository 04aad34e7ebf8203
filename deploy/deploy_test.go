// Package deploy_test checks what deploy/ ships for Prometheus and Grafana against the real
// thing: promtool checks the rules and runs their unit tests, and a Prometheus server of the
// test's own scrapes `dashboard demo`, evaluates every rule, sees the alerts fire and answers
// every expression of every dashboard panel (prometheus_test.go).
//
// They need Debian's prometheus package (prometheus and promtool on PATH): without it they skip,
// except under CI=true, where .ci/run installs it and its absence fails the run.
package deploy_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	rulesFile     = "prometheus/toolq-rules.yml"
	ruleTestsFile = "prometheus/toolq-rules.test.yml"
	dashboardFile = "grafana/toolq.json"
)

// need finds a program or skips the test, except under CI=true, where .ci/run installs it.
func need(t *testing.T, program string) string {
	t.Helper()
	path, err := exec.LookPath(program)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no %s on PATH (.ci/run installs Debian's prometheus package)", program)
		}
		t.Skipf("no %s on PATH (apt-get install --no-install-recommends prometheus); skipping", program)
	}
	return path
}

// promtool runs promtool with args in this directory and returns what it printed.
func promtool(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(need(t, "promtool"), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func TestPromtoolChecksTheRules(t *testing.T) {
	t.Parallel()
	out := promtool(t, "check", "rules", rulesFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules printed no SUCCESS:\n%s", out)
	}
}

func TestPromtoolRunsTheRuleTests(t *testing.T) {
	t.Parallel()
	out := promtool(t, "test", "rules", ruleTestsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules printed no SUCCESS:\n%s", out)
	}
}

// alertNames are the alerts a rules file defines, in order, each once.
func alertNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*- alert: (\S+)\s*$`).FindAllStringSubmatch(readFile(t, rulesFile), -1) {
		if !slices.Contains(names, m[1]) {
			names = append(names, m[1])
		}
	}
	if len(names) == 0 {
		t.Fatalf("%s defines no alert", rulesFile)
	}
	return names
}

// TestEveryAlertHasUnitTests: each alert of the rules is tested by promtool both firing (with
// the labels and annotations it should have) and silent.
func TestEveryAlertHasUnitTests(t *testing.T) {
	t.Parallel()
	tests := readFile(t, ruleTestsFile)
	// An alert_rule_test entry: its alertname, then exp_alerts either [] or a list.
	entries := regexp.MustCompile(`(?m)^\s*alertname: (\S+)\s*\n\s*exp_alerts:( \[\])?`).FindAllStringSubmatch(tests, -1)
	for _, name := range alertNames(t) {
		var firing, silent bool
		for _, e := range entries {
			if e[1] == name {
				silent = silent || e[2] != ""
				firing = firing || e[2] == ""
			}
		}
		if !firing || !silent {
			t.Errorf("%s: %s tests it firing: %v, silent: %v; want both", name, ruleTestsFile, firing, silent)
		}
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// dashboard is what the tests read of the Grafana dashboard.
type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Definition string          `json:"definition"`
			Multi      bool            `json:"multi"`
			IncludeAll bool            `json:"includeAll"`
		} `json:"list"`
	} `json:"templating"`
	Panels []dashboardPanel `json:"panels"`
}

type dashboardPanel struct {
	ID         int              `json:"id"`
	Type       string           `json:"type"`
	Title      string           `json:"title"`
	Datasource *datasourceRef   `json:"datasource"`
	Targets    []dashboardQuery `json:"targets"`
	Panels     []dashboardPanel `json:"panels"` // a collapsed row's
}

type dashboardQuery struct {
	RefID      string         `json:"refId"`
	Expr       string         `json:"expr"`
	Instant    bool           `json:"instant"`
	Datasource *datasourceRef `json:"datasource"`
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func readDashboard(t *testing.T) dashboard {
	t.Helper()
	var d dashboard
	if err := json.Unmarshal([]byte(readFile(t, dashboardFile)), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

// queries are the dashboard's panel queries, each named by its panel and refId.
func (d dashboard) queries() map[string]dashboardQuery {
	out := map[string]dashboardQuery{}
	var walk func(ps []dashboardPanel)
	walk = func(ps []dashboardPanel) {
		for _, p := range ps {
			for _, q := range p.Targets {
				out[fmt.Sprintf("%s (panel %d) %s", p.Title, p.ID, q.RefID)] = q
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// TestDashboardShape: the dashboard imports anywhere (every panel and query on the datasource
// variable, no datasource of this machine's), has the queue variable the queue row uses, and
// sections for the fleet, a queue, the DLQs and redrives, and toolq itself.
func TestDashboardShape(t *testing.T) {
	t.Parallel()
	d := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("uid %q, title %q: provisioning needs both", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
		if v.Name == "queue" && (v.Multi || v.IncludeAll || v.Definition != "label_values(toolq_queue_health, queue)") {
			t.Errorf("the queue variable: multi %v, includeAll %v, %q; want one queue of toolq_queue_health's", v.Multi, v.IncludeAll, v.Definition)
		}
	}
	if vars["datasource"] != "datasource" || vars["queue"] != "query" {
		t.Errorf("variables %v; want datasource (a datasource) and queue (a query)", vars)
	}
	var rows []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			rows = append(rows, p.Title)
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %v and %d queries; want ${datasource} and some", p.Title, p.Datasource, len(p.Targets))
		}
	}
	if want := []string{"Fleet", "Queue $queue", "Dead-letter queues and redrives", "toolq: health and cost"}; !slices.Equal(rows, want) {
		t.Errorf("rows %q; want %q", rows, want)
	}
	for name, q := range d.queries() {
		if q.Datasource == nil || q.Datasource.UID != "${datasource}" || strings.TrimSpace(q.Expr) == "" {
			t.Errorf("%s: datasource %v, expression %q", name, q.Datasource, q.Expr)
		}
	}
}

// ruleFilePath is the rules file's absolute path, for a Prometheus configuration elsewhere.
func ruleFilePath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestGroupingsKeepTheAccount: a queue is its account, region and name (staging and prod may both
// hold tool-calls in us-east-1), so every by or on clause of the rules and the dashboard that
// keeps queue keeps account too, and a dashboard query of one queue by name groups by account:
// otherwise two accounts' queues merge into one alert or one line. toolq_peek_receives_total is
// the collector's, whose region is account/region with several accounts.
func TestGroupingsKeepTheAccount(t *testing.T) {
	t.Parallel()
	clause := regexp.MustCompile(`\b(by|on)\s*\(([^)]*)\)`)
	labels := func(list string) []string {
		var out []string
		for l := range strings.SplitSeq(list, ",") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	exprs := map[string]string{}
	for i, m := range regexp.MustCompile(`(?m)^\s*expr: (\|\n(?: {10,}.*\n)+|.*)`).FindAllStringSubmatch(readFile(t, rulesFile), -1) {
		exprs[fmt.Sprintf("%s expression %d", rulesFile, i+1)] = m[1]
	}
	if len(exprs) == 0 {
		t.Fatalf("%s: no expression found", rulesFile)
	}
	for name, q := range readDashboard(t).queries() {
		exprs[name] = q.Expr
	}
	for name, expr := range exprs {
		oneQueue := strings.Contains(expr, `queue="$queue"`) && !strings.Contains(expr, "toolq_peek_receives_total")
		for _, m := range clause.FindAllStringSubmatch(expr, -1) {
			ls := labels(m[2])
			if (slices.Contains(ls, "queue") || oneQueue) && !slices.Contains(ls, "account") {
				t.Errorf("%s: %s drops the account: %s", name, m[0], strings.TrimSpace(expr))
			}
		}
	}
}
