package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// promqlUse is what a PromQL expression asks of the series: the metrics its selectors name, with
// the labels each one's matchers name, and the labels it groups or matches by (by, without, on,
// ignoring, group_left, group_right).
type promqlUse struct {
	selectors []selectorUse
	grouping  []string
}

// selectorUse is one vector selector: its metric name and the labels of its matchers.
type selectorUse struct {
	metric string
	labels []string
}

// promqlToken is one lexical token of PromQL: an identifier, a string (its text unquoted), a
// number or duration, or punctuation.
type promqlToken struct {
	kind byte // 'i' identifier, 's' string, 'n' number or duration, 'p' punctuation
	text string
}

// The keywords that are not metric names where an identifier stands alone.
var promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"}

// The keywords followed by a parenthesised list of labels.
var promqlGrouping = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}

// Functions whose string arguments name labels, which this reader does not follow.
var promqlLabelFunctions = []string{"label_replace", "label_join", "count_values"}

// usePromQL reads what expr asks of the series. It is a reader of what the shipped rules and
// panels write, not a PromQL parser: Prometheus itself (promtool, the server) checks that they
// parse; this finds the names in them. It refuses what it cannot follow (a selector without a
// metric name, a function that takes label names as strings, a variable left in) rather than
// let a name through unchecked.
func usePromQL(expr string) (promqlUse, error) {
	toks, err := lexPromQL(expr)
	if err != nil {
		return promqlUse{}, err
	}
	var use promqlUse
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		next := func(text string) bool { return i+1 < len(toks) && toks[i+1].kind == 'p' && toks[i+1].text == text }
		switch {
		case t.kind == 'p' && t.text == "{":
			return promqlUse{}, fmt.Errorf("a selector without a metric name at token %d: name the metric", i)
		case t.kind == 'p' && t.text == "[":
			for i < len(toks) && toks[i].text != "]" { // a range or a subquery: durations only
				i++
			}
		case t.kind != 'i':
		case slices.Contains(promqlGrouping, strings.ToLower(t.text)):
			if next("(") {
				var labels []string
				if labels, i, err = readLabelList(toks, i+2); err != nil {
					return promqlUse{}, err
				}
				use.grouping = append(use.grouping, labels...)
			}
		case i+1 < len(toks) && slices.Contains([]string{"by", "without"}, strings.ToLower(toks[i+1].text)):
			// An aggregation with its grouping first: sum by (a) (x).
		case next("("):
			if slices.Contains(promqlLabelFunctions, t.text) {
				return promqlUse{}, fmt.Errorf("%s names labels in strings, which this check does not read: extend it first", t.text)
			}
		case slices.Contains(promqlKeywords, strings.ToLower(t.text)):
		default:
			sel := selectorUse{metric: t.text}
			if next("{") {
				if sel.labels, i, err = readMatchers(toks, i+2); err != nil {
					return promqlUse{}, err
				}
			}
			use.selectors = append(use.selectors, sel)
		}
	}
	return use, nil
}

// readLabelList reads `a, b)` from toks[i:], returning the labels and the index of the `)`.
func readLabelList(toks []promqlToken, i int) ([]string, int, error) {
	var labels []string
	for ; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.kind == 'p' && t.text == ")":
			return labels, i, nil
		case t.kind == 'i':
			labels = append(labels, t.text)
		case t.kind != 'p' || t.text != ",":
			return nil, i, fmt.Errorf("unexpected %q in a label list", t.text)
		}
	}
	return nil, i, fmt.Errorf("a label list that is never closed")
}

// readMatchers reads `a="x", b=~"y"}` from toks[i:], returning the labels and the index of the
// `}`.
func readMatchers(toks []promqlToken, i int) ([]string, int, error) {
	var labels []string
	for ; i < len(toks); i++ {
		t := toks[i]
		switch {
		case t.kind == 'p' && t.text == "}":
			return labels, i, nil
		case t.kind == 'p' && t.text == ",":
		case t.kind == 'i' && i+2 < len(toks) && slices.Contains([]string{"=", "!=", "=~", "!~"}, toks[i+1].text) && toks[i+2].kind == 's':
			if t.text == "__name__" {
				return nil, i, fmt.Errorf("a matcher on __name__: name the metric instead")
			}
			labels = append(labels, t.text)
			i += 2
		default:
			return nil, i, fmt.Errorf("unexpected %q in a selector's matchers", t.text)
		}
	}
	return nil, i, fmt.Errorf("a selector's matchers are never closed")
}

