package notify

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
)

// message is what one notification says, before it is written for a kind of target.
type message struct {
	ID        int64 // the message's store id: the webhook's id, msg_<ID>
	Target    string
	Group     string
	CreatedAt time.Time
	Alerts    []views.Alert // oldest first
}

// subject returns what the message is about: its queue, or its region.
func (m message) subject() string {
	for _, a := range m.Alerts {
		if a.Queue != "" {
			return a.Queue
		}
	}
	for _, a := range m.Alerts {
		if a.Region != "" {
			return a.Region
		}
	}
	return "toolq"
}

// worst returns the message's most severe alert that is not a resolution, else its newest.
func (m message) worst() views.Alert {
	best := m.Alerts[len(m.Alerts)-1]
	for _, a := range m.Alerts {
		if !a.Resolved && (best.Resolved || a.Severity.Rank() > best.Severity.Rank()) {
			best = a
		}
	}
	return best
}

// title is the message in one line: the alert's own title, or for several the subject and the
// worst of them.
func (m message) title() string {
	if len(m.Alerts) == 1 {
		return m.Alerts[0].Title
	}
	return fmt.Sprintf("%s: %d alerts; %s", m.subject(), len(m.Alerts), m.worst().Title)
}

// arrival sums the message's DLQ arrivals: the new messages of all, the newest's depth and
// triage. Nil when there is none.
func (m message) arrival() *views.AlertArrival {
	var out *views.AlertArrival
	for _, a := range m.Alerts {
		if a.Arrival == nil {
			continue
		}
		if out == nil {
			c := *a.Arrival
			out = &c
			continue
		}
		n := out.New + a.Arrival.New
		*out = *a.Arrival
		out.New = n
	}
	return out
}

// link returns the dashboard's page about an alert, "" without a public URL.
func link(base string, a views.Alert) string {
	if base == "" || a.Path == "" {
		return ""
	}
	return base + a.Path
}

// webhookPayload is the JSON a webhook target receives: the alerts in the event stream's shape.
type webhookPayload struct {
	Type      string        `json:"type"` // "toolq.notification"
	ID        string        `json:"id"`   // msg_<n>, the webhook-id header too
	Target    string        `json:"target"`
	Group     string        `json:"group"`
	Title     string        `json:"title"`
	URL       string        `json:"url,omitempty"`
	CreatedAt time.Time     `json:"createdAt"`
	Alerts    []views.Alert `json:"alerts"`
}

// webhookID is a message's id as a webhook sees it.
func webhookID(id int64) string { return "msg_" + strconv.FormatInt(id, 10) }

// renderWebhook writes a message for a webhook: exact values, as the JSON API gives them; the
// receiver escapes them for wherever it shows them.
func renderWebhook(m message, base string) ([]byte, error) {
	p := webhookPayload{Type: "toolq.notification", ID: webhookID(m.ID), Target: m.Target, Group: m.Group,
		Title: m.title(), CreatedAt: m.CreatedAt.UTC(), Alerts: make([]views.Alert, len(m.Alerts))}
	for i, a := range m.Alerts {
		a.URL = link(base, a)
		p.Alerts[i] = a
	}
	p.URL = link(base, m.worst())
	return json.Marshal(p)
}

