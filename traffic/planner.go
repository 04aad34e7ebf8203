package traffic

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// send is one message the producer sends.
type send struct {
	Queue       string
	Call        ToolCall
	MCPServer   string
	Traceparent string
	// Poison records that the planner drew a call that fails on every attempt. Workers never
	// read it (they find out from the call, as a real worker would); tests do.
	Poison bool
}

// step is one decision of the planner: wait, then send.
type step struct {
	Wait  time.Duration
	Sends []send
}

// planConfig tunes the planner; newPlanner fills zero fields with defaults.
type planConfig struct {
	// rate is the average number of tool calls per second, bursts excluded.
	rate float64
	// fifoRedelivery (how long a failed message of tool-calls.fifo waits for its next delivery)
	// and its maxReceiveCount pace the blocked session so that it sends faster than its failing
	// messages drain to the DLQ.
	fifoRedelivery  time.Duration
	maxReceiveCount int
	poisonRate      float64
	hostileRate     float64
	longRate        float64
	burstEvery      time.Duration
}

func (c *planConfig) defaults() {
	if c.rate <= 0 {
		c.rate = 1.5
	}
	if c.fifoRedelivery <= 0 {
		c.fifoRedelivery = fifoPollEvery
	}
	if c.maxReceiveCount <= 0 {
		c.maxReceiveCount = 3
	}
	if c.poisonRate == 0 {
		c.poisonRate = 0.02
	}
	if c.hostileRate == 0 {
		c.hostileRate = 0.04
	}
	if c.longRate == 0 {
		c.longRate = 0.005
	}
	if c.burstEvery <= 0 {
		c.burstEvery = 4 * time.Minute
	}
}

// Shares of the base rate per kind of traffic.
const (
	shareWebSearch     = 0.45
	shareNotifications = 0.15
	shareExports       = 0.10
	shareSessions      = 0.30
	// meanSessionCalls is the average length of an ordered session, used to turn the FIFO
	// share of calls into a rate of session starts.
	meanSessionCalls = 5
)

// planner decides what the traffic does, as a pure function of its seed: which calls, to
// which queue, after which pause. It keeps a virtual clock and a queue of future events
// (session steps, arrivals, bursts), so the same seed yields the same steps whatever the
// wall clock does while they are carried out.
type planner struct {
	r      *rand.Rand
	cfg    planConfig
	now    time.Duration
	seq    int
	events eventQueue
	// research is a small pool of agent sessions that the independent calls belong to.
	research []*session
}

// session is an agent session: its id and the sequence number of its last call.
type session struct {
	id  string
	seq int
}

func (s *session) nextSeq() int { s.seq++; return s.seq }

// newPlanner returns a planner for seed. planSalt keeps the planner's stream apart from the
// simulator's, which may be seeded with the same number.
func newPlanner(seed int64, cfg planConfig) *planner {
	const planSalt = 0x746f6f6c71 // "toolq"
	cfg.defaults()
	p := &planner{r: rand.New(rand.NewPCG(uint64(seed), planSalt)), cfg: cfg}
	p.opening()
	p.arrivals(QueueWebSearch, shareWebSearch, []string{"web_search", "web_search", "fetch_url", "read_file"}, serverResearch)
	p.arrivals(QueueNotifications, shareNotifications, []string{"send_email", "post_message"}, serverNotify)
	p.arrivals(QueueExports, shareExports, []string{"export_csv", "render_pdf"}, serverReports)
	p.sessionStarts()
	p.schedule(30*time.Second+p.uniform(0, 20*time.Second), p.burst)
	return p
}

// next returns the next step. The event queue never empties: arrivals reschedule themselves.
func (p *planner) next() step {
	var wait time.Duration
	for {
		ev := heap.Pop(&p.events).(*event)
		wait += ev.at - p.now
		p.now = ev.at
		if sends := ev.fire(); len(sends) > 0 {
			return step{Wait: wait, Sends: sends}
		}
	}
}

// schedule runs fire after d of virtual time; what fire returns is sent then.
func (p *planner) schedule(d time.Duration, fire func() []send) {
	p.seq++
	heap.Push(&p.events, &event{at: p.now + d, seq: p.seq, fire: fire})
}

func (p *planner) scheduleSend(d time.Duration, s send) {
	p.schedule(d, func() []send { return []send{s} })
}

// uniform draws a duration in [lo, hi).
func (p *planner) uniform(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(p.r.Int64N(int64(hi-lo)))
}

// exponential draws the pause before the next event of a Poisson process of rate per second.
func (p *planner) exponential(rate float64) time.Duration {
	return time.Duration(p.r.ExpFloat64() / rate * float64(time.Second))
}

