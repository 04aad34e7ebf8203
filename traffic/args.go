package traffic

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// hostileText is what LLMs and users put in tool arguments now and then: markup, script,
// template and SQL injection, HTMX attributes, control and bidirectional characters. The
// dashboard shows DLQ bodies, so the demo makes sure it always has some to show safely.
var hostileText = []string{
	`<script>alert(1)</script>`,
	`<img src=x onerror=alert(1)>`,
	`"><svg onload=alert(document.domain)>`,
	`</textarea></pre><iframe src="javascript:alert(1)"></iframe>`,
	`<div hx-get="/api/v1/queues" hx-trigger="load" hx-swap="outerHTML">swapped?</div>`,
	`javascript:alert(1)`,
	`Robert'); DROP TABLE sessions; --`,
	`{{ .Secret }} ${7*7} <%= 7*7 %> #{7*7}`,
	"Zürich — 東京 — Ελληνικά — עברית — 🚀🔥 — \u202egnp.exe\u202c — zero\u200bwidth",
	"line one\nline two\r\n\ttabbed \"double\" 'single' `back` \\ backslash &amp; &lt;b&gt;",
}

// hostileSessionIDs are valid MessageGroupIds (alphanumerics and punctuation only) that are
// also markup: the per-group views must print them as text.
var hostileSessionIDs = []string{
	`sess_"><img/src=x/onerror=alert(1)>`,
	`sess_<script>alert(1)</script>`,
	`sess_{{.}}&amp;'"`,
}

var (
	searchQueries = []string{
		"sqs fifo deduplication window", "q3 revenue by region", "mcp tool call timeout",
		"best practices dead letter queue", "kubernetes pod eviction reasons", "postgres vacuum tuning",
		"latest go release notes", "lambda sqs batch item failures", "how to rotate iam keys",
		"weather berlin tomorrow", "compare vector databases", "unicode normalization nfc vs nfd",
	}
	sites = []string{
		"https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/",
		"https://go.dev/doc/effective_go", "https://modelcontextprotocol.io/specification",
		"https://example.com/pricing", "https://news.example.org/2026/11/29/outage-report",
		"https://en.wikipedia.org/wiki/Dead_letter_queue",
	}
	workspaceFiles = []string{
		"README.md", "src/main.go", "docs/architecture.md", "data/customers.csv",
		"notes/meeting-2026-11-28.md", "config/app.yaml", "reports/q3.xlsx",
	}
	recipients = []string{
		"ops@example.com", "ana.souza@example.com", "kenji.tanaka@example.co.jp",
		"finance-team@example.com", "oncall+sqs@example.com",
	}
	channels = []string{"#ops", "#agents", "#finance", "#release-train", "#incidents"}
	tables   = []string{"orders", "tool_results", "sessions", "invoices", "page_views"}
	titles   = []string{
		"Q3 Report", "Incident review: DLQ backlog", "Onboarding checklist",
		"Design doc: tool-call queues", "Weekly status", "Customer interview notes",
	}
	headings  = []string{"Summary", "Background", "Findings", "Next steps", "Appendix", "Risks"}
	sentences = []string{
		"Revenue grew 12% quarter over quarter.", "The backlog cleared after the worker fix.",
		"Three tool calls timed out against the search backend.", "No customer data left the region.",
		"Latency p99 stayed under two seconds.", "We moved 42 messages back from the DLQ.",
	}
	workflowActions = []string{"validate", "reserve", "charge", "ship", "notify", "close"}
)

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

// longText builds a body of about n bytes: "never assume a body is small".
func longText(r *rand.Rand, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "¶%d %s ", i, pick(r, sentences))
	}
	return b.String()
}

// sentence returns ordinary text, or now and then hostile text.
func (p *planner) sentence() string {
	if p.r.Float64() < p.cfg.hostileRate {
		return pick(p.r, hostileText)
	}
	return pick(p.r, sentences)
}

// independentArgs draws the arguments of a call to tool that stands alone (standard queues).
// With poison set it draws arguments the tool rejects on every attempt.
func (p *planner) independentArgs(tool string, poison bool) map[string]any {
	r := p.r
	switch tool {
	case "web_search":
		q := pick(r, searchQueries)
		if r.Float64() < p.cfg.hostileRate {
			q = pick(r, hostileText)
		}
		if poison {
			q = "   "
		}
		return map[string]any{"query": q, "maxResults": 5 + r.IntN(16)}
	case "fetch_url":
		u := pick(r, sites)
		if poison {
			u = pick(r, []string{"file:///etc/passwd", "javascript:alert(1)", "gopher://127.0.0.1:6379/_FLUSHALL"})
		}
		return map[string]any{"url": u, "timeoutMs": 10000}
	case "read_file":
		path := pick(r, workspaceFiles)
		if poison {
			path = pick(r, []string{"../../etc/shadow", "/root/.aws/credentials", "notes/../../<script>alert(1)</script>"})
		}
		return map[string]any{"path": path, "maxBytes": 65536}
	case "send_email":
		to := pick(r, recipients)
		if poison {
			to = pick(r, []string{"not-an-address", `"><img src=x onerror=alert(1)>`})
		}
		body := p.sentence()
		if r.Float64() < p.cfg.longRate {
			body = longText(r, 48<<10)
		}
		return map[string]any{"to": to, "subject": p.sentence(), "body": body}
	case "post_message":
		ch := pick(r, channels)
		if poison {
			ch = "ops-typo"
		}
		return map[string]any{"channel": ch, "text": p.sentence()}
	case "export_csv":
		format := pick(r, []string{"csv", "csv", "tsv"})
		if poison {
			format = "xlsx"
		}
		return map[string]any{"table": pick(r, tables), "format": format, "where": "created_at > now() - interval '1 day'"}
	case "render_pdf":
		pages := 1 + r.IntN(40)
		if poison {
			pages = 5000 + r.IntN(5000)
		}
		return map[string]any{"documentId": "doc_" + randomString(r, crockford, 10), "pages": pages, "title": p.sentence()}
	}
	panic("traffic: no argument builder for tool " + tool)
}
