package notify_test

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/sqsim"
)

// kindsOf lists the kinds of alerts, in order.
func kindsOf(alerts []views.Alert) []views.AlertKind {
	out := []views.AlertKind{}
	for _, a := range alerts {
		out = append(out, a.Kind)
	}
	return out
}

func find(alerts []views.Alert, kind views.AlertKind) *views.Alert {
	for i := range alerts {
		if alerts[i].Kind == kind {
			return &alerts[i]
		}
	}
	return nil
}

// TestRedriveAlertsSayWho: an operator's move task raises redrive.started with the operator's
// name from the audit log, and redrive.completed with the counts once SQS ends it.
func TestRedriveAlertsSayWho(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("tool-calls", "tool-calls-dlq")
	n := w.notifier(nil, nil)
	w.deadLetter(src, "docs-legacy", 4)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)

	act := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{"us-east-1": w.sqs}, Store: w.store, Publisher: w.bus, Now: w.clock.Now})
	if _, err := act.StartRedrive(w.ctx, actions.Actor{Name: "alice", Kind: auth.KindToken, Role: auth.RoleOperator},
		actions.StartRedriveRequest{Queue: "tool-calls-dlq"}); err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	w.must(w.coll.PollMoveTasks(w.ctx))
	alerts, err := n.Check(w.ctx)
	w.must(err)
	started := find(alerts, views.AlertRedriveStarted)
	if started == nil || started.Redrive.By != "alice" || started.Redrive.ToMove != 4 || !strings.Contains(started.Title, "started by alice: 4 messages to move") {
		t.Fatalf("alerts %v; started = %+v", kindsOf(alerts), started)
	}
	for range 10 {
		w.advance(time.Second)
	}
	w.collect(false)
	w.must(w.coll.PollMoveTasks(w.ctx))
	alerts, err = n.Check(w.ctx)
	w.must(err)
	done := find(alerts, views.AlertRedriveCompleted)
	if done == nil || done.Redrive.Moved != 4 || done.Severity != views.SeverityInfo {
		t.Fatalf("alerts %v; completed = %+v", kindsOf(alerts), done)
	}
	// The DLQ is empty again: its health is ok again, said once.
	if h := find(alerts, views.AlertHealthChanged); h == nil || !h.Resolved || h.Health.To != views.HealthOK {
		t.Errorf("health after the redrive: %+v", h)
	}
	again, err := n.Check(w.ctx)
	w.must(err)
	if len(again) != 0 {
		t.Errorf("a second check raised %v", kindsOf(again))
	}
}

// TestBlockedSessionAlert: a FIFO session whose head keeps failing is announced once, with the
// head's tool and MCP server from the opted-in source's sample.
func TestBlockedSessionAlert(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dlq, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("tool-calls-dlq.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "MessageRetentionPeriod": "1209600"}})
	w.must(err)
	arnOut, err := w.sqs.GetQueueAttributes(w.ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	w.must(err)
	src, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("tool-calls.fifo"), Attributes: map[string]string{
		"FifoQueue": "true", "RedrivePolicy": `{"deadLetterTargetArn":"` + arnOut.Attributes["QueueArn"] + `","maxReceiveCount":6}`}})
	w.must(err)
	for i, tool := range []string{"create_document", "append_section", "share_document"} {
		_, err := w.sqs.SendMessage(w.ctx, &sqs.SendMessageInput{QueueUrl: src.QueueUrl, MessageGroupId: aws.String("sess_blocked"),
			MessageDeduplicationId: aws.String(tool), MessageBody: aws.String(`{"toolName":"` + tool + `","sequenceNumber":` + string(rune('1'+i)) + `}`),
			MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String("docs-legacy")}}})
		w.must(err)
	}
	for range 2 { // a consumer fails the head twice
		_, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 1})
		w.must(err)
		w.advance(2 * time.Second)
	}
	w.coll, err = collector.New(collector.Options{Regions: []collector.Region{{Name: "us-east-1", SQS: w.sqs}}, Store: w.store, Now: w.clock.Now,
		Backfill: -1, Dimensions: testDimensions, Peek: collector.PeekOptions{Sources: []string{"tool-calls.fifo"}}})
	w.must(err)
	n := w.notifier(nil, nil)
	w.collect(true)
	alerts, err := n.Check(w.ctx)
	w.must(err)
	s := find(alerts, views.AlertSessionBlocked)
	if s == nil || s.Session.GroupID != "sess_blocked" || s.Session.ToolName != "create_document" || s.Session.Dimensions["mcpServer"] != "docs-legacy" || s.Session.Messages != 3 {
		t.Fatalf("alerts %v; blocked = %+v", kindsOf(alerts), s)
	}
	// The title counts the head's failures as the queue's health reason does ("head failed 2
	// times"): the consumer's two receives, not toolq's sample of it.
	if !strings.Contains(s.Title, "its head failed 2 times, 2 messages behind it") {
		t.Errorf("blocked session's title %q does not say the head failed 2 times", s.Title)
	}
	w.advance(10 * time.Minute)
	w.collect(true)
	again, err := n.Check(w.ctx)
	w.must(err)
	if find(again, views.AlertSessionBlocked) != nil {
		t.Error("the same blocked session was announced twice")
	}
}

