package notify

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// PagerDutyEventsURL is where a pagerduty target posts unless its spec names another URL (the
// EU service's https://events.eu.pagerduty.com/v2/enqueue).
const PagerDutyEventsURL = "https://events.pagerduty.com/v2/enqueue"

// routingKeyShape is an Events API v2 routing key: a service integration's key (32 hex digits)
// or an event orchestration's (R0 and 30 more), 32 letters and digits either way.
var routingKeyShape = regexp.MustCompile(`^[A-Za-z0-9]{32}$`)

const routingKeyWant = "32 letters and digits: the Integration Key of the service's Events API v2 integration"

// routingKey reads a PagerDuty target's routing key from the file or the environment variable
// its options name, one of them; other kinds take neither. No error quotes the key.
func routingKey(kind Kind, opts url.Values, lookupEnv func(string) (string, bool)) (string, error) {
	file, env := opts.Get("routing-key-file"), opts.Get("routing-key-env")
	if kind != PagerDuty {
		if file != "" || env != "" {
			return "", errors.New("notify: only pagerduty targets take a routing key")
		}
		return "", nil
	}
	var key, from string
	switch {
	case file != "" && env != "":
		return "", errors.New("notify: pagerduty target: routing-key-file or routing-key-env, not both")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return "", fmt.Errorf("notify: pagerduty target: read the routing key: %w", err)
		}
		key, from = strings.TrimSpace(string(b)), "the file "+file
	case env != "":
		v, ok := lookupEnv(env)
		if !ok {
			return "", fmt.Errorf("notify: pagerduty target: the environment variable %s (routing-key-env) is not set", env)
		}
		key, from = strings.TrimSpace(v), "$"+env
	default:
		return "", errors.New("notify: pagerduty target: give its routing key as routing-key-file=PATH or routing-key-env=NAME (never on the command line)")
	}
	if !routingKeyShape.MatchString(key) {
		return "", fmt.Errorf("notify: pagerduty target: the routing key in %s is not one (%d characters); want %s", from, len(key), routingKeyWant)
	}
	return key, nil
}

// Events API v2 actions.
const (
	pdTrigger = "trigger"
	pdResolve = "resolve"
)

// pagerDutyAction is what an alert does to its problem's incident: trigger (or update) it, resolve
// it, or nothing (""). Warnings and criticals trigger; the end of a problem resolves; what only
// informs (a redrive started, advice on a queue's configuration) pages nobody. A queue whose
// health falls back to configuration advice alone resolves its incident: its messages are fine.
func pagerDutyAction(a views.Alert) string {
	switch {
	case a.Resolved:
		return pdResolve
	case a.Kind == views.AlertTest:
		return pdTrigger
	case a.Health != nil && a.Health.Configuration:
		if a.Health.From == views.HealthOK {
			return ""
		}
		return pdResolve
	case a.Severity.Rank() >= views.SeverityWarning.Rank():
		return pdTrigger
	}
	return ""
}

// problemOf is the problem an alert's kind belongs to: its start and its end share it.
func problemOf(k views.AlertKind) string {
	switch k {
	case views.AlertDLQArrival, views.AlertDLQDrained:
		return "dlq"
	case views.AlertHealthChanged:
		return "health"
	case views.AlertSessionBlocked, views.AlertSessionUnblocked:
		return "session"
	case views.AlertRegionBlind, views.AlertRegionVisible:
		return "region"
	case views.AlertRedriveStarted, views.AlertRedriveCompleted, views.AlertRedriveFailed, views.AlertRedriveCancelled, views.AlertRedriveOutcome:
		return "redrive"
	}
	return string(k)
}

// alertScope is the account and region an alert is about, as toolq writes a scope
// ("123456789012/us-east-1"; the region alone when toolq does not know the account).
func alertScope(a views.Alert) string {
	if q, err := arn.ParseQueue(a.QueueARN); err == nil {
		return store.Scope(q.Account, q.Region)
	}
	return a.Region
}

