package views

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// adviceQueue is a queue with the attributes toolq reads, for the rules' facts.
func adviceQueue(name string, attrs map[string]string) store.Queue {
	q := store.Queue{
		ID: 1, Region: "us-east-1", Name: name, ARN: account + name, URL: "https://sqs.us-east-1.amazonaws.com/123456789012/" + name,
		FIFO: strings.HasSuffix(name, ".fifo"), AttributesAt: now, FirstSeen: now.Add(-time.Hour),
		Attributes: map[string]string{"VisibilityTimeout": "360", "MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "20"},
	}
	for k, v := range attrs {
		q.Attributes[k] = v
	}
	return q
}

// withDLQ gives q a RedrivePolicy to dlq with maxReceiveCount n.
func withDLQ(q store.Queue, dlq string, n int) store.Queue {
	q.Attributes["RedrivePolicy"] = `{"deadLetterTargetArn":"` + account + dlq + `","maxReceiveCount":` + itoa(n) + `}`
	q.DeadLetterTargetARN, q.MaxReceiveCount = account+dlq, n
	return q
}

func itoa(n int) string { return strconv.Itoa(n) }

// asDLQ makes q the dead-letter queue of src.
func asDLQ(q store.Queue, src string) store.Queue {
	q.SourceARNs = []string{account + src}
	return q
}

func mapping(mod func(*store.EventSourceMapping)) store.EventSourceMapping {
	m := store.EventSourceMapping{UUID: "u-1", FunctionARN: "arn:aws:lambda:us-east-1:123456789012:function:worker", State: "Enabled",
		BatchSize: 10, ReportBatchItemFailures: true, MaximumConcurrency: 10, FunctionTimeoutSeconds: 30, LastProcessingResult: "OK"}
	if mod != nil {
		mod(&m)
	}
	return m
}

func feed(mod func(*store.EventBridgeTarget)) store.EventBridgeTarget {
	t := store.EventBridgeTarget{BusName: "mcp", RuleName: "tool-call-completed", RuleARN: "arn:aws:events:us-east-1:123456789012:rule/mcp/tool-call-completed",
		RuleState: "ENABLED", TargetID: "audit", TargetARN: account + "audit", DeadLetterARN: account + "audit-dlq", MaxEventAgeSeconds: 3600, MaxRetryAttempts: 3}
	if mod != nil {
		mod(&t)
	}
	return t
}

func alarm(metric, state string) store.QueueAlarm {
	return store.QueueAlarm{AlarmName: "dlq-depth", MetricName: metric, State: state, StateUpdatedAt: now.Add(-time.Minute)}
}

// TestAdviceRules checks each rule on the facts that break it (it fires, and no other rule does)
// and on the facts that follow it (it clears).
func TestAdviceRules(t *testing.T) {
	t.Parallel()
	good := withDLQ(adviceQueue("web-search", nil), "web-search-dlq", 3)
	goodDLQ := asDLQ(adviceQueue("web-search-dlq", map[string]string{"MessageRetentionPeriod": "1209600"}), "web-search")
	dlqAlarmed := func(f adviceFacts) adviceFacts {
		f.AlarmsRead, f.Alarms = true, []store.QueueAlarm{alarm("ApproximateNumberOfMessagesVisible", "OK")}
		return f
	}
	hot := &store.Sample{ApproxVisible: 100, Seen: 20}
	tests := []struct {
		rule          string
		fires, clears adviceFacts
		wantFinding   string
		wantFix       string
	}{
		{"no-dlq",
			adviceFacts{Queue: adviceQueue("notifications", nil)}, adviceFacts{Queue: good},
			"no dead-letter queue", "aws sqs create-queue --queue-name notifications-dlq"},
		{"dlq-retention-not-longer",
			adviceFacts{Queue: asDLQ(adviceQueue("exports-dlq", map[string]string{"MessageRetentionPeriod": "3600"}), "web-search"), Sources: []store.Queue{good}, AlarmsRead: true, Alarms: []store.QueueAlarm{alarm("ApproximateNumberOfMessagesVisible", "OK")}},
			dlqAlarmed(adviceFacts{Queue: goodDLQ, Sources: []store.Queue{good}}),
			"keeps messages 1 h, not longer than source web-search's 4 d", "MessageRetentionPeriod=1209600"},
		{"redrives-bounce-back",
			dlqAlarmed(adviceFacts{Queue: goodDLQ, Sources: []store.Queue{good}, Redrives: []Redrive{
				bounced(7, 0.8, true), bounced(6, 0.2, false)}}),
			dlqAlarmed(adviceFacts{Queue: goodDLQ, Sources: []store.Queue{good}, Redrives: []Redrive{
				{ID: 8, Running: true}, bounced(7, 0.2, false), bounced(6, 0.8, true)}}),
			"its last redrive (2026-11-30 12:00 UTC) bounced 80% of what toolq knew it moved: 10 moved · 8 back; 1 of its last 2 redrives bounced most of theirs",
			`/api/v1/queues/web-search-dlq/redrives/7`},
		{"max-receive-count-1",
			adviceFacts{Queue: withDLQ(adviceQueue("web-search", nil), "web-search-dlq", 1)}, adviceFacts{Queue: good},
			"maxReceiveCount is 1", `\"maxReceiveCount\":\"3\"`},
		{"max-receive-count-high",
			adviceFacts{Queue: withDLQ(adviceQueue("web-search", nil), "web-search-dlq", 12)}, adviceFacts{Queue: withDLQ(adviceQueue("web-search", nil), "web-search-dlq", 9)},
			"maxReceiveCount is 12", `\"maxReceiveCount\":\"5\"`},
		{"fifo-dlq-not-fifo",
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", nil), "calls-dlq", 3)}, adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", nil), "calls-dlq.fifo", 3)},
			"its dead-letter queue calls-dlq is a standard queue", "--queue-name calls-dlq.fifo"},
		{"fifo-high-throughput-half",
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perQueue"}), "calls-dlq.fifo", 3)},
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", map[string]string{"DeduplicationScope": "messageGroup", "FifoThroughputLimit": "perMessageGroupId"}), "calls-dlq.fifo", 3)},
			"DeduplicationScope is messageGroup but FifoThroughputLimit is perQueue", "DeduplicationScope=messageGroup,FifoThroughputLimit=perMessageGroupId"},
		{"content-dedup-changing-body",
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", map[string]string{"ContentBasedDeduplication": "true"}), "calls-dlq.fifo", 3),
				Bodies: []string{`{"toolCallId":"tc_1","meta":{"requestId":"r-9"},"sentAt":1764460000000}`, "not json"}},
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", map[string]string{"ContentBasedDeduplication": "true"}), "calls-dlq.fifo", 3),
				Bodies: []string{`{"toolCallId":"tc_1","toolName":"create_document"}`}},
			"sampled bodies carry requestId, sentAt", "ContentBasedDeduplication=false"},
		{"short-polling",
			adviceFacts{Now: now, Queue: withDLQ(adviceQueue("web-search", map[string]string{"ReceiveMessageWaitTimeSeconds": "0"}), "web-search-dlq", 3),
				EmptyReceives: []store.MetricPoint{{At: now.Add(-2 * time.Minute), Period: 60, Value: 95}, {At: now.Add(-time.Minute), Period: 60, Value: 105}}},
			adviceFacts{Now: now, Queue: withDLQ(adviceQueue("web-search", map[string]string{"ReceiveMessageWaitTimeSeconds": "0"}), "web-search-dlq", 3),
				EmptyReceives: []store.MetricPoint{{At: now.Add(-time.Minute), Period: 60, Value: 3}}},
			"100 empty receives a minute (144,000 a day)", "ReceiveMessageWaitTimeSeconds=20"},
		{"dlq-no-alarm",
			adviceFacts{Queue: goodDLQ, AlarmsRead: true}, dlqAlarmed(adviceFacts{Queue: goodDLQ}),
			"no CloudWatch alarm", "put-metric-alarm --alarm-name web-search-dlq-depth"},
		{"dlq-alarm-misses-moves",
			adviceFacts{Queue: goodDLQ, AlarmsRead: true, Alarms: []store.QueueAlarm{alarm("NumberOfMessagesSent", "OK")}}, dlqAlarmed(adviceFacts{Queue: goodDLQ}),
			"only depth alarm watches NumberOfMessagesSent", "ApproximateNumberOfMessagesVisible"},
		{"alarm-firing",
			adviceFacts{Queue: goodDLQ, AlarmsRead: true, Alarms: []store.QueueAlarm{alarm("ApproximateNumberOfMessagesVisible", "ALARM")}}, dlqAlarmed(adviceFacts{Queue: goodDLQ}),
			"alarm dlq-depth is in ALARM since Mar 1 11:59 UTC", "describe-alarm-history --alarm-name dlq-depth"},
		{"inflight-near-limit",
			adviceFacts{Queue: good, Latest: &store.AttributeSample{InFlight: 100_000}}, adviceFacts{Queue: good, Latest: &store.AttributeSample{InFlight: 90_000}},
			"100,000 messages in flight, 83% of the 120,000 limit", "ApproximateNumberOfMessagesNotVisible"},
		{"hot-fifo-groups",
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", nil), "calls-dlq.fifo", 3), Sample: hot,
				Groups: []store.GroupBacklog{{GroupID: "sess_hot", Messages: 10}, {GroupID: "sess_a", Messages: 4}, {GroupID: "sess_b", Messages: 3}, {GroupID: "sess_c", Messages: 3}}},
			adviceFacts{Queue: withDLQ(adviceQueue("calls.fifo", nil), "calls-dlq.fifo", 3), Sample: &store.Sample{ApproxVisible: 40, Seen: 40},
				Groups: []store.GroupBacklog{{GroupID: "a", Messages: 5}, {GroupID: "b", Messages: 5}, {GroupID: "c", Messages: 5}, {GroupID: "d", Messages: 5}, {GroupID: "e", Messages: 5}, {GroupID: "f", Messages: 5}, {GroupID: "g", Messages: 5}, {GroupID: "h", Messages: 5}}},
			"3 groups hold about 97 of its 100 visible messages (sess_hot, sess_a, sess_b)", "--message-group-id"},
		{"esm-no-batch-item-failures",
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.ReportBatchItemFailures = false })}},
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.ReportBatchItemFailures, m.BatchSize = false, 1 })}},
			"worker's mapping takes batches of 10 without ReportBatchItemFailures", "--function-response-types ReportBatchItemFailures"},
		{"esm-no-maximum-concurrency",
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.MaximumConcurrency = 0 })}},
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(nil)}},
			"worker's mapping has no MaximumConcurrency", "--scaling-config MaximumConcurrency=10"},
		{"visibility-below-6x-lambda-timeout",
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.FunctionTimeoutSeconds = 90 })}},
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.FunctionTimeoutSeconds = 60 })}},
			"VisibilityTimeout 360 s is less than 6× worker's timeout of 90 s", "VisibilityTimeout=540"},
		{"esm-disabled",
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.State = "Disabled" })}},
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(nil)}},
			"worker's mapping is Disabled", "--uuid u-1 --enabled"},
		{"esm-failing",
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) {
				m.LastProcessingResult = "PROBLEM: Function not found: arn:aws:lambda:us-east-1:123456789012:function:worker"
			})}},
			adviceFacts{Queue: good, Mappings: []store.EventSourceMapping{mapping(nil)}},
			"reports PROBLEM: Function not found", "get-event-source-mapping --uuid u-1"},
		{"eventbridge-target-no-dlq",
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(func(t *store.EventBridgeTarget) { t.DeadLetterARN = "" })}},
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(nil)}},
			"rule tool-call-completed on bus mcp delivers here with no target dead-letter queue", `"DeadLetterConfig":{"Arn":"arn:aws:sqs:us-east-1:123456789012:web-search-events-dlq"}`},
		{"eventbridge-max-event-age-long",
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(func(t *store.EventBridgeTarget) { t.MaxEventAgeSeconds = 0 })}},
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(func(t *store.EventBridgeTarget) { t.MaxEventAgeSeconds = 21600 })}},
			"no maxEventAge (EventBridge's default, 24 h)", `"MaximumEventAgeInSeconds":3600`},
		{"eventbridge-default-bus",
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(func(t *store.EventBridgeTarget) { t.BusName = "default" })}},
			adviceFacts{Queue: good, Feeds: []store.EventBridgeTarget{feed(nil)}},
			"rule tool-call-completed delivering here is on the default bus", "new events.EventBus"},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.rule] = true
		t.Run(tt.rule, func(t *testing.T) {
			th := DefaultThresholds()
			got := advise(&tt.fires, &th, nil)
			var ids []string
			for _, a := range got {
				ids = append(ids, a.Rule)
			}
			if !slices.Equal(ids, []string{tt.rule}) {
				t.Fatalf("fires: advice %v, want [%s] alone", ids, tt.rule)
			}
			a := got[0]
			rule, _ := AdviceRuleByID(tt.rule)
			if !strings.Contains(a.Finding, tt.wantFinding) || !strings.Contains(a.Fix, tt.wantFix) || a.Why != rule.Why || a.Severity != rule.Severity || a.Source != rule.Source || a.SourceURL != rule.SourceURL {
				t.Errorf("advice = %+v\nwant finding with %q, fix with %q", a, tt.wantFinding, tt.wantFix)
			}
			if got := advise(&tt.clears, &th, nil); len(got) != 0 {
				t.Errorf("clears: advice %+v, want none", got)
			}
			if got := advise(&tt.fires, &th, map[string]bool{tt.rule: true}); len(got) != 0 {
				t.Errorf("turned off: advice %+v, want none", got)
			}
		})
	}
	for _, r := range AdviceRules {
		if !covered[r.ID] {
			t.Errorf("rule %s has no test", r.ID)
		}
	}
}

