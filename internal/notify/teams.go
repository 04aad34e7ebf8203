package notify

import (
	"encoding/json"
	"strings"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
)

// adaptiveCardVersion is the Adaptive Card schema the Teams cards are written in: Teams renders
// 1.5 and lower, and these cards need nothing past 1.4.
const adaptiveCardVersion = "1.4"

// teamsTraceButtons bounds the trace buttons of a card: with the dashboard's, a card keeps to a
// row of buttons Teams shows whole.
const teamsTraceButtons = 2

// teamsChat writes for Teams: the chat-safety of every chat, then the card's Markdown escaped
// (cardMarkdown), Unicode emoji for the severities, no header limit (a TextBlock wraps).
func teamsChat(chatSafe func(string) string) chat {
	return chat{safe: func(s string) string { return cardMarkdown(chatSafe(s)) }, mark: teamsMark}
}

// cardMarkdownEscaper escapes what starts Markdown in an Adaptive Card's TextBlock or Fact
// anywhere in a line: emphasis (* _), code, strike-through and the escape itself. The chat-safety
// has already made links, images and mentions impossible (no < > [ ] @ left).
var cardMarkdownEscaper = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "`", "\\`", "~", `\~`)

// cardMarkdown returns hostile text that an Adaptive Card shows as written: the characters
// that make Markdown anywhere escaped with a backslash, and those that do only at a line's start
// (a heading's #, a list's - + or "1.", a quote's >) escaped where a line starts.
func cardMarkdown(s string) string {
	lines := strings.Split(cardMarkdownEscaper.Replace(s), "\n")
	for i, l := range lines {
		lines[i] = escapeLineStart(l)
	}
	return strings.Join(lines, "\n")
}

// escapeLineStart escapes a line's first non-blank character when Markdown would read it as a
// block's start: #, -, +, > or a number's "." or ")".
func escapeLineStart(l string) string {
	rest := strings.TrimLeft(l, " \t")
	indent := l[:len(l)-len(rest)]
	if rest == "" {
		return l
	}
	switch rest[0] {
	case '#', '-', '+', '>', '=':
		return indent + `\` + rest
	}
	digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
	if digits > 0 && digits < len(rest) && (rest[digits] == '.' || rest[digits] == ')') {
		return indent + rest[:digits] + `\` + rest[digits:]
	}
	return l
}

// teamsMarks and teamsColors are the tones as Unicode emoji, and as the colours of a card's
// title: Attention for critical, Warning for warning, Good for an end.
var (
	teamsMarks  = [...]string{toneInfo: "🔵", toneWarning: "🟠", toneCritical: "🔴", toneResolved: "🟢", toneTest: "👋"}
	teamsColors = [...]string{toneInfo: "Default", toneWarning: "Warning", toneCritical: "Attention", toneResolved: "Good", toneTest: "Default"}
)

// teamsMark is an alert's severity as an emoji Teams shows.
func teamsMark(a views.Alert) string { return teamsMarks[toneOf(a)] }

// renderTeams writes a message for a Teams Workflows webhook ("Post to a channel when a webhook
// request is received"): a message whose one attachment is an Adaptive Card saying what the
// Slack message says (chat.text): a title, the arrival's facts, the other alerts, when, and a
// button to the dashboard's page (and to the traces).
func renderTeams(m message, base string, chatSafe func(string) string) ([]byte, error) {
	ct := teamsChat(chatSafe).text(m, base)
	body := []map[string]any{{"type": "TextBlock", "text": ct.Header, "weight": "Bolder", "size": "Medium", "wrap": true,
		"color": teamsColors[toneOf(m.worst())]}}
	if len(ct.Facts) > 0 {
		facts := []map[string]any{}
		for _, f := range ct.Facts {
			facts = append(facts, map[string]any{"title": f.Label, "value": f.Value})
		}
		body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	}
	if len(ct.Lines) > 0 {
		// Two spaces before a newline would be Markdown's line break; a list item per line
		// is plainer and Teams shows it as one.
		body = append(body, map[string]any{"type": "TextBlock", "text": strings.Join(ct.Lines, "\n\n"), "wrap": true})
	}
	body = append(body, map[string]any{"type": "TextBlock", "text": ct.Context, "isSubtle": true, "size": "Small", "wrap": true})
	actions := []map[string]any{}
	if ct.Link != "" {
		// A button's title is plain text: the chat-safety alone, no Markdown escapes.
		title := "Open " + chatSafe(safetext.Line(m.subject(), 100)) + " in toolq"
		actions = append(actions, map[string]any{"type": "Action.OpenUrl", "title": title, "url": ct.Link})
	}
	for _, t := range ct.Traces[:min(len(ct.Traces), teamsTraceButtons)] {
		actions = append(actions, map[string]any{"type": "Action.OpenUrl", "title": "Trace " + t.TraceID, "url": t.URL})
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
		"type":    "AdaptiveCard",
		"version": adaptiveCardVersion,
		"body":    body,
		"msteams": map[string]any{"width": "Full"},
	}
	if len(actions) > 0 {
		card["actions"] = actions
	}
	return json.Marshal(map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"contentUrl":  nil,
			"content":     card,
		}},
	})
}
