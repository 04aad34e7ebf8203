package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

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
