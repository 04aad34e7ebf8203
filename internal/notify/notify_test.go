package notify_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// webhookKey is the test webhook's signing key; its secret is written as Standard Webhooks do.
var webhookKey = []byte("an example key of thirty-two bytes!")

func webhookSecret() string { return "whsec_" + base64.StdEncoding.EncodeToString(webhookKey) }

// verifyStandardWebhook checks a request the way a receiver would, from the Standard Webhooks
// specification alone (not toolq's code): HMAC-SHA256 over "id.timestamp.body" with the decoded
// key, base64, one of the space-separated "v1," signatures, a timestamp within five minutes.
func verifyStandardWebhook(r received, secret string, now time.Time) error {
	id, ts, sigs := r.header.Get("webhook-id"), r.header.Get("webhook-timestamp"), r.header.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers: id %q timestamp %q signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || now.Sub(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("timestamp %q is not within 5 minutes of %v", ts, now)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "." + string(r.body)))
	want := mac.Sum(nil)
	for s := range strings.FieldsSeq(sigs) {
		version, b64, _ := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature of %q matches", sigs)
}

// TestWebhookSecretsAsTheDocsMakeThem: secrets made as docs/api.md says (whsec_ and the base64 of
// 32 random bytes: a "+" or a "/" in most of them, a "=" in all) go through --notify's parsing as
// they are, and every delivery signed with one verifies with a Standard Webhooks check written
// from the specification.
func TestWebhookSecretsAsTheDocsMakeThem(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	rng := rand.New(rand.NewChaCha8([32]byte{26}))
	var secrets []string
	var targets []notify.Target
	for i := range 12 {
		key := make([]byte, 32) // head -c 32 /dev/urandom
		for j := range key {
			key[j] = byte(rng.Uint32())
		}
		secret := "whsec_" + base64.StdEncoding.EncodeToString(key)
		secrets = append(secrets, secret)
		tg := w.target(t, "webhook", fmt.Sprintf("/hook-%d", i), fmt.Sprintf("name=bot-%d&secret=%s", i, secret))
		if tg.Secret != secret {
			t.Fatalf("secret %q parsed as %q", secret, tg.Secret)
		}
		targets = append(targets, tg)
	}
	joined := strings.Join(secrets, "")
	if !strings.Contains(joined, "+") || !strings.Contains(joined, "/") || !strings.Contains(joined, "=") {
		t.Fatalf("the secrets lack one of + / =: %v", secrets)
	}
	n := w.notifier(targets, nil)
	if _, err := n.SendTest(w.ctx, notify.TestRequest{By: "alice", Role: "operator"}); err != nil {
		t.Fatal(err)
	}
	w.must(n.Dispatch(w.ctx))
	for i, secret := range secrets {
		got := w.recv.requests(fmt.Sprintf("/hook-%d", i))
		if len(got) != 1 {
			t.Fatalf("target %d got %d requests", i, len(got))
		}
		if err := verifyStandardWebhook(got[0], secret, w.clock.Now()); err != nil {
			t.Errorf("secret %d (%s…): %v", i, secret[:10], err)
		}
		if i > 0 && verifyStandardWebhook(got[0], secrets[i-1], w.clock.Now()) == nil {
			t.Errorf("target %d's delivery verifies with another target's secret", i)
		}
	}
}

// webhookBody is what a webhook target receives.
type webhookBody struct {
	Type   string        `json:"type"`
	ID     string        `json:"id"`
	Target string        `json:"target"`
	Title  string        `json:"title"`
	URL    string        `json:"url"`
	Alerts []views.Alert `json:"alerts"`
}

