package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// jobCall is one failed tool call of TestKillDuringSelectiveRedrive's dead-letter queue.
type jobCall struct {
	id, tool, group string
	seq             int
}

// jobCalls are 24 failed calls in four sessions: fetch_url calls only in sess_0 and sess_1, so
// that a selection of fetch_url chooses some calls of a standard queue and two whole sessions of
// a FIFO queue, and leaves the rest.
func jobCalls() []jobCall {
	var calls []jobCall
	for i := range 24 {
		c := jobCall{id: fmt.Sprintf("tc_%02d", i), tool: []string{"web_search", "read_file"}[i%2], group: fmt.Sprintf("sess_%d", i%4), seq: i}
		if i%4 < 2 && i%3 == 0 {
			c.tool = "fetch_url"
		}
		calls = append(calls, c)
	}
	return calls
}

// selected reports which calls a selection of fetch_url moves: on a standard queue the
// fetch_url calls, on a FIFO queue every call of a session that holds one.
func selected(calls []jobCall, fifo bool) map[string]bool {
	groups := map[string]bool{}
	for _, c := range calls {
		if c.tool == "fetch_url" {
			groups[c.group] = true
		}
	}
	out := map[string]bool{}
	for _, c := range calls {
		out[c.id] = fifo && groups[c.group] || !fifo && c.tool == "fetch_url"
	}
	return out
}

// killingFront is the front door between `dashboard serve` and the simulator: it kills the
// process (SIGKILL) when the first call of an operation arrives, before or after the simulator
// handled it, and breaks every call that arrives after that until it is reopened, so that
// nothing the dying process asks reaches AWS.
type killingFront struct {
	*httptest.Server
	sim     http.Handler
	op      string // X-Amz-Target of the call to kill at
	reached bool   // whether that call reaches the simulator before the kill

	mu     sync.Mutex
	victim *dashboardProcess
	armed  bool
	closed bool
	killed chan struct{}
}

func newKillingFront(t *testing.T, sim http.Handler, op string, reached bool) *killingFront {
	f := &killingFront{sim: sim, op: op, reached: reached, armed: true, killed: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		kill := f.armed && r.Header.Get("X-Amz-Target") == f.op
		if kill {
			f.armed, f.closed = false, true
		}
		closed, victim := f.closed, f.victim
		f.mu.Unlock()
		switch {
		case kill:
			if f.reached {
				f.sim.ServeHTTP(httptest.NewRecorder(), r)
			}
			victim.kill(t)
			close(f.killed)
		case !closed:
			f.sim.ServeHTTP(rw, r)
			return
		}
		if conn, _, err := rw.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// serve makes p the process to kill.
func (f *killingFront) serve(p *dashboardProcess) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.victim = p
}

// reopen lets calls through again, for the next process.
func (f *killingFront) reopen() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = false
}