// lexPromQL splits expr into tokens; comments are dropped.
func lexPromQL(expr string) ([]promqlToken, error) {
	var toks []promqlToken
	rs := []rune(expr)
	for i := 0; i < len(rs); {
		r := rs[i]
		start := i
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '#':
			for i < len(rs) && rs[i] != '\n' {
				i++
			}
		case r == '"' || r == '\'' || r == '`':
			i++
			for i < len(rs) && rs[i] != r {
				if rs[i] == '\\' && r != '`' {
					i++
				}
				i++
			}
			if i >= len(rs) {
				return nil, fmt.Errorf("a string that is never closed at %d", start)
			}
			i++
			toks = append(toks, promqlToken{'s', string(rs[start+1 : i-1])})
		case unicode.IsDigit(r) || r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1]):
			for i < len(rs) && (unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i]) || rs[i] == '.') {
				i++
			}
			toks = append(toks, promqlToken{'n', string(rs[start:i])})
		case r == '_' || r == ':' || unicode.IsLetter(r):
			for i < len(rs) && (rs[i] == '_' || rs[i] == ':' || unicode.IsLetter(rs[i]) || unicode.IsDigit(rs[i])) {
				i++
			}
			toks = append(toks, promqlToken{'i', string(rs[start:i])})
		case strings.ContainsRune("=!<>", r) && i+1 < len(rs) && (rs[i+1] == '=' || rs[i+1] == '~'):
			i += 2
			toks = append(toks, promqlToken{'p', string(rs[start:i])})
		case strings.ContainsRune("(){}[],+-*/%^=<>@", r):
			i++
			toks = append(toks, promqlToken{'p', string(r)})
		default:
			return nil, fmt.Errorf("unexpected %q at %d (a dashboard variable left in?)", r, i)
		}
	}
	return toks, nil
}

// TestUsePromQL: the reader finds every metric and label of the expressions the rules and panels
// write, as people and Prometheus's own printer write them, and refuses what it cannot follow.
func TestUsePromQL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		expr      string
		selectors []selectorUse
		grouping  []string
		err       string
	}{
		{expr: `toolq_dlq_messages > 0`, selectors: []selectorUse{{metric: "toolq_dlq_messages"}}},
		{expr: `max by(queue, region) (toolq_dlq_messages{queue!="", region=~"us-.*"}) >= bool 2`,
			selectors: []selectorUse{{"toolq_dlq_messages", []string{"queue", "region"}}}, grouping: []string{"queue", "region"}},
		{expr: `sum(rate(toolq_aws_calls_total{outcome="ok"}[5m])) without (instance)`,
			selectors: []selectorUse{{"toolq_aws_calls_total", []string{"outcome"}}}, grouping: []string{"instance"}},
		{expr: `a:b:max > a:b:max offset 15m`, selectors: []selectorUse{{metric: "a:b:max"}, {metric: "a:b:max"}}},
		{expr: "(max by (q) (x) unless on (q, r) y) >= 300 # a comment naming z{w=\"1\"}",
			selectors: []selectorUse{{metric: "x"}, {metric: "y"}}, grouping: []string{"q", "q", "r"}},
		{expr: `x * on (a) group_left (b) y`, selectors: []selectorUse{{metric: "x"}, {metric: "y"}}, grouping: []string{"a", "b"}},
		{expr: `histogram_quantile(0.95, sum by (le, kind) (rate(h_bucket[1m:10s])))`,
			selectors: []selectorUse{{metric: "h_bucket"}}, grouping: []string{"le", "kind"}},
		{expr: `time() - max(t{l="a \"quoted\" }"}) > Inf`, selectors: []selectorUse{{"t", []string{"l"}}}},
		{expr: `absent(toolq_build_info)`, selectors: []selectorUse{{metric: "toolq_build_info"}}},
		{expr: `{__name__="x"}`, err: "without a metric name"},
		{expr: `x{__name__="y"}`, err: "__name__"},
		{expr: `label_replace(x, "a", "$1", "b", "(.*)")`, err: "label_replace"},
		{expr: `x{queue="$queue"}[$__rate_interval]`, err: "variable"},
		{expr: `x{queue="a"`, err: "never closed"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := usePromQL(tc.expr)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one saying %q", err, tc.err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if fmt.Sprint(got.selectors) != fmt.Sprint(tc.selectors) || fmt.Sprint(got.grouping) != fmt.Sprint(tc.grouping) {
				t.Errorf("got %v grouped by %v; want %v grouped by %v", got.selectors, got.grouping, tc.selectors, tc.grouping)
			}
		})
	}
}