// TestDeadLetterArrivalReachesSlackAndWebhook is the operational promise end to end on the real
// collector: tool calls of one MCP server fail into a DLQ, the attribute cycle sees them, the
// arrival waits for the sample that names them, and one Slack message (Block Kit: queue, count,
// top tools and servers, the oldest message's age, a link) and one signed webhook reach a real
// local receiver.
func TestDeadLetterArrivalReachesSlackAndWebhook(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("tool-calls", "tool-calls-dlq")
	n := w.notifier([]notify.Target{
		w.target(t, "slack", "/slack", "name=oncall"),
		w.target(t, "webhook", "/hook", "name=bot&secret="+webhookSecret()),
	}, nil)
	w.collect(true)
	if alerts, err := n.Check(w.ctx); err != nil || len(alerts) != 0 {
		t.Fatalf("first check of empty queues = %v, %v; want nothing", alerts, err)
	}

	w.deadLetter(src, "docs-legacy", 3)
	w.collect(false) // the attribute cycle sees the arrival; no sample yet
	if alerts, err := n.Check(w.ctx); err != nil || len(alerts) != 0 {
		t.Fatalf("before its sample the arrival is held; got %v, %v", alerts, err)
	}
	w.must(n.Dispatch(w.ctx))
	if got := len(w.recv.got); got != 0 {
		t.Fatalf("%d requests before the sample", got)
	}
	w.advance(time.Second)
	w.must(w.coll.PeekDue(w.ctx)) // a DLQ that filled since its empty sample is due at once
	alerts, err := n.Check(w.ctx)
	w.must(err)
	kinds := []views.AlertKind{}
	for _, a := range alerts {
		kinds = append(kinds, a.Kind)
	}
	if !slices.Contains(kinds, views.AlertDLQArrival) || !slices.Contains(kinds, views.AlertHealthChanged) {
		t.Fatalf("alerts = %v; want the arrival and the DLQ's health change together", kinds)
	}
	w.must(n.Dispatch(w.ctx))

	slack := w.recv.requests("/slack")
	hook := w.recv.requests("/hook")
	if len(slack) != 1 || len(hook) != 1 {
		t.Fatalf("slack got %d, webhook %d; want one message each", len(slack), len(hook))
	}
	if ct := slack[0].header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Slack Content-Type %q", ct)
	}
	msg := decodeSlack(t, slack[0].body)
	if msg.Text == "" || len(msg.Blocks) < 3 || msg.Blocks[0].Type != "header" || msg.Blocks[len(msg.Blocks)-1].Type != "context" {
		t.Errorf("Block Kit shape: text %q, blocks %+v", msg.Text, msg.Blocks)
	}
	var fields []string
	for _, b := range msg.Blocks {
		for _, f := range b.Fields {
			if f.Type != "mrkdwn" {
				t.Errorf("field of type %q", f.Type)
			}
			fields = append(fields, f.Text)
		}
	}
	for _, want := range []string{
		"*Queue*\n<https://toolq.example.com/queues/tool-calls-dlq|tool-calls-dlq>",
		"*New messages*\n3 (3 in the queue)",
		"*Top tools*\ncreate_document (3)",
		"*mcpServer*\ndocs-legacy (3)",
		"*Reasons*\nconnection_refused (3)",
	} {
		if !slices.Contains(fields, want) {
			t.Errorf("Slack fields lack %q: %q", want, fields)
		}
	}
	if !slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "*Oldest message*\n") && strings.HasSuffix(f, " old") }) {
		t.Errorf("Slack fields lack the oldest message's age: %q", fields)
	}
	if !strings.Contains(msg.allText(), "<https://toolq.example.com/queues/tool-calls-dlq|Open tool-calls-dlq in toolq>") {
		t.Errorf("no link to the queue:\n%s", msg.allText())
	}
	// The reasons come from the error dimension: one field says them.
	if slices.ContainsFunc(fields, func(f string) bool { return strings.HasPrefix(f, "*error*") }) {
		t.Errorf("the error dimension repeats the reasons: %q", fields)
	}
	if h := msg.header(); h != ":large_orange_circle: tool-calls-dlq: 2 alerts" {
		t.Errorf("header %q", h)
	}
	if twice := msg.saidTwice(); len(twice) > 0 {
		t.Errorf("said twice: %q\n%s", twice, msg.allText())
	}

	if err := verifyStandardWebhook(hook[0], webhookSecret(), w.clock.Now()); err != nil {
		t.Errorf("webhook signature: %v", err)
	}
	var body webhookBody
	if err := json.Unmarshal(hook[0].body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Type != "toolq.notification" || body.ID != hook[0].header.Get("webhook-id") || body.Target != "bot" || len(body.Alerts) < 2 {
		t.Fatalf("webhook body: %+v", body)
	}
	var arrival *views.Alert
	for i, a := range body.Alerts {
		if a.Kind == views.AlertDLQArrival {
			arrival = &body.Alerts[i]
		}
	}
	if arrival == nil || arrival.Arrival == nil || arrival.Arrival.New != 3 || !arrival.Arrival.SampleCovers ||
		arrival.URL != "https://toolq.example.com/queues/tool-calls-dlq" || arrival.Queue != "tool-calls-dlq" {
		t.Fatalf("arrival = %+v", arrival)
	}
	if d := arrival.Arrival.Triage.Dimensions; len(d) == 0 || d[0].Name != "mcpServer" || d[0].Values[0].Value != "docs-legacy" || d[0].Values[0].Count != 3 {
		t.Errorf("the arrival's servers = %+v", d)
	}
	// A tampered body fails the receiver's check.
	tampered := hook[0]
	tampered.body = append([]byte{}, tampered.body...)
	tampered.body[10] ^= 1
	if verifyStandardWebhook(tampered, webhookSecret(), w.clock.Now()) == nil {
		t.Error("a tampered body verifies")
	}

	// Nothing more to say: no second message.
	w.advance(10 * time.Minute)
	w.collect(true)
	_, err = n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
	if got := len(w.recv.got); got != 2 {
		t.Errorf("%d requests after a quiet check; want the 2 of the arrival", got)
	}
}

