package notify_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/notify"
)

// hostileServer is an MCP server's name as a message attribute may carry it: a heading, a chat
// ping, a Markdown link hiding its address, emphasis, code and strike-through, in the 80
// characters a name keeps.
const hostileServer = "# head <!channel> @here [Fix](https://evil.example) **bold** _it_ `code` ~~x~~"

// teamsCard is the part of a Teams message the tests read.
type teamsCard struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string `json:"contentType"`
		Content     struct {
			Type    string `json:"type"`
			Version string `json:"version"`
			Body    []struct {
				Type  string `json:"type"`
				Text  string `json:"text"`
				Facts []struct{ Title, Value string }
			} `json:"body"`
			Actions []struct{ Type, Title, URL string } `json:"actions"`
		} `json:"content"`
	} `json:"attachments"`
}

// tlsReceiver is a Teams Workflows endpoint: https, answering 202 as Workflows does.
type tlsReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	got  [][]byte
	path string
}

func newTLSReceiver(t *testing.T) *tlsReceiver {
	r := &tlsReceiver{}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, body)
		r.path = req.URL.Path + "?" + req.URL.RawQuery
		r.mu.Unlock()
		rw.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// teamsScenario sends a Teams target and a Slack target the same alerts: a test notification,
// and three calls of a hostile MCP server dead-lettered into a queue with an underscore in its
// name (an arrival and the DLQ's health change in one message). It returns the Teams messages
// and the Slack ones, in order.
func teamsScenario(t *testing.T) (teams [][]byte, slack []received) {
	t.Helper()
	w := newWorld(t)
	tr := newTLSReceiver(t)
	teamsTarget, err := notify.ParseTarget("teams:" + tr.srv.URL + "/workflows/abc/triggers/manual/paths/invoke?api-version=1&sig=SECRETSIG#name=ops-channel")
	w.must(err)
	n := w.notifier([]notify.Target{teamsTarget, w.target(t, "slack", "/slack", "name=oncall")}, func(o *notify.Options) {
		// The receiver's certificate is its own; the rest of the client is the notifier's.
		o.Client = tr.srv.Client()
		o.Client.Timeout = 10 * time.Second
	})
	if _, err := n.SendTest(w.ctx, notify.TestRequest{By: "alice", Role: "operator"}); err != nil {
		t.Fatal(err)
	}
	src := w.pair("web_search", "web_search-dlq")
	w.collect(true)
	_, err = n.Check(w.ctx)
	w.must(err)
	w.deadLetter(src, hostileServer, 3)
	w.sampleAndCheck(n)
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !strings.Contains(tr.path, "sig=SECRETSIG") {
		t.Errorf("posted to %q; want the Workflows URL as configured", tr.path)
	}
	return tr.got, w.recv.requests("/slack")
}