// opening makes sure that a newcomer sees something in every view within the first minute:
// a blocked FIFO session, a poison pill on each source queue (so every DLQ fills after
// maxReceiveCount visibility timeouts), hostile text and a long body.
func (p *planner) opening() {
	p.blockedSession()
	p.scheduleSend(200*time.Millisecond, p.independent(QueueWebSearch, "read_file", serverResearch, true))
	p.scheduleSend(400*time.Millisecond, p.independent(QueueExports, "export_csv", serverReports, true))
	p.scheduleSend(600*time.Millisecond, p.independent(QueueNotifications, "send_email", serverNotify, true))
	p.schedule(time.Second, func() []send {
		s := p.independent(QueueWebSearch, "web_search", serverResearch, false)
		s.Call.ToolArgs["query"] = hostileText[0]
		return []send{s}
	})
	// What a redrive will show both of: fetch_url calls to the crawler, down until
	// crawlerOutage (they succeed once redriven after it), and web_search calls to docs-legacy,
	// down for good (they fail again after any redrive).
	p.schedule(3*time.Second, func() []send {
		var out []send
		for range 4 {
			out = append(out, p.independent(QueueWebSearch, "fetch_url", serverCrawler, false))
		}
		for range 3 {
			s := p.independent(QueueWebSearch, "web_search", serverDocsLegacy, false)
			s.Poison = true // its server fails it on every attempt
			out = append(out, s)
		}
		return out
	})
	p.schedule(1500*time.Millisecond, func() []send {
		p.startSession(&session{id: pick(p.r, hostileSessionIDs)}, true)
		return nil
	})
	p.schedule(2500*time.Millisecond, func() []send {
		s := p.independent(QueueNotifications, "send_email", serverNotify, false)
		s.Call.ToolArgs["body"] = longText(p.r, 48<<10)
		return []send{s}
	})
}

// arrivals sends independent calls to queue as a Poisson process with share of the base rate.
func (p *planner) arrivals(queue string, share float64, tools []string, server string) {
	rate := p.cfg.rate * share
	var fire func() []send
	fire = func() []send {
		p.schedule(p.exponential(rate), fire)
		return []send{p.independent(queue, pick(p.r, tools), server, p.r.Float64() < p.cfg.poisonRate)}
	}
	p.schedule(p.exponential(rate), fire)
}

// researchSession returns a session for an independent call: mostly one of a few ongoing
// sessions, sometimes a new one that replaces an old one.
func (p *planner) researchSession() *session {
	const poolSize = 6
	if len(p.research) < poolSize || p.r.Float64() < 0.1 {
		s := &session{id: newSessionID(p.r)}
		if len(p.research) < poolSize {
			p.research = append(p.research, s)
		} else {
			p.research[p.r.IntN(poolSize)] = s
		}
		return s
	}
	return pick(p.r, p.research)
}

// independent builds one call to tool that stands alone, for a standard queue.
func (p *planner) independent(queue, tool, server string, poison bool) send {
	return p.callOf(p.researchSession(), queue, tool, server, poison)
}

// callOf builds the next call of session s to tool, for a standard queue.
func (p *planner) callOf(s *session, queue, tool, server string, poison bool) send {
	return send{
		Queue: queue,
		Call: ToolCall{
			ToolCallID:     newToolCallID(p.r),
			ToolName:       tool,
			ToolArgs:       p.independentArgs(tool, poison),
			SessionID:      s.id,
			SequenceNumber: s.nextSeq(),
		},
		MCPServer:   server,
		Traceparent: newTraceparent(p.r),
		Poison:      poison,
	}
}

// sessionStarts starts ordered sessions on tool-calls.fifo as a Poisson process.
func (p *planner) sessionStarts() {
	rate := p.cfg.rate * shareSessions / meanSessionCalls
	var fire func() []send
	fire = func() []send {
		p.schedule(p.exponential(rate), fire)
		p.startSession(&session{id: newSessionID(p.r)}, p.r.Float64() < p.cfg.poisonRate*3)
		return nil
	}
	p.schedule(p.exponential(rate), fire)
}

// startSession schedules the calls of one ordered session, an agent thinking for a few
// seconds between them. With poison set one call in the middle fails for good: it blocks its
// group until it reaches the DLQ, and the session then goes on.
func (p *planner) startSession(s *session, poison bool) {
	var script []send
	switch p.r.IntN(3) {
	case 0:
		script = p.documentScript(s, serverDocs, 1+p.r.IntN(4))
	case 1:
		script = p.transactionScript(s)
	default:
		script = p.workflowScript(s)
	}
	if poison {
		i := p.r.IntN(len(script))
		poisonArgs(script[i].Call)
		script[i].Poison = true
	}
	var at time.Duration
	for _, c := range script {
		p.scheduleSend(at, c)
		at += p.uniform(500*time.Millisecond, 6*time.Second)
	}
}

// ordered wraps one call of an ordered session for tool-calls.fifo.
func (p *planner) ordered(s *session, server, tool string, args map[string]any) send {
	return send{
		Queue: QueueToolCalls,
		Call: ToolCall{
			ToolCallID:     newToolCallID(p.r),
			ToolName:       tool,
			ToolArgs:       args,
			SessionID:      s.id,
			SequenceNumber: s.nextSeq(),
		},
		MCPServer:   server,
		Traceparent: newTraceparent(p.r),
	}
}