// TestSlackSaysEachThingOnce: a message of one alert is its header alone, unless the header had to
// cut the alert's line short; then the line follows in full.
func TestSlackSaysEachThingOnce(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, by  string
		wantLines int
	}{
		{"a short title", "alice", 0},
		{"a title longer than a header", strings.Repeat("a-very-long-operator-name-", 8), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			n := w.notifier([]notify.Target{w.target(t, "slack", "/slack", "")}, nil)
			if _, err := n.SendTest(w.ctx, notify.TestRequest{By: tt.by, Role: "operator"}); err != nil {
				t.Fatal(err)
			}
			w.must(n.Dispatch(w.ctx))
			got := w.recv.requests("/slack")
			if len(got) != 1 {
				t.Fatalf("%d messages", len(got))
			}
			msg := decodeSlack(t, got[0].body)
			if !strings.Contains(msg.header(), "Test notification from toolq") {
				t.Errorf("header %q", msg.header())
			}
			lines := 0
			for _, b := range msg.Blocks {
				if b.Type == "section" && b.Text != nil && strings.Contains(b.Text.Text, "Test notification") {
					lines++
					if !strings.Contains(b.Text.Text, tt.by) {
						t.Errorf("the line does not say the whole title: %q", b.Text.Text)
					}
				}
			}
			if lines != tt.wantLines {
				t.Errorf("%d lines repeat the alert; want %d:\n%s", lines, tt.wantLines, msg.allText())
			}
		})
	}
}

// TestSlackMessagesAreChatSafe: names of servers and tools come from messages; posted as they
// are, "<!channel>" would ping everyone and "<https://evil|x>" would hide a link.
func TestSlackMessagesAreChatSafe(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	src := w.pair("web-search", "web-search-dlq")
	n := w.notifier([]notify.Target{w.target(t, "slack", "/slack", "")}, nil)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)
	w.deadLetter(src, "<!channel> @here <https://evil.example|docs>", 2)
	w.collect(false)
	w.advance(time.Second)
	w.must(w.coll.PeekDue(w.ctx))
	_, err = n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
	got := w.recv.requests("/slack")
	if len(got) != 1 {
		t.Fatalf("%d Slack messages", len(got))
	}
	text := decodeSlack(t, got[0].body).allText()
	for _, bad := range []string{"<!channel>", "@here", "<https://evil"} {
		if strings.Contains(text, bad) {
			t.Errorf("the Slack message holds %q:\n%s", bad, text)
		}
	}
	if !strings.Contains(text, "‹!channel›") {
		t.Errorf("the server's name is not shown at all:\n%s", text)
	}
}