// dedupKey is the PagerDuty incident of an alert's problem: toolq/ACCOUNT/REGION/QUEUE/PROBLEM
// (toolq/123456789012/us-east-1/web-search-dlq/dlq), stable across restarts and replicas, so
// that each repeat updates one incident and the problem's end resolves it.
func dedupKey(a views.Alert) string {
	parts := []string{"toolq", alertScope(a)}
	if a.Queue != "" {
		parts = append(parts, a.Queue)
	}
	return strings.Join(append(parts, problemOf(a.Kind)), "/")
}

// testDedupKey is the incident of a test notification to a target: one a test.
func testDedupKey(target string, at time.Time) string {
	return fmt.Sprintf("toolq/test/%s/%d", target, at.UnixMilli())
}

// route returns the group of the target's outbox an alert waits in, and whether the target is
// sent it at all: a PagerDuty target's groups are its incidents (dedupKey), each message one
// event; the others' are the alert's queue or region.
func (t Target) route(a views.Alert) (string, bool) {
	if !t.Filter.Match(a) {
		return "", false
	}
	if t.Kind != PagerDuty {
		return a.Group, true
	}
	if pagerDutyAction(a) == "" {
		return "", false
	}
	return dedupKey(a), true
}

// turned reports whether waiting alerts turn an incident around: the newest waiting one
// resolves what the newest told one triggered, or the other way. A PagerDuty target sends that
// at once, whatever the interval: an incident must close when its problem ends.
func turned(waiting, told []views.Alert) bool {
	if len(waiting) == 0 || len(told) == 0 {
		return len(waiting) > 0
	}
	return pagerDutyAction(waiting[len(waiting)-1]) != pagerDutyAction(told[len(told)-1])
}

// pagerDutyEvent is an Events API v2 event (developer.pagerduty.com/docs/events-api-v2/trigger-events),
// less its routing_key, which post adds: the outbox keeps no credential.
type pagerDutyEvent struct {
	EventAction string            `json:"event_action"`
	DedupKey    string            `json:"dedup_key"`
	Payload     *pagerDutyPayload `json:"payload,omitempty"`
	Client      string            `json:"client,omitempty"`
	ClientURL   string            `json:"client_url,omitempty"`
	Links       []pagerDutyLink   `json:"links,omitempty"`
}

type pagerDutyPayload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

type pagerDutyLink struct {
	Href string `json:"href"`
	Text string `json:"text"`
}

// pagerDutySummaryMax is the Events API's limit on a summary.
const pagerDutySummaryMax = 1024

// renderPagerDuty writes a message as one event about its incident (the message's group, see
// Target.route): its newest alert says whether the problem goes on (trigger, which updates an
// open incident) or ended (resolve, which carries nothing else).
func renderPagerDuty(m message, base string) ([]byte, error) {
	newest := m.Alerts[len(m.Alerts)-1]
	ev := pagerDutyEvent{EventAction: pagerDutyAction(newest), DedupKey: m.Group}
	if ev.EventAction == "" {
		return nil, fmt.Errorf("pagerduty: alert %d (%s) is no event", newest.ID, newest.Kind)
	}
	if ev.EventAction == pdResolve {
		return json.Marshal(ev)
	}
	worst := m.worst()
	ev.Client, ev.ClientURL = "toolq", base
	ev.Payload = &pagerDutyPayload{
		Summary:       safetext.Truncate(safetext.Line(m.title(), pagerDutySummaryMax-1), pagerDutySummaryMax),
		Source:        pagerDutySource(worst),
		Severity:      string(worst.Severity),
		Timestamp:     newest.At.UTC().Format(time.RFC3339),
		Component:     worst.Queue,
		Group:         alertScope(worst),
		Class:         string(worst.Kind),
		CustomDetails: pagerDutyDetails(m),
	}
	if u := link(base, worst); u != "" {
		ev.Links = append(ev.Links, pagerDutyLink{Href: u, Text: "Open " + safetext.Line(m.subject(), 100) + " in toolq"})
	}
	for _, t := range m.traces() {
		ev.Links = append(ev.Links, pagerDutyLink{Href: t.URL, Text: "Trace " + t.TraceID + " (message " + safetext.Line(t.MessageID, 100) + ")"})
	}
	return json.Marshal(ev)
}