// TestBlindRegionAlerts: when toolq cannot list a region's queues it says so once, names the
// failing call, and says when it sees the region again; meanwhile the queues' health changes
// are not news (their data is old).
func TestBlindRegionAlerts(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("web-search", "web-search-dlq")
	n := w.notifier(nil, nil)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)
	w.sim.SetFault("ListQueues", sqsim.Fault{ErrorRate: 1})
	w.sim.SetFault("GetQueueAttributes", sqsim.Fault{ErrorRate: 1})
	w.deadLetter(src, "research", 2)
	w.advance(time.Minute)
	_ = w.coll.Discover(w.ctx)
	_ = w.coll.CycleAttributes(w.ctx)
	alerts, err := n.Check(w.ctx)
	w.must(err)
	if got := kindsOf(alerts); !slices.Equal(got, []views.AlertKind{views.AlertRegionBlind}) {
		t.Fatalf("alerts while blind = %v; want region.blind alone", got)
	}
	if b := alerts[0]; b.Region != "us-east-1" || b.Sight == nil || b.Severity != views.SeverityCritical || !strings.Contains(b.Title, "ListQueues") {
		t.Errorf("blind alert = %+v", b)
	}
	w.sim.SetFault("ListQueues", sqsim.Fault{})
	w.sim.SetFault("GetQueueAttributes", sqsim.Fault{})
	w.advance(time.Minute)
	w.collect(true)
	alerts, err = n.Check(w.ctx)
	w.must(err)
	if v := find(alerts, views.AlertRegionVisible); v == nil || !v.Resolved {
		t.Errorf("after the outage: %v", kindsOf(alerts))
	}
	if find(alerts, views.AlertDLQArrival) == nil {
		t.Errorf("the arrival during the outage is not told once toolq sees again: %v", kindsOf(alerts))
	}
}