// documentScript is create_document, then sections appended in order, then a share.
func (p *planner) documentScript(s *session, server string, sections int) []send {
	doc := "doc_" + randomString(p.r, crockford, 10)
	out := []send{p.ordered(s, server, "create_document", map[string]any{
		"documentId": doc, "title": pick(p.r, titles), "template": pick(p.r, []string{"blank", "report", "memo"}),
	})}
	for range sections {
		content := p.sentence()
		if p.r.Float64() < p.cfg.longRate {
			content = longText(p.r, 32<<10)
		}
		out = append(out, p.ordered(s, server, "append_section", map[string]any{
			"documentId": doc, "heading": pick(p.r, headings), "content": content,
		}))
	}
	return append(out, p.ordered(s, server, "share_document", map[string]any{
		"documentId": doc, "with": pick(p.r, recipients), "role": "viewer",
	}))
}

// transactionScript is BEGIN, a few INSERTs, COMMIT: statements that must arrive in order.
func (p *planner) transactionScript(s *session) []send {
	sql := func(stmt string) send {
		return p.ordered(s, serverWarehouse, "run_sql", map[string]any{"database": "analytics", "statement": stmt})
	}
	out := []send{sql("BEGIN")}
	for range 1 + p.r.IntN(4) {
		out = append(out, sql("INSERT INTO tool_results (session_id, tool, note) VALUES ($1, $2, '"+
			pick(p.r, sentences)+"')"))
	}
	return append(out, sql("COMMIT"))
}

// workflowScript advances a state machine one step at a time.
func (p *planner) workflowScript(s *session) []send {
	wf := "wf_" + randomString(p.r, crockford, 10)
	var out []send
	for i, action := range workflowActions[:3+p.r.IntN(len(workflowActions)-2)] {
		out = append(out, p.ordered(s, serverWorkflows, "advance_workflow", map[string]any{
			"workflowId": wf, "step": i + 1, "action": action,
		}))
	}
	return out
}

// poisonArgs rewrites the arguments of an ordered call so that its tool rejects it forever.
func poisonArgs(c ToolCall) {
	switch c.ToolName {
	case "create_document":
		c.ToolArgs["title"] = ""
	case "append_section":
		c.ToolArgs["documentId"] = `"><img src=x onerror=alert(1)>`
	case "share_document":
		c.ToolArgs["with"] = "everyone <script>alert(1)</script>"
	case "run_sql":
		c.ToolArgs["statement"] = "DROP TABLE tool_results; -- <script>alert(1)</script>"
	case "advance_workflow":
		c.ToolArgs["step"] = 0
	}
}

// blockedSession runs one session against the docs-legacy server, which is down: its head
// message fails on every delivery, and while it waits out maxReceiveCount visibility
// timeouts the rest of the session piles up behind it. It sends a call per redelivery, so
// maxReceiveCount times as fast as its messages drain to the DLQ, then stops, and the next
// such session starts once this one has drained, so the backlog stays bounded over hours.
func (p *planner) blockedSession() {
	s := &session{id: newSessionID(p.r)}
	script := p.documentScript(s, serverDocsLegacy, 4+p.r.IntN(5))
	drainEach := time.Duration(p.cfg.maxReceiveCount) * p.cfg.fifoRedelivery
	gap := p.cfg.fifoRedelivery
	for i := range script {
		script[i].Poison = true
		p.scheduleSend(time.Duration(i)*gap, script[i])
	}
	sending := time.Duration(len(script)-1) * gap
	drain := time.Duration(len(script)) * drainEach
	p.schedule(sending+drain+p.uniform(time.Minute, 4*time.Minute), func() []send {
		p.blockedSession()
		return nil
	})
}

// burst is an agent fanning out: many calls of one session at once, which the workers then
// take a while to drain (visible as backlog and age of the oldest message).
func (p *planner) burst() []send {
	p.schedule(p.exponential(1/p.cfg.burstEvery.Seconds()), p.burst)
	s := &session{id: newSessionID(p.r)}
	queue, tool, server, n := QueueWebSearch, "fetch_url", serverResearch, 30+p.r.IntN(90)
	if p.r.IntN(2) == 0 {
		queue, tool, server, n = QueueExports, "export_csv", serverReports, 20+p.r.IntN(40)
	}
	out := make([]send, n)
	for i := range out {
		poison := p.r.Float64() < p.cfg.poisonRate
		out[i] = p.callOf(s, queue, tool, server, poison)
	}
	return out
}

// event is something the planner does at a virtual time; seq orders events of one instant
// by when they were scheduled, which keeps the plan deterministic.
type event struct {
	at   time.Duration
	seq  int
	fire func() []send
}

// eventQueue is a min-heap of events by (at, seq).
type eventQueue []*event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(*event)) }
func (q *eventQueue) Pop() any {
	old := *q
	ev := old[len(old)-1]
	*q = old[:len(old)-1]
	return ev
}