// TestAdviceSkipsWhatItCannotKnow: an unreadable DescribeAlarms leaves the alarm rules
// unchecked rather than claiming no alarm; a gone queue gets none; an EventBridge target's DLQ
// is a DLQ, not a source without one.
func TestAdviceSkipsWhatItCannotKnow(t *testing.T) {
	t.Parallel()
	th := DefaultThresholds()
	dlq := asDLQ(adviceQueue("web-search-dlq", map[string]string{"MessageRetentionPeriod": "1209600"}), "web-search")
	if got := advise(&adviceFacts{Queue: dlq, AlarmsRead: false}, &th, nil); len(got) != 0 {
		t.Errorf("alarms unreadable: %+v", got)
	}
	gone := adviceQueue("notifications", nil)
	gone.GoneAt = now
	if got := advise(&adviceFacts{Queue: gone}, &th, nil); len(got) != 0 {
		t.Errorf("gone queue: %+v", got)
	}
	eb := adviceQueue("audit-dlq", nil)
	eb.EventBridgeRuleARNs = []string{"arn:aws:events:us-east-1:123456789012:rule/mcp/r"}
	got := advise(&adviceFacts{Queue: eb, AlarmsRead: true}, &th, nil)
	if len(got) != 1 || got[0].Rule != "dlq-no-alarm" {
		t.Errorf("EventBridge DLQ: %+v, want dlq-no-alarm alone", got)
	}
	unread := adviceQueue("fresh", nil)
	unread.AttributesAt = time.Time{}
	if got := advise(&adviceFacts{Queue: unread}, &th, nil); len(got) != 0 {
		t.Errorf("attributes never read: %+v", got)
	}
}