// TestKillDuringSelectiveRedrive kills `dashboard serve` (SIGKILL) at each step of a selective
// redrive that can be lost: when the first SendMessageBatch arrives, before SQS took it (the
// journal says sending, nothing was sent) or after (sending, and the messages are in the source
// queue already: the answer was lost); when the first DeleteMessageBatch arrives, before SQS took
// it (sent: the messages are in both queues) or after (sent, and they left the DLQ). A new
// process on the same database resumes the job from its journal. When it has ended, each
// selected call is in exactly one queue (its source, or still the DLQ), a FIFO source holds it
// once and in its session's order, a standard one at most twice when its send was under way
// (SQS's at-least-once); every call the selection left is in the DLQ and visible; and the audit
// log holds the start's intent and its outcome.
func TestKillDuringSelectiveRedrive(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the dashboard as a process")
	}
	const (
		opSend   = "AmazonSQS.SendMessageBatch"
		opDelete = "AmazonSQS.DeleteMessageBatch"
	)
	tests := []struct {
		name    string
		fifo    bool
		op      string
		reached bool
		// journaled is the state the journal holds for the calls of the killed batch.
		journaled string
	}{
		{"standard, send not reached", false, opSend, false, store.JournalSending},
		{"standard, send answer lost", false, opSend, true, store.JournalSending},
		{"standard, delete not reached", false, opDelete, false, store.JournalSent},
		{"standard, delete answer lost", false, opDelete, true, store.JournalSent},
		{"fifo, send not reached", true, opSend, false, store.JournalSending},
		{"fifo, send answer lost", true, opSend, true, store.JournalSending},
		{"fifo, delete not reached", true, opDelete, false, store.JournalSent},
		{"fifo, delete answer lost", true, opDelete, true, store.JournalSent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			w := actionstest.New(t)
			// The simulator's clock stands where the child's wall clock is; it does not move
			// after that, so that what the killed process held stays held.
			w.Advance(time.Since(w.Now()))
			source, dlq := "calls", "calls-dlq"
			if tt.fifo {
				source, dlq = "calls.fifo", "calls-dlq.fifo"
			}
			w.CreateQueue(t, dlq, "", map[string]string{"MessageRetentionPeriod": "1209600"})
			w.CreateQueue(t, source, dlq, nil)
			calls := jobCalls()
			deadLetterCalls(t, w, source, calls)
			want := selected(calls, tt.fifo)

			front := newKillingFront(t, w.Sim, tt.op, tt.reached)
			db := filepath.Join(t.TempDir(), "toolq.db")
			args := []string{"--endpoint-url", front.URL, "--region", actionstest.Region, "--db", db, "--peek", "none"}
			first := startDashboard(t, args...)
			front.serve(first)
			code, body := postJSON(t, first.base+"/api/v1/queues/"+dlq+"/redrives", `{"selection":{"tools":["fetch_url"]}}`)
			if code != http.StatusAccepted {
				t.Fatalf("start: %d %s; want 202", code, body)
			}
			var started struct {
				ID   int64  `json:"id"`
				Kind string `json:"kind"`
			}
			if err := json.Unmarshal([]byte(body), &started); err != nil || started.Kind != "selection" {
				t.Fatalf("start answered %s (%v); want a redrive of kind selection", body, err)
			}
			select {
			case <-front.killed:
			case <-first.exited:
				// The front kills the process before it says so.
				select {
				case <-front.killed:
				case <-time.After(20 * time.Second):
					t.Fatalf("the dashboard ended before %s reached AWS", tt.op)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("no %s within 60 s", tt.op)
			}

			// What the killed process left: the job RUNNING, the killed batch journaled.
			st, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			job, err := st.GetSelectionJob(ctx, started.ID)
			if err != nil || job.Status != store.MoveTaskRunning {
				t.Fatalf("after the kill: job %+v, %v; want it RUNNING", job, err)
			}
			// The dead process's journal, by tool call: what it may have done to each call.
			dlqIDs := map[string]string{} // message id in the DLQ → tool call id
			for id, ms := range place(t, w, dlq) {
				for _, m := range ms {
					dlqIDs[m.MessageID] = id
				}
			}
			journal := journalByCall(t, st, started.ID, dlqIDs)
			st.Close()
			t.Logf("journal after the kill: %v", journal)
			if !slices.Contains(slices.Collect(maps.Values(journal)), tt.journaled) {
				t.Errorf("after the kill: no journal entry %s; want the killed batch's", tt.journaled)
			}

			front.reopen()
			second := startDashboard(t, args...)
			front.serve(second)
			ended := waitJobEnded(t, second.base, dlq, started.ID)
			t.Logf("ended: %+v", ended)
			if ended.Status != string(store.MoveTaskCompleted) {
				t.Errorf("the resumed job ended %s (%q); want COMPLETED", ended.Status, ended.FailureReason)
			}

			var moved int64
			inSource := place(t, w, source)
			inDLQ := place(t, w, dlq)
			for _, c := range calls {
				s, d := inSource[c.id], inDLQ[c.id]
				switch {
				case !want[c.id] && (len(s) != 0 || len(d) != 1):
					t.Errorf("%s (%s, not selected): %d in %s, %d in %s; want it in the DLQ alone", c.id, c.tool, len(s), source, len(d), dlq)
				case want[c.id] && len(s) > 0 && len(d) > 0:
					t.Errorf("%s (%s, selected): %d in %s and %d in %s (in flight: %v); want it in one of them", c.id, c.tool, len(s), source, len(d), dlq, d)
				case want[c.id] && len(s)+len(d) == 0:
					t.Errorf("%s (%s, selected): lost, in neither queue", c.id, c.tool)
				case want[c.id] && tt.fifo && len(s) > 1:
					t.Errorf("%s: %d copies in %s; a FIFO queue must hold it once", c.id, len(s), source)
				case want[c.id] && len(s) > 2:
					t.Errorf("%s: %d copies in %s; at most one duplicate", c.id, len(s), source)
				case want[c.id] && len(s) == 2 && journal[c.id] != store.JournalSending:
					t.Errorf("%s: a duplicate in %s, though its send was not under way at the kill (journal: %q)", c.id, source, journal[c.id])
				}
				if want[c.id] && len(s) > 0 {
					moved++
				}
				// A call the dead process received and had not journaled yet is held until
				// its hold ends: nothing knows its receipt handle. Every other is visible.
				for _, m := range d {
					if _, journaled := journal[c.id]; m.InFlight && journaled {
						t.Errorf("%s (journaled %s by the killed process): still in flight in %s after the job ended; want it visible", c.id, journal[c.id], dlq)
					}
				}
			}
			if tt.fifo {
				checkSessionOrder(t, w, source)
			}
			// Moved counts what left the DLQ for the source; once the job has ended, what it
			// matched is what it moved and what it could not.
			if ended.Moved != moved || ended.Selection.Matched != ended.Moved+ended.Selection.Failed {
				t.Errorf("the job counts %d moved, %d matched, %d failed; want %d moved (the selected calls in %s), matched = moved + failed",
					ended.Moved, ended.Selection.Matched, ended.Selection.Failed, moved, source)
			}
			checkStartAudited(t, second.base, dlq)
		})
	}
}

