package notify_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/internal/views"
)

// pdKey is the tests' routing key: 32 hex digits, as a service integration's.
const pdKey = "0123456789abcdef0123456789abcdef"

// pdEvent is an Events API v2 event as PagerDuty's documentation publishes its schema
// (developer.pagerduty.com/api-reference/368ae3d938c9e-send-an-event-to-pager-duty).
type pdEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Payload     *struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      string         `json:"severity"`
		Timestamp     string         `json:"timestamp"`
		Component     string         `json:"component"`
		Group         string         `json:"group"`
		Class         string         `json:"class"`
		CustomDetails map[string]any `json:"custom_details"`
	} `json:"payload"`
	Client    string `json:"client"`
	ClientURL string `json:"client_url"`
	Links     []struct {
		Href string `json:"href"`
		Text string `json:"text"`
	} `json:"links"`
	Images []any `json:"images"`
}

// checkEventsV2 checks an event against the Events API v2 schema, written from PagerDuty's
// documentation rather than toolq's code: only the schema's fields; a 32-character routing key;
// trigger, acknowledge or resolve; a dedup_key of at most 255 characters; a trigger's payload
// with a summary of 1 to 1,024 characters, a source, a severity of critical, error, warning or
// info and an ISO 8601 timestamp; links with an absolute href.
func checkEventsV2(body []byte) (pdEvent, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return pdEvent{}, fmt.Errorf("not a JSON object: %w", err)
	}
	for name := range fields {
		if !slices.Contains([]string{"routing_key", "event_action", "dedup_key", "payload", "client", "client_url", "links", "images"}, name) {
			return pdEvent{}, fmt.Errorf("field %q is not in the schema", name)
		}
	}
	var ev pdEvent
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ev); err != nil {
		return pdEvent{}, fmt.Errorf("does not decode as an event: %w", err)
	}
	switch {
	case len(ev.RoutingKey) != 32:
		return ev, fmt.Errorf("routing_key of %d characters", len(ev.RoutingKey))
	case !slices.Contains([]string{"trigger", "acknowledge", "resolve"}, ev.EventAction):
		return ev, fmt.Errorf("event_action %q", ev.EventAction)
	case len(ev.DedupKey) > 255 || (ev.EventAction != "trigger" && ev.DedupKey == ""):
		return ev, fmt.Errorf("dedup_key %q", ev.DedupKey)
	}
	for _, l := range ev.Links {
		if u, err := url.Parse(l.Href); err != nil || !u.IsAbs() {
			return ev, fmt.Errorf("link href %q is not an absolute URL", l.Href)
		}
	}
	if ev.EventAction != "trigger" {
		return ev, nil
	}
	p := ev.Payload
	switch {
	case p == nil:
		return ev, fmt.Errorf("a trigger without a payload")
	case p.Summary == "" || len([]rune(p.Summary)) > 1024 || len(p.Summary) > 1024:
		return ev, fmt.Errorf("summary of %d bytes", len(p.Summary))
	case p.Source == "":
		return ev, fmt.Errorf("no source")
	case !slices.Contains([]string{"critical", "error", "warning", "info"}, p.Severity):
		return ev, fmt.Errorf("severity %q", p.Severity)
	}
	if p.Timestamp != "" {
		if _, err := time.Parse(time.RFC3339Nano, p.Timestamp); err != nil {
			return ev, fmt.Errorf("timestamp %q is not ISO 8601: %w", p.Timestamp, err)
		}
	}
	return ev, nil
}

// pdReceiver plays PagerDuty's Events API: it checks every event against the schema (a bad one
// fails the test and is answered 400 as PagerDuty does), keeps the valid ones, and answers 202,
// or what status says for the nth request.
type pdReceiver struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	events []pdEvent
	posts  int
	status func(n int) int
}