func TestShellQuote(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"web-search":                "web-search",
		"arn:aws:sqs:us-east-1:1:q": "arn:aws:sqs:us-east-1:1:q",
		"https://sqs/1/q":           "https://sqs/1/q",
		"q; rm -rf /":               "'q; rm -rf /'",
		"it's":                      `'it'\''s'`,
		`{"RedrivePolicy":"x"}`:     `'{"RedrivePolicy":"x"}'`,
		"$(curl evil)":              "'$(curl evil)'",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestEventBridgeFailure(t *testing.T) {
	t.Parallel()
	attrs := []store.MessageAttribute{
		{Name: "ERROR_CODE", Value: "SDK_CLIENT_ERROR"}, {Name: "ERROR_MESSAGE", Value: "Message too long\u202e"},
		{Name: "RULE_ARN", Value: "arn:aws:events:us-east-1:1:rule/mcp/r"}, {Name: "TARGET_ARN", Value: account + "audit"},
		{Name: "RETRY_ATTEMPTS", Value: "0"},
	}
	f, ok := eventBridgeFailure(attrs)
	if !ok || f.Code != "SDK_CLIENT_ERROR" || f.TargetARN != account+"audit" || f.RetryAttempts == nil || *f.RetryAttempts != 0 || strings.ContainsRune(f.Message, '\u202e') {
		t.Errorf("eventBridgeFailure = %+v, %v", f, ok)
	}
	if f.Text() != "SDK_CLIENT_ERROR: "+f.Message || f.Source != "eventbridge" {
		t.Errorf("Text = %q, source %q", f.Text(), f.Source)
	}
	if _, ok := eventBridgeFailure([]store.MessageAttribute{{Name: "ERROR_CODE", Value: "E42"}}); ok {
		t.Errorf("a tool call's own ERROR_CODE attribute read as an EventBridge failure")
	}
}

// BenchmarkAdvise measures the advisor on one queue with every kind of fact: what it adds to
// each overview row.
func BenchmarkAdvise(b *testing.B) {
	q := withDLQ(adviceQueue("calls.fifo", map[string]string{"ContentBasedDeduplication": "true", "ReceiveMessageWaitTimeSeconds": "0"}), "calls-dlq", 12)
	f := adviceFacts{Now: now, Queue: q, AlarmsRead: true, Latest: &store.AttributeSample{InFlight: 100_000},
		Bodies:        []string{`{"toolCallId":"tc_1","sentAt":1}`, `{"toolCallId":"tc_2","meta":{"requestId":"r"}}`},
		EmptyReceives: []store.MetricPoint{{At: now.Add(-time.Minute), Period: 60, Value: 100}},
		Mappings:      []store.EventSourceMapping{mapping(func(m *store.EventSourceMapping) { m.MaximumConcurrency = 0 })},
		Feeds:         []store.EventBridgeTarget{feed(func(t *store.EventBridgeTarget) { t.BusName = "default" })},
		Sample:        &store.Sample{ApproxVisible: 100, Seen: 20}, Groups: []store.GroupBacklog{{GroupID: "g", Messages: 10}}}
	th := DefaultThresholds()
	for b.Loop() {
		if len(advise(&f, &th, nil)) == 0 {
			b.Fatal("no advice")
		}
	}
}

// TestAdviceSourcesCiteAWS: each rule names its pattern in words a user knows and cites a page
// of AWS's documentation, never the project's own notes (the seeds, their numbering, DOMAIN.md).
func TestAdviceSourcesCiteAWS(t *testing.T) {
	t.Parallel()
	jargon := regexp.MustCompile(`(?i)seed|pattern \d|domain\.md|\(|\)`)
	for _, r := range AdviceRules {
		t.Run(r.ID, func(t *testing.T) {
			if r.Source == "" || jargon.MatchString(r.Source) {
				t.Errorf("source %q: want the pattern's name alone", r.Source)
			}
			u, err := url.Parse(r.SourceURL)
			if err != nil || u.Scheme != "https" || u.Host != "docs.aws.amazon.com" || !strings.HasSuffix(u.Path, ".html") {
				t.Errorf("sourceUrl %q: want a page of docs.aws.amazon.com", r.SourceURL)
			}
		})
	}
}

// TestShortPollingReadsHourlyCounters: at the collector's default cadence the empty receives
// arrive once an hour, each time the minutes since the last ask; fifty minutes after the newest
// batch the rule still reads its newest quarter of an hour, and it reads nothing older than two
// asks.
func TestShortPollingReadsHourlyCounters(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		newest time.Duration // how long before now the newest datapoint is
		fires  bool
	}{
		{"the newest batch fifty minutes old", 50 * time.Minute, true},
		{"the newest batch three hours old", 3 * time.Hour, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.queue("web-search-dlq")
			f.queue("web-search")
			f.attrs("web-search-dlq", "", 0, 1209600, now.Add(-5*time.Second), 0)
			q := f.ids["web-search"]
			f.must(f.store.SaveQueueAttributes(f.ctx, store.QueueAttributes{QueueID: q, At: now.Add(-5 * time.Second),
				Attributes: map[string]string{"MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "0",
					"RedrivePolicy": `{"deadLetterTargetArn":"` + account + `web-search-dlq","maxReceiveCount":3}`},
				DeadLetterTargetARN: account + "web-search-dlq", MaxReceiveCount: 3}))
			f.must(f.store.SetCostEstimate(f.ctx, store.CostEstimate{At: now, Cadences: store.Cadences{Counters: time.Hour, Attributes: 15 * time.Second}}))
			var points []store.MetricPoint
			for m := range 60 { // the hour before the newest, a minute a point
				points = append(points, store.MetricPoint{QueueID: q, Metric: "NumberOfEmptyReceives",
					At: now.Add(-tt.newest - time.Duration(m)*time.Minute), Period: 60, Value: 100})
			}
			f.must(f.store.UpsertMetricPoints(f.ctx, points))
			list, err := f.svc.Advice(f.ctx, AdviceQuery{Rule: "short-polling"})
			f.must(err)
			if fired := len(list.Advice) == 1 && list.Advice[0].Queue == "web-search"; fired != tt.fires {
				t.Errorf("short-polling fired: %+v; want %v", list.Advice, tt.fires)
			}
		})
	}
}