// signature is the webhook-signature header of a body, as Standard Webhooks sign: HMAC-SHA256 of
// "<webhook-id>.<webhook-timestamp>.<body>" with the target's key (Target.signingKey), base64,
// after "v1,".
func signature(key []byte, id string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%d.", id, ts)
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Block Kit limits (api.slack.com/reference/block-kit): a header's text 150 characters, a
// section's 3,000, a field's 2,000 and 10 fields at most.
const (
	slackHeaderMax  = 150
	slackSectionMax = 3000
	slackFieldMax   = 2000
	slackLines      = 10
)

// chatText is what a message says in a chat, before a chat's markup: Slack's and Teams'
// renderings say the same, each in its own. Every text toolq did not write itself went through
// the chat's safe; the URLs are toolq's own or built from parsed ids.
type chatText struct {
	Header string     // the alert (or the subject and how many alerts), after its severity mark
	Facts  []chatFact // the arrival's fields
	Lines  []string   // the other alerts, one a line, each after its mark; made safe
	// Link is the dashboard's page, "" without a public URL; LinkText its words.
	Link, LinkText string
	Traces         []views.AlertTrace
	Context        string // when, and what the counts come from
}

// chatFact is one labelled field; URL, when set, is the dashboard's page of what Value names.
type chatFact struct{ Label, Value, URL string }

// chat is how a chat writes: safe makes hostile text inert in its markup, mark is an alert's
// severity as its emoji, headerMax bounds the header (0: none).
type chat struct {
	safe      func(string) string
	mark      func(views.Alert) string
	headerMax int
}

// text says what a message tells a chat: what happened, the queue, how many messages, the top
// tools and dimension values (the MCP servers), the oldest message's age, the links. Each thing
// is said once: the header is the alert (or the queue and how many alerts), the arrival's facts
// say the arrival, and the lines below list the other alerts.
func (c chat) text(m message, base string) chatText {
	worst := m.worst()
	header := m.title()
	if len(m.Alerts) > 1 {
		header = fmt.Sprintf("%s: %d alerts", m.subject(), len(m.Alerts))
	}
	out := chatText{Header: c.safe(c.mark(worst) + " " + header), Traces: m.traces()}
	cut := out.Header
	if c.headerMax > 0 {
		cut = safetext.Line(out.Header, c.headerMax-1)
	}
	arrival := m.arrival()
	if arrival != nil {
		out.Facts = c.arrivalFacts(m, base, arrival)
	}
	var others []views.Alert
	for _, a := range m.Alerts {
		if arrival == nil || a.Kind != views.AlertDLQArrival { // the facts say the arrivals
			others = append(others, a)
		}
	}
	if len(m.Alerts) == 1 && cut == out.Header {
		others = nil // the header said it whole
	}
	for i, a := range others {
		if i == slackLines {
			out.Lines = append(out.Lines, fmt.Sprintf("… and %d more", len(others)-i))
			break
		}
		out.Lines = append(out.Lines, c.safe(c.mark(a)+" "+safetext.Line(a.Title, 300)))
	}
	if out.Link = link(base, worst); out.Link != "" {
		out.LinkText = "Open " + c.safe(safetext.Line(m.subject(), 100)) + " in toolq"
	}
	out.Context = fmt.Sprintf("toolq · %s", m.CreatedAt.UTC().Format("15:04:05 UTC"))
	if a := arrival; a != nil && a.Triage.SampledAt != nil {
		out.Context += fmt.Sprintf(" · counts from a sample of %d of about %d messages", a.Triage.Seen, a.Triage.ApproxVisible)
		if !a.SampleCovers {
			out.Context += " taken before these arrived"
		}
	}
	return out
}

// arrivalFacts are the fields of a message's DLQ arrivals.
func (c chat) arrivalFacts(m message, base string, a *views.AlertArrival) []chatFact {
	facts := []chatFact{
		{Label: "Queue", Value: c.safe(m.subject()), URL: queueURL(base, m)},
		{Label: "New messages", Value: fmt.Sprintf("%d (%d in the queue)", a.New, a.Depth)},
	}
	if a.OldestAgeSeconds != nil {
		facts = append(facts, chatFact{Label: "Oldest message", Value: views.HumanDuration(time.Duration(*a.OldestAgeSeconds*float64(time.Second))) + " old"})
	}
	if tools := toolList(a.Triage.Tools, c.safe); tools != "" {
		facts = append(facts, chatFact{Label: "Top tools", Value: tools})
	}
	reasons := valueList(a.Triage.Reasons, c.safe)
	for _, d := range a.Triage.Dimensions {
		// The error dimension is where the reasons come from (--error-dimension): listing
		// it beside them would say the same twice.
		if vs := valueList(d.Values, c.safe); vs != "" && vs != reasons {
			facts = append(facts, chatFact{Label: c.safe(d.Name), Value: vs})
		}
	}
	if reasons != "" {
		facts = append(facts, chatFact{Label: "Reasons", Value: reasons})
	}
	return facts
}

// slackChat writes for Slack: its mrkdwn made inert by safe, its emoji, its header limit.
func slackChat(safe func(string) string) chat {
	return chat{safe: safe, mark: severityMark, headerMax: slackHeaderMax}
}

// renderSlack writes a message for a Slack incoming webhook, in Block Kit (see chat.text).
// Every text toolq did not write itself (names of tools, servers, group ids, reasons) goes
// through safe, the chat-safety the summary uses, so that it can neither ping nor link.
func renderSlack(m message, base string, safe func(string) string) ([]byte, error) {
	text := func(s string, n int) string { return safetext.Truncate(safe(s), n) }
	ct := slackChat(safe).text(m, base)
	blocks := []map[string]any{{
		"type": "header",
		"text": map[string]any{"type": "plain_text", "text": safetext.Line(ct.Header, slackHeaderMax-1), "emoji": true},
	}}
	if len(ct.Facts) > 0 {
		// The facts' hostile parts were made safe one by one: the link's own <…|…> must stay.
		section := map[string]any{"type": "section", "fields": []map[string]any{}}
		for _, f := range ct.Facts[:min(len(ct.Facts), 10)] {
			value := f.Value
			if f.URL != "" {
				value = "<" + f.URL + "|" + value + ">"
			}
			section["fields"] = append(section["fields"].([]map[string]any),
				map[string]any{"type": "mrkdwn", "text": safetext.Truncate("*"+f.Label+"*\n"+value, slackFieldMax)})
		}
		blocks = append(blocks, section)
	}
	if len(ct.Lines) > 0 {
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": safetext.Truncate(strings.Join(ct.Lines, "\n"), slackSectionMax)}})
	}
	var links []string
	if ct.Link != "" {
		links = append(links, "<"+ct.Link+"|"+ct.LinkText+">")
	}
	for _, t := range ct.Traces {
		links = append(links, "<"+t.URL+"|trace "+t.TraceID+">")
	}
	if len(links) > 0 {
		blocks = append(blocks, map[string]any{"type": "section", "text": map[string]any{"type": "mrkdwn", "text": strings.Join(links, " · ")}})
	}
	blocks = append(blocks, map[string]any{"type": "context", "elements": []map[string]any{{"type": "mrkdwn", "text": ct.Context}}})
	return json.Marshal(map[string]any{"text": text(m.title(), slackSectionMax), "blocks": blocks})
}

// queueURL is the dashboard's page of the message's queue, "" without one.
func queueURL(base string, m message) string {
	for _, a := range m.Alerts {
		if u := link(base, a); u != "" && a.Queue != "" {
			return u
		}
	}
	return ""
}

// traces are the trace links of a message's alerts, each once, at most three.
func (m message) traces() []views.AlertTrace {
	var out []views.AlertTrace
	seen := map[string]bool{}
	for _, a := range slices.Backward(m.Alerts) { // the newest first
		for _, t := range a.Traces {
			if len(out) < maxTraceLinks && t.URL != "" && !seen[t.URL] {
				seen[t.URL] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// maxTraceLinks bounds the trace links of one notification.
const maxTraceLinks = 3

// tone is what an alert's mark says: a problem's end, a test, or its severity.
type tone int

const (
	toneInfo tone = iota
	toneWarning
	toneCritical
	toneResolved
	toneTest
)

// toneOf is an alert's tone.
func toneOf(a views.Alert) tone {
	switch {
	case a.Resolved:
		return toneResolved
	case a.Kind == views.AlertTest:
		return toneTest
	case a.Severity == views.SeverityCritical:
		return toneCritical
	case a.Severity == views.SeverityWarning:
		return toneWarning
	}
	return toneInfo
}

// slackMarks are the tones as Slack's emoji.
var slackMarks = [...]string{toneInfo: ":large_blue_circle:", toneWarning: ":large_orange_circle:", toneCritical: ":red_circle:",
	toneResolved: ":large_green_circle:", toneTest: ":wave:"}

// severityMark is an alert's severity as Slack's emoji.
func severityMark(a views.Alert) string { return slackMarks[toneOf(a)] }

func toolList(tools []views.ToolCount, safe func(string) string) string {
	var parts []string
	for _, t := range tools {
		parts = append(parts, fmt.Sprintf("%s (%d)", safe(safetext.Line(cmp.Or(t.ToolName, "no tool name"), 80)), t.Count))
	}
	return strings.Join(parts, ", ")
}

func valueList(values []views.ValueGroup, safe func(string) string) string {
	var parts []string
	for _, v := range values {
		parts = append(parts, fmt.Sprintf("%s (%d)", safe(safetext.Line(v.Value, 80)), v.Count))
	}
	return strings.Join(parts, ", ")
}
