package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// deadCall is one failed tool call of a takeover test's dead-letter queue.
type deadCall struct {
	id, tool, session string
}

// deadCalls are 24 failed calls in four sessions, fetch_url calls only in sess_0 and sess_1: a
// selection of fetch_url chooses some calls of a standard queue and two whole sessions of a FIFO
// queue, and leaves the rest.
func deadCalls() []deadCall {
	var calls []deadCall
	for i := range 24 {
		c := deadCall{id: fmt.Sprintf("tc_%02d", i), tool: []string{"web_search", "read_file"}[i%2], session: fmt.Sprintf("sess_%d", i%4)}
		if i%4 < 2 && i%3 == 0 {
			c.tool = "fetch_url"
		}
		calls = append(calls, c)
	}
	return calls
}

// chosenCalls reports which calls a selection of fetch_url takes: on a standard queue the
// fetch_url calls, on a FIFO queue every call of a session that holds one.
func chosenCalls(calls []deadCall, fifo bool) map[string]bool {
	sessions := map[string]bool{}
	for _, c := range calls {
		sessions[c.session] = sessions[c.session] || c.tool == "fetch_url"
	}
	out := map[string]bool{}
	for _, c := range calls {
		out[c.id] = fifo && sessions[c.session] || !fifo && c.tool == "fetch_url"
	}
	return out
}