// TestShortPollingIsOneRead: the snapshot reads every short-polling queue's empty receives in
// one statement, so a build runs as many statements with 40 such queues as with 2 (it once ran
// one MetricSeries a queue: 1,000 statements a build at 1,000 queues), and the rule still fires
// on each of them.
func TestShortPollingIsOneRead(t *testing.T) {
	t.Parallel()
	statements := map[int]int{}
	for _, n := range []int{2, 40} {
		f := newFixture(t)
		f.must(f.store.SetCostEstimate(f.ctx, store.CostEstimate{At: now, Cadences: store.Cadences{Counters: time.Hour, Attributes: 15 * time.Second}}))
		var points []store.MetricPoint
		for i := range n {
			q := f.queue(fmt.Sprintf("poller-%02d", i))
			f.must(f.store.SaveQueueAttributes(f.ctx, store.QueueAttributes{QueueID: q, At: now.Add(-5 * time.Second),
				Attributes: map[string]string{"MessageRetentionPeriod": "345600", "ReceiveMessageWaitTimeSeconds": "0"}}))
			for m := range 15 {
				points = append(points, store.MetricPoint{QueueID: q, Metric: "NumberOfEmptyReceives",
					At: now.Add(-time.Duration(m+1) * time.Minute), Period: 60, Value: 100})
			}
		}
		f.must(f.store.UpsertMetricPoints(f.ctx, points))
		var mu sync.Mutex
		f.store.Trace(func(st store.Statement) {
			mu.Lock()
			defer mu.Unlock()
			statements[n]++
			if slices.Contains(st.Methods, "MetricSeries") {
				t.Errorf("the snapshot read a queue's series alone: %v", st.Methods)
			}
		})
		list, err := f.svc.Advice(f.ctx, AdviceQuery{Rule: "short-polling"})
		f.store.Trace(nil)
		f.must(err)
		if len(list.Advice) != n {
			t.Errorf("short-polling fired on %d of %d queues", len(list.Advice), n)
		}
	}
	if statements[40] != statements[2] {
		t.Errorf("a snapshot build ran %d statements with 2 short-polling queues, %d with 40; want as many", statements[2], statements[40])
	}
}

// bounced is an ended redrive whose outcome bounced share of 10 remembered messages.
func bounced(id int64, share float64, most bool) Redrive {
	return Redrive{ID: id, Status: "COMPLETED", StartedAt: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Outcome: &RedriveOutcome{
		State: OutcomeSettled, Remembered: 10, Moved: 10, BouncedBack: int(share * 10), BouncedShare: share, MostBounced: most,
		Line: fmt.Sprintf("10 moved · %d back", int(share*10))}}
}