// deadLetterCalls sends the calls to source (whose maxReceiveCount is 1) and receives them
// until each has moved to its dead-letter queue.
func deadLetterCalls(t *testing.T, w *actionstest.World, source string, calls []jobCall) {
	t.Helper()
	ctx := context.Background()
	out, err := w.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(source)})
	if err != nil {
		t.Fatal(err)
	}
	fifo := strings.HasSuffix(source, ".fifo")
	for _, c := range calls {
		in := &sqs.SendMessageInput{QueueUrl: out.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":%q,"toolName":%q,"sessionId":%q,"sequenceNumber":%d}`, c.id, c.tool, c.group, c.seq))}
		if fifo {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(c.group), aws.String(c.id)
		}
		if _, err := w.SQS.SendMessage(ctx, in); err != nil {
			t.Fatalf("SendMessage: %v", err)
		}
	}
	for round := 0; w.Count(t, source) > 0; round++ {
		if round > 4*len(calls)+10 {
			t.Fatal("the calls did not reach the dead-letter queue")
		}
		if _, err := w.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl, MaxNumberOfMessages: 10, VisibilityTimeout: 1}); err != nil {
			t.Fatal(err)
		}
		w.Advance(2 * time.Second)
	}
}

// journalByCall reads every state of a job's journal, by the tool call id of its DLQ message.
func journalByCall(t *testing.T, st *store.Store, jobID int64, callOfMessage map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, state := range []string{store.JournalHeld, store.JournalReleased, store.JournalSending, store.JournalSent, store.JournalDeleted, store.JournalFailed} {
		entries, err := st.JournalInState(context.Background(), jobID, state, "", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			id, ok := callOfMessage[e.MessageID]
			if !ok {
				id = e.ToolCallID // deleted from the DLQ already
			}
			out[id] = state
		}
	}
	return out
}

// callOf is the tool call id in a message's body.
func callOf(body string) string {
	var c struct {
		ToolCallID string `json:"toolCallId"`
	}
	json.Unmarshal([]byte(body), &c)
	return c.ToolCallID
}