// TestTeamsCardSaysWhatSlackSays: a Teams card carries the Slack message's content (its title,
// its facts, its link as a button) in Adaptive Card 1.5 or lower, with hostile text escaped for
// the card's Markdown.
func TestTeamsCardSaysWhatSlackSays(t *testing.T) {
	t.Parallel()
	teams, slack := teamsScenario(t)
	if len(teams) != 2 || len(slack) != 2 {
		t.Fatalf("teams got %d messages, slack %d; want 2 each (the test, the arrival)", len(teams), len(slack))
	}
	var card teamsCard
	if err := json.Unmarshal(teams[1], &card); err != nil {
		t.Fatal(err)
	}
	if card.Type != "message" || len(card.Attachments) != 1 || card.Attachments[0].ContentType != "application/vnd.microsoft.card.adaptive" {
		t.Fatalf("not a Workflows message with a card: %s", teams[1])
	}
	c := card.Attachments[0].Content
	if c.Type != "AdaptiveCard" || c.Version > "1.5" {
		t.Errorf("card type %q version %q", c.Type, c.Version)
	}
	msg := decodeSlack(t, slack[1].body)
	if want := `🟠 web\_search-dlq: 2 alerts`; c.Body[0].Text != want || msg.header() != ":large_orange_circle: web_search-dlq: 2 alerts" {
		t.Errorf("titles: Teams %q, Slack %q", c.Body[0].Text, msg.header())
	}
	var facts, fields []string
	for _, b := range c.Body {
		for _, f := range b.Facts {
			facts = append(facts, f.Title+": "+f.Value)
		}
	}
	for _, b := range msg.Blocks {
		for _, f := range b.Fields {
			label, value, _ := strings.Cut(f.Text, "\n")
			value = regexp.MustCompile(`^<[^|]*\|(.*)>$`).ReplaceAllString(value, "$1") // the queue's link: a button on Teams
			fields = append(fields, strings.Trim(label, "*")+": "+value)
		}
	}
	unescaped := func(s string) string { return regexp.MustCompile(`\\(.)`).ReplaceAllString(s, "$1") }
	if len(facts) != len(fields) || len(facts) < 5 {
		t.Fatalf("Teams facts %q; Slack fields %q", facts, fields)
	}
	for i := range facts {
		if unescaped(facts[i]) != fields[i] {
			t.Errorf("fact %d: Teams %q, Slack %q", i, facts[i], fields[i])
		}
	}
	if len(c.Actions) != 1 || c.Actions[0].Type != "Action.OpenUrl" || c.Actions[0].URL != "https://toolq.example.com/queues/web_search-dlq" ||
		c.Actions[0].Title != "Open web_search-dlq in toolq" {
		t.Errorf("actions %+v", c.Actions)
	}
	all := string(teams[1])
	for _, bad := range []string{"<!channel>", "@here", "[Fix]", "](https://evil", " **bold**", " _it_", " `code`", "\"# head"} {
		if strings.Contains(all, bad) {
			t.Errorf("the card holds %q as it came: %s", bad, all)
		}
	}
	if !strings.Contains(all, `\\*\\*bold\\*\\*`) || !strings.Contains(all, "‹!channel›") {
		t.Errorf("the hostile name is not shown escaped: %s", all)
	}
	if strings.Contains(all, "SECRETSIG") {
		t.Error("the card quotes the Workflows URL's signature")
	}
}

// TestTeamsCardsParseWithAdaptiveCards runs every card through Microsoft's adaptivecards npm
// package (pinned in testdata/cards) and its Markdown through markdown-it: no card makes the
// parser complain, and no hostile text becomes a link, emphasis, code, a heading or a list.
func TestTeamsCardsParseWithAdaptiveCards(t *testing.T) {
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		requireTool(t, "node is not installed")
	}
	const dir = "testdata/cards"
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "adaptivecards", "package.json")); err != nil {
		requireTool(t, "adaptivecards is not installed in %s (run 'npm ci' there, or 'make test-clients')", dir)
	}
	teams, _ := teamsScenario(t)
	file := filepath.Join(t.TempDir(), "cards.json")
	if err := os.WriteFile(file, []byte("["+string(bytes.Join(teams, []byte(",")))+"]"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), node, "cards.mjs", file)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node cards.mjs: %v\n%s", err, out)
	}
	var results []struct {
		Errors   []string
		Texts    []struct{ Text, HTML string }
		Actions  []struct{ Type, Title, URL string }
		Elements int
	}
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(teams) {
		t.Fatalf("node's answer %s: %v", out, err)
	}
	markup := regexp.MustCompile(`<(a|strong|em|code|h[1-6]|ul|ol|li|blockquote|img|s|del|hr|pre)[ >]`)
	for i, r := range results {
		if len(r.Errors) > 0 || r.Elements == 0 {
			t.Errorf("card %d: %d elements, the parser says %q", i, r.Elements, r.Errors)
		}
		for _, tx := range r.Texts {
			if m := markup.FindString(tx.HTML); m != "" {
				t.Errorf("card %d: %q renders as %q (%s)", i, tx.Text, tx.HTML, m)
			}
		}
	}
	arrival := results[1]
	var shown strings.Builder
	for _, tx := range arrival.Texts {
		shown.WriteString(tx.HTML)
	}
	for _, literal := range []string{"# head ‹!channel› ＠here ［Fix］(https://evil.example) **bold** _it_ `code` ~~x~~ (3)"} {
		if !strings.Contains(shown.String(), literal) {
			t.Errorf("the hostile name's %q is not shown as written:\n%s", literal, shown.String())
		}
	}
	if len(arrival.Actions) != 1 || arrival.Actions[0].Type != "Action.OpenUrl" || arrival.Actions[0].URL != "https://toolq.example.com/queues/web_search-dlq" {
		t.Errorf("the arrival's actions as the parser reads them: %+v", arrival.Actions)
	}
}

// requireTool skips the test, or fails it under CI (where .ci/run installs node and make
// test-clients the packages), when a tool is missing.
func requireTool(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and "+format, args...)
	}
	t.Skipf(format+"; skipping", args...)
}