// sendDeadCalls sends the calls straight to a dead-letter queue, in order, each session a FIFO
// group.
func sendDeadCalls(t *testing.T, client *sqs.Client, dlq string, calls []deadCall) {
	t.Helper()
	out, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(dlq)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range calls {
		in := &sqs.SendMessageInput{QueueUrl: out.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":%q,"toolName":%q,"sessionId":%q}`, c.id, c.tool, c.session))}
		if strings.HasSuffix(dlq, ".fifo") {
			in.MessageGroupId, in.MessageDeduplicationId = aws.String(c.session), aws.String(c.id)
		}
		if _, err := client.SendMessage(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
}

// byCall reads a queue's messages, in flight or not, without receiving them, by tool call id.
func byCall(t *testing.T, sim *sqsim.Simulator, queue string) map[string][]sqsim.MessageSnapshot {
	t.Helper()
	msgs, err := sim.Snapshot(queue)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]sqsim.MessageSnapshot{}
	for _, m := range msgs {
		var c struct {
			ToolCallID string `json:"toolCallId"`
		}
		json.Unmarshal([]byte(m.Body), &c)
		out[c.ToolCallID] = append(out[c.ToolCallID], m)
	}
	return out
}

// jobView is a selection job as GET /api/v1/queues/{queue}/redrives lists it.
type jobView struct {
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

// startJob posts a selective redrive or a discard to r and returns its id.
func startJob(t *testing.T, r *replica, path, body string) int64 {
	t.Helper()
	code, answer, err := r.post(t.Context(), path, body)
	if err != nil || code != http.StatusAccepted {
		t.Fatalf("%s: POST %s %s = %d, %v: %s; want 202", r.name, path, body, code, err, answer)
	}
	var job jobView
	if err := json.Unmarshal([]byte(answer), &job); err != nil || job.ID == 0 {
		t.Fatalf("%s: POST %s answered %s (%v); want a job", r.name, path, answer, err)
	}
	return job.ID
}

// waitJob reads the job's list through r until the job has ended.
func waitJob(t *testing.T, r *replica, dlq string, id int64) jobView {
	t.Helper()
	var ended jobView
	eventually(t, 60*time.Second, fmt.Sprintf("job %d ending", id), func() (bool, string, error) {
		code, body, err := httpGet(t.Context(), r.url+"/api/v1/queues/"+dlq+"/redrives")
		if err != nil || code != http.StatusOK {
			return false, fmt.Sprintf("%d %.300s", code, body), err
		}
		var list struct {
			Redrives []jobView `json:"redrives"`
		}
		if err := json.Unmarshal(body, &list); err != nil {
			return false, string(body), err
		}
		for _, j := range list.Redrives {
			if j.ID == id {
				ended = j
				return !j.Running, fmt.Sprintf("%+v", j), nil
			}
		}
		return false, fmt.Sprintf("%.300s", body), nil
	})
	return ended
}

// knowsDLQ waits until r's collector knows queue as a dead-letter queue.
func knowsDLQ(t *testing.T, r *replica, queue string) {
	t.Helper()
	eventually(t, 30*time.Second, r.name+" knowing "+queue+" as a dead-letter queue", func() (bool, string, error) {
		code, body, err := httpGet(t.Context(), r.url+"/api/v1/queues/"+queue)
		var q struct {
			IsDeadLetterQueue bool `json:"isDeadLetterQueue"`
		}
		if err == nil && code == http.StatusOK {
			err = json.Unmarshal(body, &q)
		}
		return q.IsDeadLetterQueue, fmt.Sprintf("%d %.200s", code, body), err
	})
}

// TestLeaderKilledMidJob runs two `dashboard serve` processes on one PostgreSQL database and
// starts a selective redrive of a FIFO DLQ on the leader while a gate holds its sends. Once every
// message the leader holds is journaled, the leader is killed (SIGKILL), then the gate opens: the
// follower takes the lead and resumes the job from the journal, releasing what the dead leader
// held and sending again, with the job's deduplication ids, what it was sending. When the job
// has ended, COMPLETED, each chosen call is in the source queue once and in its session's order,
// every other call is in the DLQ alone and visible, and the job's counts add up.
func TestLeaderKilledMidJob(t *testing.T) {
	t.Parallel()
	if suite.unavailable != "" {
		t.Skip(suite.unavailable)
	}
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	db := pgtest.DB(t)

	sim := sqsim.New(sqsim.Options{Seed: 13})
	ctx, stopSim := context.WithCancel(context.Background())
	defer stopSim()
	go sim.Run(ctx)
	gate := newSendGate(sim)
	defer gate.release() // before the replicas stop: a held send would hold their shutdown
	simSrv := httptest.NewServer(sim)
	defer simSrv.Close()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(simSrv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	const source, dlq = "calls.fifo", "calls-dlq.fifo"
	if _, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(dlq),
		Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(source), Attributes: map[string]string{
		"FifoQueue": "true", "RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:` + dlq + `","maxReceiveCount":3}`}}); err != nil {
		t.Fatal(err)
	}
	calls := deadCalls()
	sendDeadCalls(t, client, dlq, calls)
	want := chosenCalls(calls, true)

	// No peeks: a peek holds messages that the job would then miss.
	a := startReplica(t, "a", db, gate, "--peek", "none")
	b := startReplica(t, "b", db, gate, "--peek", "none")
	var leader, follower *replica
	eventually(t, 30*time.Second, "one replica collecting", func() (bool, string, error) {
		ca, cb := a.aws.collectorCalls(), b.aws.collectorCalls()
		switch {
		case ca > 0 && cb == 0:
			leader, follower = a, b
		case cb > 0 && ca == 0:
			leader, follower = b, a
		}
		return leader != nil, fmt.Sprintf("collector calls through a: %d, through b: %d", ca, cb), nil
	})
	knowsDLQ(t, leader, dlq)
	id := startJob(t, leader, "/api/v1/queues/"+dlq+"/redrives", `{"destination":"`+source+`","selection":{"tools":["fetch_url"]}}`)
	select {
	case <-gate.arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("the leader sent nothing within 60 s")
	}

	// Kill the leader once it can receive nothing more and has journaled all it received: what
	// a dead process held unjournaled only comes back at its hold's end, after this job.
	st, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eventually(t, 30*time.Second, "the leader journaling every message it holds", func() (bool, string, error) {
		inFlight, busy := map[string]string{}, map[string]bool{}
		msgs, err := sim.Snapshot(dlq)
		if err != nil {
			return false, "", err
		}
		for _, m := range msgs {
			if m.InFlight {
				inFlight[m.MessageID] = m.GroupID
				busy[m.GroupID] = true
			}
		}
		for _, m := range msgs {
			if !m.InFlight && !busy[m.GroupID] {
				return false, "a session still to receive: " + m.GroupID, nil
			}
		}
		journal, err := st.JournalOf(t.Context(), id, slices.Collect(maps.Keys(inFlight)))
		if err != nil {
			return false, "", err
		}
		return len(journal) == len(inFlight), fmt.Sprintf("%d in flight, %d journaled", len(inFlight), len(journal)), nil
	})
	counts, err := st.JournalCounts(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the leader's journal at the kill: %v", counts)
	if counts[store.JournalSending] == 0 {
		t.Fatalf("the leader's journal holds nothing sending at the kill (%v); want the held send", counts)
	}
	if err := leader.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-leader.done
	gate.release()

	ended := waitJob(t, follower, dlq, id)
	t.Logf("ended on the follower: %+v", ended)
	if ended.Status != string(store.MoveTaskCompleted) {
		t.Errorf("the resumed job ended %s (%q); want COMPLETED", ended.Status, ended.FailureReason)
	}
	if n := follower.aws.count("SendMessageBatch"); n == 0 {
		t.Errorf("the follower sent nothing; want it to have resumed the job")
	}
	inSource, inDLQ := byCall(t, sim, source), byCall(t, sim, dlq)
	var chosen, left int64
	for _, c := range calls {
		s, d := inSource[c.id], inDLQ[c.id]
		switch {
		case want[c.id] && (len(s) != 1 || len(d) != 0):
			t.Errorf("%s (%s, chosen): %d in %s, %d in %s; want it in %s once", c.id, c.tool, len(s), source, len(d), dlq, source)
		case !want[c.id] && (len(s) != 0 || len(d) != 1):
			t.Errorf("%s (%s, left): %d in %s, %d in %s; want it in %s alone", c.id, c.tool, len(s), source, len(d), dlq, dlq)
		case !want[c.id] && d[0].InFlight:
			t.Errorf("%s (%s, left): still in flight in %s after the job ended; want it visible", c.id, c.tool, dlq)
		}
		if want[c.id] {
			chosen++
		} else {
			left++
		}
	}
	msgs, err := sim.Snapshot(source)
	if err != nil {
		t.Fatal(err)
	}
	bySession := map[string][]string{}
	for _, m := range msgs {
		var c struct {
			ToolCallID string `json:"toolCallId"`
		}
		json.Unmarshal([]byte(m.Body), &c)
		bySession[m.GroupID] = append(bySession[m.GroupID], c.ToolCallID)
	}
	for session, ids := range bySession {
		if !slices.IsSorted(ids) {
			t.Errorf("%s holds %s as %v; want the session's order", source, session, ids)
		}
	}
	// A session the job holds is not received further (FIFO), so it may hold fewer than it left;
	// whatever it held, it released.
	if sel := ended.Selection; ended.Moved != chosen || sel.Matched != chosen || sel.Failed != 0 || sel.Held > left || sel.Released != sel.Held {
		t.Errorf("the job counts %d moved, %d matched, %d failed, %d held, %d released; want %d moved and matched, none failed, at most %d held, all released",
			ended.Moved, sel.Matched, sel.Failed, sel.Held, sel.Released, chosen, left)
	}
}

// archiveWrite is what a discard's first write to the archive carries on PostgreSQL's wire.
var archiveWrite = []byte("INSERT INTO archived_messages")

// storeDoor is a TCP door in front of PostgreSQL that falls, as a stopped server does for its
// clients, when the first write to the archive comes through: it ends every connection (the
// write's before the write reaches the server) and refuses new ones until it is raised again.
// It falls once: raised, it lets the archive's writes through.
type storeDoor struct {
	url    string // the database's URL through the door
	target string // the server's address
	ln     net.Listener
	fell   chan struct{}

	mu     sync.Mutex
	fallen bool // once
	down   bool
	conns  map[net.Conn]bool
}

func newStoreDoor(t *testing.T, db string) *storeDoor {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &storeDoor{target: u.Host, ln: ln, fell: make(chan struct{}), conns: map[net.Conn]bool{}}
	u.Host = ln.Addr().String()
	d.url = u.String()
	t.Cleanup(d.close)
	go d.serve()
	return d
}

func (d *storeDoor) serve() {
	for {
		client, err := d.ln.Accept()
		if err != nil {
			return
		}
		d.mu.Lock()
		down := d.down
		d.mu.Unlock()
		if down {
			client.Close()
			continue
		}
		server, err := net.Dial("tcp", d.target)
		if err != nil {
			client.Close()
			continue
		}
		d.mu.Lock()
		if d.down { // it fell while this one was dialled
			d.mu.Unlock()
			client.Close()
			server.Close()
			continue
		}
		d.conns[client], d.conns[server] = true, true
		d.mu.Unlock()
		go d.pipe(server, client, true)
		go d.pipe(client, server, false)
	}
}

// pipe copies from src to dst; toServer watches for the archive's write, which drops the door.
func (d *storeDoor) pipe(dst, src net.Conn, toServer bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 64<<10)
	var tail []byte // the end of the previous read: the write may straddle two
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if toServer && bytes.Contains(append(tail, buf[:n]...), archiveWrite) && d.fall() {
				return
			}
			if toServer {
				tail = append(tail[:0], buf[max(0, n-len(archiveWrite)):n]...)
			}
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// fall ends every connection through the door and refuses new ones, the first time it is
// called; it reports whether it fell.
func (d *storeDoor) fall() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fallen {
		return false
	}
	d.fallen, d.down = true, true
	close(d.fell)
	for c := range d.conns {
		c.Close()
		delete(d.conns, c)
	}
	return true
}

// close ends every connection through the door.
func (d *storeDoor) close() {
	d.ln.Close()
	d.mu.Lock()
	defer d.mu.Unlock()
	for c := range d.conns {
		c.Close()
	}
}

// raise lets connections through again.
func (d *storeDoor) raise() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.down = false
}

// TestDiscardWhileTheStoreIsDown runs `dashboard serve` on PostgreSQL through a door that falls
// when the first write to the archive of a discard comes through: the store is unreachable at
// the step that would make a message safe to delete. The discard deletes nothing from the DLQ
// (no DeleteMessageBatch reaches SQS), the archive and the journal hold no half-done write, and
// once the hold of the discard's receives has ended every call is visible in the DLQ again.
// When the store is back, the replica leads again and resumes the discard from its journal:
// each chosen call ends archived once and out of the DLQ, the others stay visible in it.
func TestDiscardWhileTheStoreIsDown(t *testing.T) {
	t.Parallel()
	if suite.unavailable != "" {
		t.Skip(suite.unavailable)
	}
	if suite.buildErr != nil {
		t.Fatal(suite.buildErr)
	}
	db := pgtest.DB(t)
	door := newStoreDoor(t, db)

	// The simulator's clock stands at the wall clock's time and moves only when told, so that
	// a hold ends when the test says.
	w := actionstest.New(t)
	w.Advance(time.Since(w.Now()))
	const source, dlq = "calls", "calls-dlq"
	w.CreateQueue(t, dlq, "", nil)
	w.CreateQueue(t, source, dlq, nil)
	calls := deadCalls()
	sendDeadCalls(t, w.SQS, dlq, calls)
	want := chosenCalls(calls, false)

	r := startReplica(t, "a", door.url, w.Sim, "--peek", "none")
	knowsDLQ(t, r, dlq)
	id := startJob(t, r, "/api/v1/queues/"+dlq+"/discards", `{"selection":{"tools":["fetch_url"]}}`)
	select {
	case <-door.fell:
	case <-time.After(60 * time.Second):
		t.Fatal("the discard wrote nothing to the archive within 60 s")
	}
	// The replica loses its lead with its connections, and stops its engine before it says so.
	eventually(t, 30*time.Second, "the replica giving up the lead", func() (bool, string, error) {
		log, err := os.ReadFile(r.log)
		return bytes.Contains(log, []byte("replicas: this replica no longer leads")), "", err
	})

	if n := r.aws.count("DeleteMessageBatch"); n != 0 {
		t.Errorf("%d DeleteMessageBatch calls while the store was down; want none", n)
	}
	st, err := store.Open(t.Context(), db) // past the door: the server itself is up
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if archived, err := st.ArchivedMessages(t.Context(), store.ArchiveFilter{}); err != nil || len(archived) != 0 {
		t.Errorf("the archive holds %d messages (%v); want none: its write did not commit", len(archived), err)
	}
	counts, err := st.JournalCounts(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the journal while the store is down: %v", counts)
	if counts[store.JournalSent]+counts[store.JournalDeleted] != 0 || counts[store.JournalSending] == 0 {
		t.Errorf("the journal counts %v; want the archived batch still sending, nothing sent or deleted", counts)
	}
	inDLQ := byCall(t, w.Sim, dlq)
	inFlight := 0
	for _, c := range calls {
		if len(inDLQ[c.id]) != 1 {
			t.Errorf("%s: %d in %s while the store is down; want it there once", c.id, len(inDLQ[c.id]), dlq)
		} else if inDLQ[c.id][0].InFlight {
			inFlight++
		}
	}
	// The engine releases the batch whose archive failed at once, but another worker's receive
	// may take it again and, the store down, cannot journal it: what the workers held comes back
	// when the hold (the engine's default, 10 minutes) ends.
	t.Logf("%d of %d calls in flight while the store is down", inFlight, len(calls))
	sending, err := st.JournalInState(t.Context(), id, store.JournalSending, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range sending {
		for _, m := range inDLQ[e.ToolCallID] {
			t.Logf("%s, whose archive failed: in flight %v, received %d times", e.ToolCallID, m.InFlight, m.ReceiveCount)
		}
	}
	w.Advance(10*time.Minute + time.Second)
	for id, ms := range byCall(t, w.Sim, dlq) {
		for _, m := range ms {
			if m.InFlight {
				t.Errorf("%s: in flight in %s after the hold ended; want it visible", id, dlq)
			}
		}
	}

	door.raise()
	ended := waitJob(t, r, dlq, id)
	t.Logf("ended once the store was back: %+v", ended)
	if ended.Status != string(store.MoveTaskCompleted) {
		t.Errorf("the discard ended %s (%q); want COMPLETED once the store was back", ended.Status, ended.FailureReason)
	}
	archived, err := st.ArchivedMessages(t.Context(), store.ArchiveFilter{})
	if err != nil {
		t.Fatal(err)
	}
	archivedCalls := map[string]int{}
	for _, m := range archived {
		archivedCalls[m.ToolCallID]++
	}
	inDLQ = byCall(t, w.Sim, dlq)
	var chosen int64
	for _, c := range calls {
		a, d := archivedCalls[c.id], inDLQ[c.id]
		switch {
		case want[c.id] && (a != 1 || len(d) != 0):
			t.Errorf("%s (%s, chosen): archived %d times, %d in %s; want it archived once and gone", c.id, c.tool, a, len(d), dlq)
		case !want[c.id] && (a != 0 || len(d) != 1 || d[0].InFlight):
			t.Errorf("%s (%s, left): archived %d times, %d in %s (%+v); want it visible in %s alone", c.id, c.tool, a, len(d), dlq, d, dlq)
		}
		if want[c.id] {
			chosen++
		}
	}
	if ended.Moved != chosen || ended.Selection.Matched != chosen {
		t.Errorf("the discard counts %d moved, %d matched; want %d", ended.Moved, ended.Selection.Matched, chosen)
	}
}