func TestParseTarget(t *testing.T) {
	t.Parallel()
	// A key whose base64 holds "+", "/" and "=", as half of all secrets made as docs/api.md says do.
	key := append([]byte{0xfb, 0xef, 0xff}, []byte("twenty-nine more bytes of key")...)
	secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
	if !strings.ContainsAny(secret, "+") || !strings.Contains(secret, "/") || !strings.HasSuffix(secret, "=") {
		t.Fatalf("the test's secret %q lacks one of + / =", secret)
	}
	escaped := strings.NewReplacer("+", "%2B", "/", "%2F", "=", "%3D").Replace(secret)
	tests := []struct {
		spec    string
		want    notify.Target
		wantErr string
	}{
		{spec: "slack:https://hooks.slack.com/services/T/B/X", want: notify.Target{Name: "slack-hooks.slack.com", Kind: notify.Slack, URL: "https://hooks.slack.com/services/T/B/X"}},
		{spec: "slack:https://hooks.slack.com/services/T/B/X#name=oncall&queue-prefix=tool-calls&kinds=dlq+redrive&min-severity=warning",
			want: notify.Target{Name: "oncall", Kind: notify.Slack, URL: "https://hooks.slack.com/services/T/B/X",
				Filter: notify.Filter{QueuePrefixes: []string{"tool-calls"}, Kinds: []string{"dlq", "redrive"}, MinSeverity: views.SeverityWarning}}},
		{spec: "webhook:https://bot.example/hook?x=1#secret=" + secret, want: notify.Target{Name: "webhook-bot.example", Kind: notify.Webhook, URL: "https://bot.example/hook?x=1", Secret: secret}},
		{spec: "webhook:https://bot.example/hook#secret=" + escaped + "&name=bot", want: notify.Target{Name: "bot", Kind: notify.Webhook, URL: "https://bot.example/hook", Secret: secret}},
		{spec: "webhook:https://bot.example/hook#queue-prefix=a&queue-prefix=b&secret=not+base64/just=text",
			want: notify.Target{Name: "webhook-bot.example", Kind: notify.Webhook, URL: "https://bot.example/hook", Secret: "not+base64/just=text",
				Filter: notify.Filter{QueuePrefixes: []string{"a", "b"}}}},
		{spec: "email:ops@example.com", wantErr: "slack:URL, webhook:URL, teams:URL or pagerduty:"},
		{spec: "slack:ftp://x", wantErr: "http(s) URL"},
		{spec: "slack:https://x#secret=s", wantErr: "only webhook targets are signed"},
		{spec: "webhook:https://x#kinds=dlq.arrival+nonsense", wantErr: "unknown alert kind"},
		{spec: "webhook:https://x#min-severity=urgent", wantErr: "min-severity"},
		{spec: "webhook:https://x#colour=red", wantErr: "unknown option"},
		{spec: "webhook:https://x#name=a%20b", wantErr: "target name"},
		{spec: "webhook:https://x#name=a&name=b", wantErr: "name given twice"},
		// What url.ParseQuery made of a "+": a space, and no longer base64.
		{spec: "webhook:https://x#secret=" + strings.ReplaceAll(secret, "+", " "), wantErr: "is not base64 at character 1 after whsec_"},
		{spec: "webhook:https://x#secret=whsec_abc", wantErr: "is not base64"},
		{spec: "webhook:https://x#secret=whsec_" + base64.StdEncoding.EncodeToString([]byte("sixteen bytes!!!")), wantErr: "decodes to 16 bytes"},
		{spec: "webhook:https://x#secret=whsec_%zz", wantErr: "not an escape"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := notify.ParseTarget(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v; want one about %q", err, tt.wantErr)
				}
				if _, given, ok := strings.Cut(tt.spec, "secret=whsec_"); ok && given != "" && strings.Contains(err.Error(), given) {
					t.Errorf("the error quotes the secret: %v", err)
				}
				return
			}
			if err != nil || got.Name != tt.want.Name || got.Kind != tt.want.Kind || got.URL != tt.want.URL || got.Secret != tt.want.Secret ||
				!slices.Equal(got.Filter.QueuePrefixes, tt.want.Filter.QueuePrefixes) || !slices.Equal(got.Filter.Kinds, tt.want.Filter.Kinds) ||
				got.Filter.MinSeverity != tt.want.Filter.MinSeverity {
				t.Errorf("ParseTarget = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if err := notify.CheckTargets([]notify.Target{{Name: "a"}, {Name: "a"}}); err == nil {
		t.Error("two targets of one name are accepted")
	}
	if err := notify.CheckTargets([]notify.Target{{Name: "a", Kind: notify.Webhook, Secret: "whsec_not base64"}}); err == nil {
		t.Error("a target made in code with a whsec_ secret that does not decode is accepted")
	}
}

func TestFilterMatch(t *testing.T) {
	t.Parallel()
	arrival := views.Alert{Kind: views.AlertDLQArrival, Severity: views.SeverityWarning, Queue: "tool-calls-dlq.fifo"}
	redrive := views.Alert{Kind: views.AlertRedriveStarted, Severity: views.SeverityInfo, Queue: "web-search-dlq"}
	blind := views.Alert{Kind: views.AlertRegionBlind, Severity: views.SeverityCritical, Region: "us-east-1"}
	tests := []struct {
		query string
		want  []bool // arrival, redrive, blind
	}{
		{"", []bool{true, true, true}},
		{"queue-prefix=tool-calls", []bool{true, false, true}}, // a blind region hides every queue
		{"kinds=redrive", []bool{false, true, false}},
		{"kinds=dlq.arrival,region", []bool{true, false, true}},
		{"min-severity=warning", []bool{true, false, true}},
		{"min-severity=critical", []bool{false, false, true}},
	}
	for _, tt := range tests {
		v, _ := url.ParseQuery(tt.query)
		f, err := notify.ParseFilter(v)
		if err != nil {
			t.Fatalf("%s: %v", tt.query, err)
		}
		got := []bool{f.Match(arrival), f.Match(redrive), f.Match(blind)}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%q: %v; want %v (%s)", tt.query, got, tt.want, f)
		}
	}
}

// TestDiscardAlert: a discard raises discard alerts, not redrive ones: when it starts, with who
// asked, and when it ends, with what it kept in the archive.
func TestDiscardAlert(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("tool-calls", "tool-calls-dlq")
	n := w.notifier(nil, nil)
	w.deadLetter(src, "docs-legacy", 3)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)

	act := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{"us-east-1": w.sqs}, Store: w.store, Publisher: w.bus, Now: w.clock.Now})
	sel := engine.Selection{Q: "docs-legacy"}
	if _, err := act.StartRedrive(w.ctx, actions.Actor{Name: "alice", Kind: auth.KindToken, Role: auth.RoleOperator},
		actions.StartRedriveRequest{Queue: "tool-calls-dlq", Selection: &sel, Discard: true}); err != nil {
		t.Fatalf("a discard's start: %v", err)
	}
	alerts, err := n.Check(w.ctx)
	w.must(err)
	started := find(alerts, views.AlertDiscard)
	if started == nil || find(alerts, views.AlertRedriveStarted) != nil || started.Redrive.By != "alice" || !strings.Contains(started.Title, "archive started by alice") {
		t.Fatalf("alerts %v; discard = %+v", kindsOf(alerts), started)
	}
}