// TestRestartNeitherLosesNorRepeats stops the dashboard between an alert and its delivery, at
// each step of the way, and starts it again on the same database: exactly one notification
// reaches the target.
func TestRestartNeitherLosesNorRepeats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// before runs on the first notifier after the alert was raised: how far it got.
		before func(w *world, n *notify.Service)
		fails  int // the receiver's first answers that are 503
	}{
		{name: "after the alert was raised", before: func(*world, *notify.Service) {}},
		{name: "after a delivery failed", before: func(w *world, n *notify.Service) { w.must(n.Dispatch(w.ctx)) }, fails: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.recv.status = func(n int) int {
				if n <= tt.fails {
					return http.StatusServiceUnavailable
				}
				return http.StatusOK
			}
			src := w.pair("tool-calls", "tool-calls-dlq")
			targets := []notify.Target{w.target(t, "webhook", "/hook", "secret="+webhookSecret())}
			n := w.notifier(targets, nil)
			w.collect(true)
			_, err := n.Check(w.ctx)
			w.must(err)
			w.deadLetter(src, "docs-legacy", 2)
			w.collect(true)
			alerts, err := n.Check(w.ctx)
			if err != nil || len(alerts) == 0 {
				t.Fatalf("no alert: %v", err)
			}
			tt.before(w, n)

			// The process ends here; a new one opens the same database.
			w.store.Close()
			w.open()
			n = w.notifier(targets, nil)
			for range 5 {
				w.advance(30 * time.Second)
				again, err := n.Check(w.ctx)
				w.must(err)
				if len(again) != 0 {
					t.Errorf("after the restart the detector raised %d alerts again", len(again))
				}
				w.must(n.Dispatch(w.ctx))
			}
			got := w.recv.requests("/hook")
			if len(got) != tt.fails+1 {
				t.Fatalf("the receiver got %d requests; want %d failed and one delivered", len(got), tt.fails)
			}
			ids := map[string]bool{}
			for _, r := range got {
				ids[r.header.Get("webhook-id")] = true
				if err := verifyStandardWebhook(r, webhookSecret(), w.clock.Now()); err != nil {
					t.Error(err)
				}
			}
			if len(ids) != 1 {
				t.Errorf("webhook ids %v: the retry is not the same message", ids)
			}
		})
	}
}

// TestBurstIsOneMessage: 500 messages reach a DLQ over five attribute cycles (an EventBridge
// target's DLQ, say, which receives them straight); the target gets one message saying 500, and
// what comes after within the interval waits to be summarised in the next.
func TestBurstIsOneMessage(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	out, err := w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("events-dlq"), Attributes: dlqAttributes})
	w.must(err)
	// A source names it as its DLQ, so that it is a dead-letter queue toolq samples.
	attrs, err := w.sqs.GetQueueAttributes(w.ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	w.must(err)
	_, err = w.sqs.CreateQueue(w.ctx, &sqs.CreateQueueInput{QueueName: aws.String("events"), Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, attrs.Attributes["QueueArn"])}})
	w.must(err)
	n := w.notifier([]notify.Target{w.target(t, "slack", "/slack", "")}, nil)
	w.collect(true)
	_, err = n.Check(w.ctx)
	w.must(err)

	send := func(count int, server string) {
		for i := 0; i < count; i += 10 {
			var batch []types.SendMessageBatchRequestEntry
			for j := range 10 {
				batch = append(batch, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)),
					MessageBody:       aws.String(fmt.Sprintf(`{"toolName":"fetch_url","n":%d}`, i+j)),
					MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String(server)}}})
			}
			_, err := w.sqs.SendMessageBatch(w.ctx, &sqs.SendMessageBatchInput{QueueUrl: out.QueueUrl, Entries: batch})
			w.must(err)
		}
	}
	for range 5 {
		send(100, "research")
		w.advance(5 * time.Second)
		w.collect(false)
		_, err := n.Check(w.ctx)
		w.must(err)
		w.must(n.Dispatch(w.ctx))
	}
	w.must(w.coll.PeekDue(w.ctx))
	_, err = n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
	got := w.recv.requests("/slack")
	if len(got) != 1 {
		t.Fatalf("%d messages for a burst of 500; want one", len(got))
	}
	text := decodeSlack(t, got[0].body).allText()
	if !strings.Contains(text, "*New messages*\n500 (500 in the queue)") || !strings.Contains(text, "*mcpServer*\nresearch (500)") {
		t.Errorf("the message does not sum the burst:\n%s", text)
	}

	// Within the interval: 50 more arrive, and are only summarised once it has passed.
	send(50, "docs-legacy")
	w.advance(time.Minute)
	w.collect(true)
	_, err = n.Check(w.ctx)
	w.must(err)
	w.must(n.Dispatch(w.ctx))
	if got := len(w.recv.requests("/slack")); got != 1 {
		t.Fatalf("%d messages within the interval; want still one", got)
	}
	w.advance(notify.DefaultInterval)
	w.must(n.Dispatch(w.ctx))
	got = w.recv.requests("/slack")
	if len(got) != 2 {
		t.Fatalf("%d messages after the interval; want the summary of what came meanwhile", len(got))
	}
	if text := decodeSlack(t, got[1].body).allText(); !strings.Contains(text, "*New messages*\n50 (550 in the queue)") {
		t.Errorf("the second message:\n%s", text)
	}
}

