package traffic

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"time"
)

// The MCP servers whose tool calls travel through the demo queues; one name travels with each
// message as its mcpServer attribute.
const (
	serverResearch  = "research"
	serverNotify    = "notify"
	serverReports   = "reports"
	serverDocs      = "docs"
	serverWarehouse = "warehouse-db"
	serverWorkflows = "workflows"
	// serverDocsLegacy is down for good: every call routed to it fails, which is how the demo
	// keeps one FIFO session blocked behind a failing head message.
	serverDocsLegacy = "docs-legacy"
	// serverCrawler is down for the first crawlerOutage of the traffic, then works: the calls
	// it failed wait in web-search-dlq, and a redrive after it came back replays them for good
	// (SQS sends a redriven message anew), while the docs-legacy calls beside them fail again.
	serverCrawler = "crawler"
)

// crawlerOutage is how long the crawler server is down after the traffic starts: long enough
// for its failed calls to reach the DLQ, short enough that a redrive in the demo's first minutes
// shows one server fixed and one still broken.
const crawlerOutage = 75 * time.Second

// crawlerDown is what a call to the crawler does while it is down: a passing failure that lasts
// as long as the outage, so the call reaches the DLQ after maxReceiveCount deliveries.
func crawlerDown() attempt {
	return attempt{Duration: 80 * time.Millisecond, Err: errors.New("mcp server crawler: 503 Service Unavailable (restarting)")}
}

// toolProfile is how the simulated worker runs one tool: a lognormal run time, a chance of a
// passing failure per attempt, and the argument check that makes poison pills fail every time.
type toolProfile struct {
	median    time.Duration
	sigma     float64
	transient float64
	// transientReason is what a passing failure says (a throttle, a timeout upstream).
	transientReason string
	// check finds, from the arguments alone, what the tool would reject on every attempt.
	check func(args map[string]any) error
}

// profiles lists every tool the planner draws. Medians follow what such tools take behind real
// MCP servers: file reads in milliseconds, searches under a second, exports in seconds.
var profiles = map[string]toolProfile{
	"web_search": {median: 700 * time.Millisecond, sigma: 0.7, transient: 0.08,
		transientReason: "search backend rate limited the call (HTTP 429)", check: checkWebSearch},
	"fetch_url": {median: 900 * time.Millisecond, sigma: 0.9, transient: 0.06,
		transientReason: "upstream timed out after 10s", check: checkFetchURL},
	"read_file": {median: 40 * time.Millisecond, sigma: 0.5, transient: 0.01,
		transientReason: "workspace volume busy", check: checkReadFile},
	"send_email": {median: 300 * time.Millisecond, sigma: 0.5, transient: 0.04,
		transientReason: "SMTP relay answered 451 try again later", check: checkSendEmail},
	"post_message": {median: 200 * time.Millisecond, sigma: 0.4, transient: 0.05,
		transientReason: "chat API rate limited the call (HTTP 429)", check: checkPostMessage},
	"export_csv": {median: 2500 * time.Millisecond, sigma: 0.6, transient: 0.03,
		transientReason: "warehouse connection reset", check: checkExportCSV},
	"render_pdf": {median: 4 * time.Second, sigma: 0.5, transient: 0.03,
		transientReason: "renderer out of memory, restarted", check: checkRenderPDF},
	"create_document": {median: 600 * time.Millisecond, sigma: 0.5, transient: 0.02,
		transientReason: "document store throttled the write", check: checkCreateDocument},
	"append_section": {median: 250 * time.Millisecond, sigma: 0.5, transient: 0.02,
		transientReason: "document store throttled the write", check: checkAppendSection},
	"share_document": {median: 150 * time.Millisecond, sigma: 0.4, transient: 0.01,
		transientReason: "identity service unavailable", check: checkShareDocument},
	"run_sql": {median: 150 * time.Millisecond, sigma: 1.0, transient: 0.02,
		transientReason: "could not serialize access due to concurrent update", check: checkRunSQL},
	"advance_workflow": {median: 300 * time.Millisecond, sigma: 0.6, transient: 0.02,
		transientReason: "state store lease lost", check: checkAdvanceWorkflow},
}

// rejection is a tool's refusal of a call's arguments, with a code that names its kind.
type rejection struct{ code, message string }

func (r *rejection) Error() string { return r.message }

func reject(code, message string) error { return &rejection{code: code, message: message} }

// errorCode is the code of a permanent failure as a worker records it.
func errorCode(err error) string {
	if r, ok := errors.AsType[*rejection](err); ok {
		return r.code
	}
	return "rejected"
}

// attempt is what one delivery of a tool call does in a simulated worker.
type attempt struct {
	// Duration is how long the worker is busy with the call before it succeeds or fails.
	Duration time.Duration
	// Err is nil on success.
	Err error
	// Permanent says Err will come back on every attempt: the call is a poison pill.
	Permanent bool
}

// slowestAttempt caps the lognormal tail so that one draw cannot hold a worker for minutes.
const slowestAttempt = 45 * time.Second