// pagerDutySource is the affected system: the queue's ARN, or for a region SQS's endpoint there.
func pagerDutySource(a views.Alert) string {
	if a.QueueARN != "" {
		return a.QueueARN
	}
	region := a.Region
	if _, r, ok := strings.Cut(region, "/"); ok {
		region = r
	}
	if region == "" {
		return "toolq"
	}
	return "sqs." + region + ".amazonaws.com"
}

// pagerDutyDetails are an event's custom_details: what the message's alerts say, as plain values.
func pagerDutyDetails(m message) map[string]any {
	line := func(s string) string { return safetext.Line(s, 300) }
	d := map[string]any{}
	var titles []string
	for _, a := range m.Alerts[max(len(m.Alerts)-slackLines, 0):] {
		titles = append(titles, line(a.Title))
	}
	d["alerts"] = titles
	if a := m.arrival(); a != nil {
		d["newMessages"], d["depth"] = a.New, a.Depth
		if a.OldestAgeSeconds != nil {
			d["oldestAgeSeconds"] = *a.OldestAgeSeconds
		}
		plain := func(s string) string { return s }
		if tools := toolList(a.Triage.Tools, plain); tools != "" {
			d["topTools"] = line(tools)
		}
		for _, dim := range a.Triage.Dimensions {
			if vs := valueList(dim.Values, plain); vs != "" {
				d[line(dim.Name)] = line(vs)
			}
		}
		if rs := valueList(a.Triage.Reasons, plain); rs != "" {
			d["topReasons"] = line(rs)
		}
		d["sampleCovers"] = a.SampleCovers
	}
	w := m.worst()
	if h := w.Health; h != nil {
		reasons := make([]string, 0, len(h.Reasons))
		for _, r := range h.Reasons {
			reasons = append(reasons, line(r))
		}
		d["health"], d["healthWas"], d["reasons"] = string(h.To), string(h.From), reasons
	}
	if s := w.Session; s != nil {
		d["session"], d["headMessageId"], d["headReceiveCount"], d["messagesInSession"] = line(s.GroupID), line(s.HeadMessageID), s.HeadReceiveCount, s.Messages
		if s.ToolName != "" {
			d["tool"] = line(s.ToolName)
		}
	}
	if r := w.Redrive; r != nil {
		d["redriveStatus"], d["moved"], d["toMove"] = r.Status, r.Moved, r.ToMove
		if r.FailureReason != "" {
			d["failureReason"] = line(r.FailureReason)
		}
	}
	if s := w.Sight; s != nil {
		d["problem"] = line(s.Problem)
	}
	return d
}

// withRoutingKey puts a target's routing key into a stored event: the event's JSON object with
// routing_key first.
func withRoutingKey(payload []byte, key string) ([]byte, error) {
	if len(payload) < 2 || payload[0] != '{' {
		return nil, errors.New("pagerduty: a stored event is not a JSON object")
	}
	k, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"routing_key":`), k...)
	if string(payload) != "{}" {
		out = append(out, ',')
	}
	return append(out, payload[1:]...), nil
}

// pagerDutyRefusal is what the Events API answers a refused event with: a status, a message,
// and what is wrong with the event.
type pagerDutyRefusal struct {
	Status  string   `json:"status"`
	Message string   `json:"message"`
	Errors  []string `json:"errors"`
}

// pagerDutyError says why PagerDuty refused an event, from its answer; "" when the answer is
// not its error shape.
func pagerDutyError(body []byte) string {
	var r pagerDutyRefusal
	if json.Unmarshal(body, &r) != nil || (r.Message == "" && len(r.Errors) == 0) {
		return ""
	}
	parts := []string{}
	if r.Message != "" {
		parts = append(parts, r.Message)
	}
	parts = append(parts, r.Errors...)
	return strings.Join(parts, ": ")
}