// place reads a queue's messages, in flight or not, without receiving them, by tool call id.
func place(t *testing.T, w *actionstest.World, queue string) map[string][]sqsim.MessageSnapshot {
	t.Helper()
	msgs, err := w.Sim.Snapshot(queue)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sqsim.MessageSnapshot{}
	for _, m := range msgs {
		out[callOf(m.Body)] = append(out[callOf(m.Body)], m)
	}
	return out
}

// checkSessionOrder checks that a FIFO queue holds each session's calls in the order they were
// made.
func checkSessionOrder(t *testing.T, w *actionstest.World, queue string) {
	t.Helper()
	msgs, err := w.Sim.Snapshot(queue)
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string][]string{}
	for _, m := range msgs {
		bySession[m.GroupID] = append(bySession[m.GroupID], callOf(m.Body))
	}
	for group, ids := range bySession {
		if !slices.IsSorted(ids) {
			t.Errorf("%s holds %s as %v; want the session's order", queue, group, ids)
		}
	}
}

// endedJob is a selective redrive as GET /api/v1/queues/{queue}/redrives lists it.
type endedJob struct {
	ID            int64  `json:"id"`
	Kind          string `json:"kind"`
	Status        string `json:"status"`
	Running       bool   `json:"running"`
	Moved         int64  `json:"moved"`
	FailureReason string `json:"failureReason"`
	Selection     struct {
		Matched  int64 `json:"matched"`
		Held     int64 `json:"held"`
		Released int64 `json:"released"`
		Failed   int64 `json:"failed"`
	} `json:"selection"`
}

// waitJobEnded polls the API until the job has ended; it fails the test after 60 s.
func waitJobEnded(t *testing.T, base, dlq string, id int64) endedJob {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var list struct {
			Redrives []endedJob `json:"redrives"`
		}
		code, body := getJSON(t, base+"/api/v1/queues/"+dlq+"/redrives", &list)
		for _, r := range list.Redrives {
			if r.ID == id && !r.Running {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job %d did not end within 60 s: %d %s", id, code, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkStartAudited checks that the audit log holds the start of the DLQ's selective redrive:
// its intent, with the selection, and its accepted outcome.
func checkStartAudited(t *testing.T, base, dlq string) {
	t.Helper()
	checkSelectionAudited(t, base, dlq, actions.ActionStartRedrive)
}

// checkSelectionAudited checks that the audit log holds the start of a job of the DLQ by its
// action (a selective redrive's, a discard's): its intent, with the selection, and its accepted
// outcome.
func checkSelectionAudited(t *testing.T, base, dlq, action string) {
	t.Helper()
	var audit struct {
		Entries []struct {
			ID       int64          `json:"id"`
			Action   string         `json:"action"`
			Queue    string         `json:"queue"`
			Params   map[string]any `json:"params"`
			Result   string         `json:"result"`
			IntentID *int64         `json:"intentId"`
		} `json:"entries"`
	}
	if code, body := getJSON(t, base+"/api/v1/audit", &audit); code != http.StatusOK {
		t.Fatalf("GET /api/v1/audit: %d %s", code, body)
	}
	var intent int64
	for _, e := range audit.Entries {
		if e.Action == action && e.Queue == dlq && e.Result == "intent" && e.Params["selection"] != nil {
			intent = e.ID
		}
	}
	if intent == 0 {
		t.Fatalf("the audit log has no intent of the start with its selection: %+v", audit.Entries)
	}
	for _, e := range audit.Entries {
		if e.IntentID != nil && *e.IntentID == intent {
			if e.Result != store.AuditAccepted {
				t.Errorf("the start's outcome is %s; want accepted", e.Result)
			}
			return
		}
	}
	t.Errorf("the audit log has no outcome of the start's intent %d: %+v", intent, audit.Entries)
}

// postJSON posts a JSON body; code 0 when the connection broke before an answer.
func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// getJSON reads a JSON answer into v.
func getJSON(t *testing.T, url string, v any) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode, string(b)
}