func newPDReceiver(t *testing.T) *pdReceiver {
	r := &pdReceiver{t: t}
	r.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		ev, err := checkEventsV2(body)
		r.mu.Lock()
		r.posts++
		n := r.posts
		status := r.status
		r.mu.Unlock()
		rw.Header().Set("Content-Type", "application/json")
		if err != nil {
			r.t.Errorf("an event that is not of the Events v2 schema: %v\n%s", err, body)
			rw.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(rw, `{"status":"invalid event","message":"Event object is invalid","errors":[%q]}`, err.Error())
			return
		}
		if req.Method != http.MethodPost || req.URL.Path != "/v2/enqueue" || req.Header.Get("Content-Type") != "application/json" {
			r.t.Errorf("%s %s with Content-Type %q", req.Method, req.URL.Path, req.Header.Get("Content-Type"))
		}
		code := http.StatusAccepted
		if status != nil {
			code = status(n)
		}
		rw.WriteHeader(code)
		switch {
		case code == http.StatusAccepted:
			r.mu.Lock()
			r.events = append(r.events, ev)
			r.mu.Unlock()
			fmt.Fprintf(rw, `{"status":"success","message":"Event processed","dedup_key":%q}`, ev.DedupKey)
		case code == http.StatusTooManyRequests:
			fmt.Fprint(rw, `{"status":"throttle event","message":"Requests for this service are arriving too quickly.  Please retry later."}`)
		case code == http.StatusBadRequest:
			fmt.Fprintf(rw, `{"status":"invalid event","message":"Event object is invalid","errors":["'payload.summary' is missing or blank (routing key %s)"]}`, ev.RoutingKey)
		}
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// accepted returns the events PagerDuty took, in order.
func (r *pdReceiver) accepted() []pdEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// target is a pagerduty target posting to the receiver, its key from the environment.
func (r *pdReceiver) target(t *testing.T, options string) notify.Target {
	t.Helper()
	tg, err := notify.ParseTargetEnv("pagerduty:"+r.srv.URL+"/v2/enqueue#routing-key-env=PD_KEY&name=oncall"+options,
		func(name string) (string, bool) { return pdKey, name == "PD_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// byKey counts the accepted events of each dedup key: "trigger", "resolve" in order.
func byKey(events []pdEvent) map[string][]string {
	out := map[string][]string{}
	for _, e := range events {
		out[e.DedupKey] = append(out[e.DedupKey], e.EventAction)
	}
	return out
}

// drain plays a consumer that empties a queue: it receives and deletes every message.
func (w *world) drain(queue string) {
	w.t.Helper()
	u, err := w.sqs.GetQueueUrl(w.ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(queue)})
	w.must(err)
	for range 100 {
		out, err := w.sqs.ReceiveMessage(w.ctx, &sqs.ReceiveMessageInput{QueueUrl: u.QueueUrl, MaxNumberOfMessages: 10})
		w.must(err)
		if len(out.Messages) == 0 {
			return
		}
		for _, m := range out.Messages {
			_, err := w.sqs.DeleteMessage(w.ctx, &sqs.DeleteMessageInput{QueueUrl: u.QueueUrl, ReceiptHandle: m.ReceiptHandle})
			w.must(err)
		}
	}
	w.t.Fatalf("%s did not drain", queue)
}

// TestPagerDutyIncidentOpensUpdatesAndResolves: a DLQ arrival triggers one incident, later
// arrivals update it (the same dedup_key), and draining the DLQ resolves it; the dashboard
// restarts twice in between, after an alert was raised and before it was sent, and PagerDuty
// gets each event once. Every event is checked against the Events v2 schema.
func TestPagerDutyIncidentOpensUpdatesAndResolves(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	pd := newPDReceiver(t)
	targets := []notify.Target{pd.target(t, "")}
	src := w.pair("tool-calls", "tool-calls-dlq")
	n := w.notifier(targets, nil)
	w.collect(true)
	_, err := n.Check(w.ctx)
	w.must(err)

	// The first arrival: one incident for the DLQ (and one for its health, warning now).
	w.deadLetter(src, "docs-legacy", 3)
	w.sampleAndCheck(n)
	const dlqKey = "toolq/000000000000/us-east-1/tool-calls-dlq/dlq"
	events := pd.accepted()
	if got := byKey(events)[dlqKey]; !slices.Equal(got, []string{"trigger"}) {
		t.Fatalf("events of %s: %v; want one trigger (all: %v)", dlqKey, got, byKey(events))
	}
	first := events[slices.IndexFunc(events, func(e pdEvent) bool { return e.DedupKey == dlqKey })]
	p := first.Payload
	if p.Severity != "warning" || p.Component != "tool-calls-dlq" || p.Group != "000000000000/us-east-1" || p.Class != "dlq.arrival" ||
		p.Source != "arn:aws:sqs:us-east-1:000000000000:tool-calls-dlq" || !strings.Contains(p.Summary, "3 new messages in tool-calls-dlq") {
		t.Errorf("the trigger's payload: %+v", p)
	}
	if p.CustomDetails["topTools"] != "create_document (3)" || p.CustomDetails["mcpServer"] != "docs-legacy (3)" ||
		p.CustomDetails["topReasons"] != "connection_refused (3)" || p.CustomDetails["newMessages"] != float64(3) {
		t.Errorf("custom_details: %v", p.CustomDetails)
	}
	if len(first.Links) == 0 || first.Links[0].Href != "https://toolq.example.com/queues/tool-calls-dlq" || first.Client != "toolq" {
		t.Errorf("links %+v, client %q", first.Links, first.Client)
	}

	// More arrivals: raised, and the process ends before they are sent.
	w.advance(time.Minute)
	w.deadLetter(src, "docs-legacy", 2)
	w.collect(false)
	w.advance(time.Second)
	w.must(w.coll.PeekDue(w.ctx))
	alerts, err := n.Check(w.ctx) // and the process ends before Dispatch
	if err != nil || !slices.ContainsFunc(alerts, func(a views.Alert) bool { return a.Kind == views.AlertDLQArrival }) {
		t.Fatalf("the second arrival: %v, %v", kindsOf(alerts), err)
	}
	w.store.Close()
	w.open()
	n = w.notifier(targets, nil)
	w.must(n.Dispatch(w.ctx)) // a repeat within the interval waits to be summarised
	w.advance(notify.DefaultInterval)
	w.must(n.Dispatch(w.ctx))
	if got := byKey(pd.accepted())[dlqKey]; !slices.Equal(got, []string{"trigger", "trigger"}) {
		t.Fatalf("events of %s after the second arrival: %v; want the trigger and one update", dlqKey, got)
	}
	update := pd.accepted()[len(pd.accepted())-1]
	if update.DedupKey != dlqKey || !strings.Contains(update.Payload.Summary, "2 new messages") {
		t.Errorf("the update: %+v", update.Payload)
	}

	// The DLQ is drained: the incident resolves at once, whatever the interval; another
	// restart between the check and the delivery.
	w.drain("tool-calls-dlq")
	w.advance(time.Minute)
	w.collect(false)
	alerts, err = n.Check(w.ctx)
	if err != nil || !slices.ContainsFunc(alerts, func(a views.Alert) bool { return a.Kind == views.AlertDLQDrained && a.Resolved }) {
		t.Fatalf("the drain: %v, %v", kindsOf(alerts), err)
	}
	w.store.Close()
	w.open()
	n = w.notifier(targets, nil)
	for range 3 {
		w.must(n.Dispatch(w.ctx))
		w.advance(10 * time.Second)
		_, err = n.Check(w.ctx)
		w.must(err)
	}
	keys := byKey(pd.accepted())
	if got := keys[dlqKey]; !slices.Equal(got, []string{"trigger", "trigger", "resolve"}) {
		t.Errorf("events of %s: %v; want trigger, update, resolve, each once", dlqKey, got)
	}
	if got := keys["toolq/000000000000/us-east-1/tool-calls-dlq/health"]; len(got) == 0 || got[len(got)-1] != "resolve" {
		t.Errorf("the DLQ's health incident: %v; want it resolved once the queue is ok", got)
	}
	for k := range keys {
		if !strings.HasPrefix(k, "toolq/000000000000/us-east-1/tool-calls-dlq/") {
			t.Errorf("an incident of another problem: %s %v", k, keys[k])
		}
	}
}

// TestPagerDutyRetriesAndRefusals: a 429 is retried with the backoff until PagerDuty takes the
// event; a 400 is given up on, with PagerDuty's error on the status page and without the
// routing key, which is never stored either.
func TestPagerDutyRetriesAndRefusals(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		status    func(n int) int
		posts     int
		wantSent  int
		wantError string
	}{
		{name: "throttled", status: func(n int) int {
			if n == 1 {
				return http.StatusTooManyRequests
			}
			return http.StatusAccepted
		}, posts: 3, wantSent: 2},
		{name: "refused", status: func(int) int { return http.StatusBadRequest }, posts: 2,
			wantError: "HTTP 400 Bad Request: Event object is invalid: 'payload.summary' is missing or blank (routing key …)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			pd := newPDReceiver(t)
			pd.status = tt.status
			n := w.notifier([]notify.Target{pd.target(t, "")}, func(o *notify.Options) { o.RetryBase = 10 * time.Second })
			if _, err := n.SendTest(w.ctx, notify.TestRequest{By: "alice", Role: "operator"}); err != nil {
				t.Fatal(err)
			}
			// The trigger first: a 429 is retried after the backoff (10 s), and the resolve waits
			// behind it; a 400 is given up on at once, and the resolve goes (and is refused).
			w.must(n.Dispatch(w.ctx))
			w.advance(9 * time.Second)
			w.must(n.Dispatch(w.ctx))
			w.advance(2 * time.Second)
			w.must(n.Dispatch(w.ctx))
			w.must(n.Dispatch(w.ctx))
			pd.mu.Lock()
			posts := pd.posts
			pd.mu.Unlock()
			if posts != tt.posts {
				t.Errorf("%d posts; want %d", posts, tt.posts)
			}
			if got := len(pd.accepted()); got != tt.wantSent {
				t.Errorf("%d events taken; want %d", got, tt.wantSent)
			}
			if tt.wantSent == 2 {
				keys := byKey(pd.accepted())
				if len(keys) != 1 || !slices.Equal(keys[pd.accepted()[0].DedupKey], []string{"trigger", "resolve"}) {
					t.Errorf("the test's events: %v; want a trigger, then a resolve, of one incident", keys)
				}
			}
			ns, err := w.views.Notifications(w.ctx, n.StartedAt())
			w.must(err)
			if len(ns.Targets) != 1 || ns.Targets[0].Kind != "pagerduty" || ns.Targets[0].Endpoint != pd.srv.URL {
				t.Fatalf("targets %+v", ns.Targets)
			}
			tg := ns.Targets[0]
			if tt.wantError == "" && (tg.Sent != 2 || tg.Failed != 0) {
				t.Errorf("throttled: %+v", tg)
			}
			if tt.wantError != "" && (tg.Failed != 2 || tg.LastFailure == nil || tg.LastFailure.Error != tt.wantError) {
				t.Errorf("refused: %+v, last failure %+v; want the error %q", tg, tg.LastFailure, tt.wantError)
			}
			w.store.Close()
			for _, f := range []string{w.dbPath, w.dbPath + "-wal"} {
				if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(pdKey)) {
					t.Errorf("%s holds the routing key", filepath.Base(f))
				}
			}
		})
	}
}