// simulateAttempt decides what delivery number receiveCount of call does. It depends only on
// its arguments, not on which worker got the message or when, so a seed replays the same
// outcomes whatever the scheduling.
func simulateAttempt(seed int64, server string, call ToolCall, receiveCount int) attempt {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", call.ToolCallID, receiveCount)
	r := rand.New(rand.NewPCG(uint64(seed), h.Sum64()))

	prof, ok := profiles[call.ToolName]
	if !ok {
		return attempt{Duration: 10 * time.Millisecond, Err: reject("unknown_tool", fmt.Sprintf("unknown tool %q", call.ToolName)), Permanent: true}
	}
	d := lognormal(r, prof.median, prof.sigma)
	// A few calls are far slower than the rest: cold caches, huge pages, lock waits.
	if r.Float64() < 0.03 {
		d *= time.Duration(4 + r.IntN(8))
	}
	d = min(d, slowestAttempt)

	if server == serverDocsLegacy {
		return attempt{Duration: time.Duration(50+r.IntN(250)) * time.Millisecond,
			Err: fmt.Errorf("mcp server %s: dial tcp 10.0.7.12:8443: connect: connection refused", server), Permanent: true}
	}
	if err := prof.check(call.ToolArgs); err != nil {
		return attempt{Duration: d / 5, Err: fmt.Errorf("%s: %w", call.ToolName, err), Permanent: true}
	}
	if r.Float64() < prof.transient {
		return attempt{Duration: d, Err: fmt.Errorf("%s: %s", call.ToolName, prof.transientReason)}
	}
	return attempt{Duration: d}
}

// lognormal draws a run time whose median is median; sigma widens the tail.
func lognormal(r *rand.Rand, median time.Duration, sigma float64) time.Duration {
	return time.Duration(float64(median) * math.Exp(sigma*r.NormFloat64()))
}

// argString reads a string argument; a missing or non-string one reads as "".
func argString(args map[string]any, key string) string {
	s, _ := args[key].(string)
	return s
}

// argInt reads a numeric argument, whether it was built in Go (int) or decoded from JSON (float64).
func argInt(args map[string]any, key string) (int, bool) {
	switch v := args[key].(type) {
	case int:
		return v, true
	case float64:
		return int(v), true
	}
	return 0, false
}

func checkWebSearch(args map[string]any) error {
	if strings.TrimSpace(argString(args, "query")) == "" {
		return reject("empty_query", "query is empty")
	}
	return nil
}

func checkFetchURL(args map[string]any) error {
	u := argString(args, "url")
	if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
		return reject("url_scheme_not_allowed", "url scheme not allowed: only http and https can be fetched")
	}
	return nil
}

func checkReadFile(args map[string]any) error {
	p := argString(args, "path")
	if p == "" || strings.HasPrefix(p, "/") || strings.Contains(p, "..") {
		return reject("path_escapes_workspace", "path escapes the workspace")
	}
	return nil
}

func checkSendEmail(args map[string]any) error {
	if !strings.Contains(argString(args, "to"), "@") {
		return reject("invalid_recipient", "invalid recipient address")
	}
	return nil
}

func checkPostMessage(args map[string]any) error {
	if !strings.HasPrefix(argString(args, "channel"), "#") {
		return reject("channel_not_found", "channel_not_found")
	}
	return nil
}

func checkExportCSV(args map[string]any) error {
	switch argString(args, "format") {
	case "csv", "tsv":
		return nil
	}
	return reject("unsupported_format", fmt.Sprintf("unsupported format %q", argString(args, "format")))
}

func checkRenderPDF(args map[string]any) error {
	if n, ok := argInt(args, "pages"); !ok || n < 1 || n > 500 {
		return reject("page_count_out_of_range", "page count out of range 1..500")
	}
	return nil
}

func checkCreateDocument(args map[string]any) error {
	if strings.TrimSpace(argString(args, "title")) == "" {
		return reject("title_required", "title is required")
	}
	return nil
}

func checkAppendSection(args map[string]any) error {
	if !strings.HasPrefix(argString(args, "documentId"), "doc_") {
		return reject("document_not_found", "document not found")
	}
	return nil
}

func checkShareDocument(args map[string]any) error {
	if !strings.Contains(argString(args, "with"), "@") {
		return reject("invalid_share_target", "cannot share with a non-address")
	}
	return nil
}

func checkRunSQL(args map[string]any) error {
	stmt := strings.ToUpper(strings.TrimSpace(argString(args, "statement")))
	for _, denied := range []string{"DROP ", "TRUNCATE ", "ALTER "} {
		if strings.HasPrefix(stmt, denied) {
			return reject("permission_denied", "permission denied for "+strings.TrimSpace(denied))
		}
	}
	return nil
}

func checkAdvanceWorkflow(args map[string]any) error {
	if n, ok := argInt(args, "step"); !ok || n < 1 {
		return reject("invalid_transition", "invalid transition: step must be at least 1")
	}
	return nil
}