// TestDeliveryRetriesAndGivesUp: a target that answers 500 is tried again after a backoff that
// doubles; a 404 (a revoked Slack webhook) is given up at once. Every attempt is recorded, and
// the URL of the target appears in none of them.
func TestDeliveryRetriesAndGivesUp(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.recv.status = func(n int) int {
		switch {
		case n <= 2:
			return http.StatusInternalServerError
		default:
			return http.StatusOK
		}
	}
	gone := w.target(t, "slack", "/services/T000/B000/SECRETPATH", "name=gone")
	n := w.notifier([]notify.Target{w.target(t, "webhook", "/flaky", "name=flaky"), gone}, func(o *notify.Options) {
		o.RetryBase = 10 * time.Second
	})
	// The gone target answers 404 from now on.
	status := w.recv.status
	w.recv.status = func(k int) int {
		w.recv.mu.Lock()
		path := w.recv.got[k-1].path
		w.recv.mu.Unlock()
		if strings.HasPrefix(path, "/services/") {
			return http.StatusNotFound
		}
		return status(len(w.recv.requests("/flaky")))
	}
	queued, err := n.SendTest(w.ctx, notify.TestRequest{By: "alice", Role: "operator"})
	if err != nil || !slices.Equal(queued, []string{"flaky", "gone"}) {
		t.Fatalf("SendTest = %v, %v", queued, err)
	}
	w.must(n.Dispatch(w.ctx)) // flaky: 500; gone: 404, given up
	w.advance(9 * time.Second)
	w.must(n.Dispatch(w.ctx)) // not due yet
	if got := len(w.recv.requests("/flaky")); got != 1 {
		t.Fatalf("%d attempts before the backoff ended", got)
	}
	w.advance(2 * time.Second)
	w.must(n.Dispatch(w.ctx)) // 500 again: next in 20 s
	w.advance(19 * time.Second)
	w.must(n.Dispatch(w.ctx))
	w.advance(2 * time.Second)
	w.must(n.Dispatch(w.ctx)) // 200
	if got := len(w.recv.requests("/flaky")); got != 3 {
		t.Errorf("flaky target: %d attempts; want 3 (500, 500, 200)", got)
	}
	if got := len(w.recv.requests("/services/T000/B000/SECRETPATH")); got != 1 {
		t.Errorf("gone target: %d attempts; want 1 (a 404 is not retried)", got)
	}
	ns, err := w.views.Notifications(w.ctx, n.StartedAt())
	w.must(err)
	byName := map[string]views.NotificationTarget{}
	for _, tg := range ns.Targets {
		byName[tg.Name] = tg
	}
	if f := byName["flaky"]; f.Sent != 1 || f.Failed != 0 || f.LastFailure == nil || f.LastFailure.HTTPStatus != 500 {
		t.Errorf("flaky: %+v", f)
	}
	if g := byName["gone"]; g.Failed != 1 || g.Endpoint != w.recv.srv.URL || g.LastFailure == nil || g.LastFailure.Outcome != "failed" {
		t.Errorf("gone: %+v", g)
	}
	var outcomes []string
	for _, d := range ns.Deliveries {
		outcomes = append(outcomes, d.Target+":"+d.Outcome)
		if strings.Contains(d.Error, "SECRETPATH") {
			t.Errorf("a delivery error shows the webhook's URL: %q", d.Error)
		}
	}
	slices.Sort(outcomes)
	if want := []string{"flaky:retry", "flaky:retry", "flaky:sent", "gone:failed"}; !slices.Equal(outcomes, want) {
		t.Errorf("deliveries = %v; want %v", outcomes, want)
	}
	// Viewers may not send tests; every request is audited.
	if _, err := n.SendTest(w.ctx, notify.TestRequest{By: "bob", Role: "viewer"}); err != notify.ErrForbidden {
		t.Errorf("a viewer's test: %v", err)
	}
	entries, err := w.views.Audit(w.ctx, views.AuditQuery{})
	w.must(err)
	var audited []string
	for _, e := range entries {
		audited = append(audited, e.Actor+" "+e.Action+" "+e.Result)
	}
	if !slices.Equal(audited, []string{"bob notify.test refused", "alice notify.test accepted"}) {
		t.Errorf("audit = %v", audited)
	}
	// A target that is not configured: the refusal names those that are.
	_, err = n.SendTest(w.ctx, notify.TestRequest{By: "alice", Role: "operator", Target: "flakey"})
	var choice *choices.Error
	if !errors.Is(err, notify.ErrNoTarget) || !errors.As(err, &choice) || choice.Hint != "valid: flaky, gone" {
		t.Errorf("a test of an unknown target: %v", err)
	}
}
