package actions_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/awsconf"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// rawDB opens the world's database file beside the store, as another program would.
func rawDB(t *testing.T, w *actionstest.World) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func execRaw(t *testing.T, db *sql.DB, q string) {
	t.Helper()
	if _, err := db.ExecContext(context.Background(), q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// auditEntries returns the whole audit log, oldest first.
func auditEntries(t *testing.T, w *actionstest.World) []store.AuditEntry {
	t.Helper()
	entries, err := w.Store.ListAudit(context.Background(), store.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return entries
}

// results lists "action result" of each entry, oldest first.
func results(entries []store.AuditEntry) []string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Action+" "+e.Result)
	}
	return out
}

// TestIntentIsWrittenBeforeAWSIsCalled: when StartMessageMoveTask and CancelMessageMoveTask
// reach the endpoint, their intent is already in the audit log; the outcome follows and names it.
func TestIntentIsWrittenBeforeAWSIsCalled(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	var mu sync.Mutex
	seen := map[string][]string{} // operation → the audit log as the endpoint saw it arrive
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS."); ok && strings.HasSuffix(op, "MessageMoveTask") && op != "ListMessageMoveTasks" {
			mu.Lock()
			seen[op] = results(auditEntries(t, w))
			mu.Unlock()
		}
		w.Sim.ServeHTTP(rw, r)
	}))
	t.Cleanup(front.Close)
	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{actionstest.Region: sqsClient(front.URL, aws.NopRetryer{})}, Store: w.Store, Now: w.Now})
	ctx := context.Background()
	if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CancelRedrive(ctx, operator, "orders-dlq"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(seen["StartMessageMoveTask"], ", "); got != "redrive.start intent" {
		t.Errorf("the audit log when StartMessageMoveTask arrived: %q; want the start's intent alone", got)
	}
	if got := strings.Join(seen["CancelMessageMoveTask"], ", "); got != "redrive.start intent, redrive.start accepted, redrive.cancel intent" {
		t.Errorf("the audit log when CancelMessageMoveTask arrived: %q", got)
	}
	entries := auditEntries(t, w)
	if len(entries) != 4 || entries[1].IntentID != entries[0].ID || entries[3].IntentID != entries[2].ID || entries[0].IntentID != 0 {
		t.Fatalf("audit = %+v; want two intents, each followed by the outcome that names it", entries)
	}
	if entries[1].MoveTaskID == 0 || entries[1].MoveTaskID != entries[3].MoveTaskID {
		t.Errorf("outcomes name move tasks %d and %d; want the started task in both", entries[1].MoveTaskID, entries[3].MoveTaskID)
	}
}

// sqsClient is a stock SQS client on an endpoint, with a retryer.
func sqsClient(endpoint string, r aws.Retryer) *sqs.Client {
	return sqs.New(sqs.Options{Region: actionstest.Region, BaseEndpoint: aws.String(endpoint), Retryer: r,
		Credentials: aws.AnonymousCredentials{}})
}

// TestActionRefusedWhenTheAuditCannotBeWritten: a database that refuses audit rows (a write
// failure as a full disk gives one, or a table dropped by hand) refuses the action before AWS
// is called: 503-kind refusal, no move task, no message moved.
func TestActionRefusedWhenTheAuditCannotBeWritten(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		breakIt string
	}{
		{"writes fail", `CREATE TRIGGER full BEFORE INSERT ON audit_log BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`},
		{"audit table missing", `DROP TABLE audit_log`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			svc := w.Actions(actions.Options{})
			execRaw(t, rawDB(t, w), tt.breakIt)
			w.Sim.ResetCallCounts()
			_, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
			wantRefusal(t, err, "audit_unavailable", actions.Unavailable)
			for _, op := range []string{"StartMessageMoveTask", "ListMessageMoveTasks", "GetQueueUrl"} {
				if n := w.Sim.CallCount(op); n != 0 {
					t.Errorf("%d %s calls; want none before the intent is written", n, op)
				}
			}
			if got := liveTasks(t, w, "orders-dlq"); len(got) != 0 {
				t.Errorf("move tasks %v after a refused start", got)
			}
			if got := w.Count(t, "orders-dlq"); got != 25 {
				t.Errorf("orders-dlq holds %d; want 25", got)
			}
			_, err = svc.CancelRedrive(context.Background(), operator, "orders-dlq")
			wantRefusal(t, err, "audit_unavailable", actions.Unavailable)
			// A preview's token is given only with its audit entry.
			p, err := w.Actions(actions.Options{Confirmations: testSigner("key")}).PreviewRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
			wantRefusal(t, err, "audit_unavailable", actions.Unavailable)
			if p.Token != "" {
				t.Error("a preview the audit log does not hold gave a token")
			}
		})
	}
}

// breakAfter is an endpoint in front of the simulator that lets one operation through, lets
// time pass there (advance) and breaks the connection before the answer reaches the client: a
// real network failure after the work was done, not a mock of the SDK.
func breakAfter(t *testing.T, w *actionstest.World, op string, times int, advance time.Duration) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		broken := r.Header.Get("X-Amz-Target") == "AmazonSQS."+op && times > 0
		if broken {
			times--
		}
		mu.Unlock()
		if !broken {
			w.Sim.ServeHTTP(rw, r)
			return
		}
		w.Sim.ServeHTTP(httptest.NewRecorder(), r)
		w.Advance(advance)
		conn, _, err := rw.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(front.Close)
	return front
}

// TestLostStartResponse: StartMessageMoveTask started the task, which moved its 100 messages
// before the answer was lost. The SDK's retryer (five attempts, as toolq configures it) would
// have started a second, empty task; the action looks at ListMessageMoveTasks instead, answers
// with the task that ran and audits it as accepted. The client's retry with the same key gets
// the same answer: one press, one task.
func TestLostStartResponse(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.DeadLetter(t, "orders", 75) // 100 in orders-dlq
	front := breakAfter(t, w, "StartMessageMoveTask", 1, 30*time.Second)
	clients, err := awsconf.Load(context.Background(), awsconf.Options{Region: actionstest.Region, EndpointURL: front.URL,
		StaticCredentials: true, MaxBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{actionstest.Region: clients.ActionsSQS}, Store: w.Store, Now: w.Now})
	req := actions.StartRedriveRequest{Queue: "orders-dlq", IdempotencyKey: "press-1"}
	task, err := svc.StartRedrive(context.Background(), operator, req)
	if err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	if task.Status != store.MoveTaskCompleted || task.Moved != 100 || task.ID == 0 {
		t.Errorf("task = %+v; want the COMPLETED task that moved 100", task)
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
		t.Fatalf("move tasks in SQS = %v; want exactly one", got)
	}
	e := lastAudit(t, w)
	if e.Result != store.AuditAccepted || e.MoveTaskID != task.ID || !strings.Contains(e.Detail, "answer did not reach toolq") {
		t.Errorf("outcome = %+v; want accepted, naming the task, saying the answer was lost", e)
	}
	// The client lost toolq's answer too, and sends the same press again.
	again, err := svc.StartRedrive(context.Background(), operator, req)
	if err != nil || again.ID != task.ID {
		t.Fatalf("repeat = %+v, %v; want the same task", again, err)
	}
	if task.Repeat || !again.Repeat {
		t.Errorf("first answer marked a repeat: %v, the repeat: %v; want false, true", task.Repeat, again.Repeat)
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
		t.Errorf("move tasks after the repeat = %v; want exactly one", got)
	}
	if e := lastAudit(t, w); e.Result != store.AuditRepeated || e.IdempotencyKey != "press-1" || e.MoveTaskID != task.ID {
		t.Errorf("repeat's entry = %+v", e)
	}
	if got := w.Count(t, "orders") + w.Count(t, "orders-dlq"); got != 100 {
		t.Errorf("%d messages in orders and its DLQ; want the 100", got)
	}
}

// TestLostCancelResponse: CancelMessageMoveTask landed but its answer was lost: the action sees
// the task CANCELLING in ListMessageMoveTasks and says so, instead of "it ended before it could
// be cancelled" from a blind retry.
func TestLostCancelResponse(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	front := breakAfter(t, w, "CancelMessageMoveTask", 1, 0)
	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{actionstest.Region: sqsClient(front.URL, aws.NopRetryer{})}, Store: w.Store, Now: w.Now})
	if _, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1)}); err != nil {
		t.Fatal(err)
	}
	task, err := svc.CancelRedrive(context.Background(), operator, "orders-dlq")
	if err != nil || task.Status != store.MoveTaskCancelling {
		t.Fatalf("CancelRedrive = %+v, %v; want the task CANCELLING", task, err)
	}
	if e := lastAudit(t, w); e.Result != store.AuditAccepted || !strings.Contains(e.Detail, "CANCELLING") {
		t.Errorf("outcome = %+v", e)
	}
}

// TestStartFailsWhenNothingLanded: a start that fails with nothing started is tried again (after
// ListMessageMoveTasks showed nothing landed), and audited as failed when every try failed.
func TestStartFailsWhenNothingLanded(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	svc := w.Actions(actions.Options{RetryWait: time.Millisecond})
	w.Sim.SetFault("StartMessageMoveTask", sqsim.Fault{ErrorRate: 1})
	w.Sim.ResetCallCounts()
	_, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	wantRefusal(t, err, "aws_error", actions.Upstream)
	if n := w.Sim.CallCount("StartMessageMoveTask"); n != 3 {
		t.Errorf("%d StartMessageMoveTask calls; want 3 tries", n)
	}
	if e := lastAudit(t, w); e.Result != store.AuditFailed || e.IntentID == 0 {
		t.Errorf("outcome = %+v; want failed, naming its intent", e)
	}
}

// TestIdempotencyKeys: a repeat with the same key is answered as the first attempt was
// (accepted or refused), concurrently too; the same key for another request is refused; another
// caller's key is its own.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("concurrent presses", func(t *testing.T) {
		w := newWorld(t)
		svc := w.Actions(actions.Options{})
		var wg sync.WaitGroup
		ids := make([]int64, 5)
		errs := make([]error, 5)
		for i := range ids {
			wg.Go(func() {
				task, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1), IdempotencyKey: "k"})
				ids[i], errs[i] = task.ID, err
			})
		}
		wg.Wait()
		for i := range ids {
			if errs[i] != nil || ids[i] != ids[0] {
				t.Errorf("press %d: task %d, %v; want task %d", i, ids[i], errs[i], ids[0])
			}
		}
		if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
			t.Errorf("tasks = %v; want one", got)
		}
		want := []string{"redrive.start intent", "redrive.start accepted", "redrive.start repeated", "redrive.start repeated", "redrive.start repeated", "redrive.start repeated"}
		if got := results(auditEntries(t, w)); strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("audit = %v; want %v", got, want)
		}
	})
	t.Run("a refusal is repeated as it was", func(t *testing.T) {
		w := newWorld(t)
		svc := w.Actions(actions.Options{})
		if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1)}); err != nil {
			t.Fatal(err)
		}
		req := actions.StartRedriveRequest{Queue: "orders-dlq", IdempotencyKey: "k2"}
		_, first := svc.StartRedrive(ctx, operator, req)
		wantRefusal(t, first, "task_running", actions.Conflict)
		w.Advance(time.Minute) // the running task ends: a new start would now be accepted
		_, again := svc.StartRedrive(ctx, operator, req)
		wantRefusal(t, again, "task_running", actions.Conflict)
		if again.Error() != first.Error() {
			t.Errorf("repeat = %v; want %v", again, first)
		}
		if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
			t.Errorf("tasks = %v; want one", got)
		}
	})
	t.Run("one key, another request", func(t *testing.T) {
		w := newWorld(t)
		svc := w.Actions(actions.Options{})
		if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1), IdempotencyKey: "k3"}); err != nil {
			t.Fatal(err)
		}
		_, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(2), IdempotencyKey: "k3"})
		wantRefusal(t, err, "idempotency_key_reused", actions.Unprocessable)
		_, err = svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "calls-dlq.fifo", IdempotencyKey: "k3"})
		wantRefusal(t, err, "idempotency_key_reused", actions.Unprocessable)
	})
	t.Run("another caller's key is its own", func(t *testing.T) {
		w := newWorld(t)
		svc := w.Actions(actions.Options{})
		if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1), IdempotencyKey: "k4"}); err != nil {
			t.Fatal(err)
		}
		// Another name, and the same name on another credential (a new token given a revoked
		// one's name): neither is answered with alice's start.
		for _, other := range []actions.Actor{
			{Name: "carol", Kind: "token", Role: "operator", TokenID: 3, Credential: "token:3"},
			{Name: "alice", Kind: "token", Role: "operator", TokenID: 4, Credential: "token:4"},
		} {
			_, err := svc.StartRedrive(ctx, other, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1), IdempotencyKey: "k4"})
			wantRefusal(t, err, "task_running", actions.Conflict)
		}
		if e := lastAudit(t, w); e.Actor != "alice" || e.TokenID != 4 || e.Credential != "token:4" {
			t.Errorf("the refusal's audit entry = %+v; want alice with token id 4", e)
		}
	})
	t.Run("bad keys", func(t *testing.T) {
		w := newWorld(t)
		svc := w.Actions(actions.Options{})
		for _, key := range []string{strings.Repeat("k", 256), "a\nb", "clé"} {
			_, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", IdempotencyKey: key})
			wantRefusal(t, err, "invalid_idempotency_key", actions.Invalid)
		}
	})
}

// TestReconcileAfterACrash models a process that stopped between an action's intent and its
// outcome, honestly at the store: the intent as the dead process wrote it, the move task (or
// none) as its call left it in the simulator, then a new process's Reconcile. Each intent gets
// the outcome ListMessageMoveTasks shows, and a repeat of its key is answered from it.
func TestReconcileAfterACrash(t *testing.T) {
	t.Parallel()
	var handle string // of the task started before a cancel's intent
	tests := []struct {
		name       string
		action     string
		before     func(t *testing.T, w *actionstest.World) // what happened before the intent
		landed     func(t *testing.T, w *actionstest.World) // what the dead process's call did in AWS
		wantResult string
		wantText   string
	}{
		{"start landed", actions.ActionStartRedrive, nil, func(t *testing.T, w *actionstest.World) {
			startInSim(t, w, 0)
			w.Advance(10 * time.Second)
		}, store.AuditAccepted, "COMPLETED, 25 of 25 moved"},
		{"start never reached AWS", actions.ActionStartRedrive, nil, nil, store.AuditFailed, "nothing moved"},
		{"cancel landed", actions.ActionCancelRedrive, func(t *testing.T, w *actionstest.World) { handle = startInSim(t, w, 1) },
			func(t *testing.T, w *actionstest.World) {
				if _, err := w.SQS.CancelMessageMoveTask(context.Background(), &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String(handle)}); err != nil {
					t.Fatal(err)
				}
			}, store.AuditAccepted, "CANCEL"},
		{"cancel never reached AWS", actions.ActionCancelRedrive, func(t *testing.T, w *actionstest.World) { handle = startInSim(t, w, 1) },
			nil, store.AuditFailed, "RUNNING: it was not cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			ctx := context.Background()
			if tt.before != nil {
				tt.before(t, w)
				w.Advance(time.Second)
			}
			dlq, err := w.Store.ResolveQueue(ctx, "orders-dlq")
			if err != nil {
				t.Fatal(err)
			}
			intentID, err := w.Store.AppendAudit(ctx, store.AuditEntry{At: w.Now(), Actor: "alice", ActorKind: "token", Role: "operator",
				TokenID: operator.TokenID, Credential: operator.Credential, Action: tt.action, QueueName: dlq.Name, QueueARN: dlq.ARN, Result: store.AuditIntent, IdempotencyKey: "crash-1"})
			if err != nil {
				t.Fatal(err)
			}
			if tt.landed != nil {
				tt.landed(t, w)
			}
			// A new process starts: it settles the intent before anyone acts.
			svc := w.Actions(actions.Options{})
			if err := svc.Reconcile(ctx); err != nil {
				t.Fatalf("Reconcile: %v", err)
			}
			outcome, err := w.Store.OutcomeOf(ctx, intentID)
			if err != nil {
				t.Fatalf("no outcome for the intent: %v", err)
			}
			if outcome.Result != tt.wantResult || !strings.Contains(outcome.Detail, tt.wantText) || !strings.HasPrefix(outcome.Detail, "settled from ListMessageMoveTasks") {
				t.Errorf("outcome = %s %q; want %s saying %q", outcome.Result, outcome.Detail, tt.wantResult, tt.wantText)
			}
			if pending, _ := w.Store.PendingIntents(ctx); len(pending) != 0 {
				t.Errorf("intents still pending: %+v", pending)
			}
			if err := svc.Reconcile(ctx); err != nil {
				t.Fatal(err)
			}
			if n := len(auditEntries(t, w)); n != 2 {
				t.Errorf("%d audit entries after a second Reconcile; want the intent and its one outcome", n)
			}
			if tt.action != actions.ActionStartRedrive {
				return
			}
			// The client that pressed before the crash sends its press again.
			w.Sim.ResetCallCounts()
			task, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", IdempotencyKey: "crash-1"})
			if n := w.Sim.CallCount("StartMessageMoveTask"); n != 0 {
				t.Errorf("the repeat called StartMessageMoveTask %d times", n)
			}
			if tt.wantResult == store.AuditAccepted {
				if err != nil || task.ID != outcome.MoveTaskID {
					t.Errorf("repeat = %+v, %v; want the task that ran", task, err)
				}
				return
			}
			wantRefusal(t, err, "interrupted", actions.Upstream)
		})
	}
}

// TestActionSettlesItsQueueFirst: an intent Reconcile could not settle at start-up (AWS was
// down) is settled by the queue's next action before it calls StartMessageMoveTask, so the new
// task is never taken for the old intent's.
func TestActionSettlesItsQueueFirst(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	dlq, err := w.Store.ResolveQueue(ctx, "orders-dlq")
	if err != nil {
		t.Fatal(err)
	}
	intentID, err := w.Store.AppendAudit(ctx, store.AuditEntry{At: w.Now(), Actor: "alice", Action: actions.ActionStartRedrive,
		QueueName: dlq.Name, QueueARN: dlq.ARN, Result: store.AuditIntent})
	if err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Minute)
	svc := w.Actions(actions.Options{})
	task, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	if err != nil {
		t.Fatal(err)
	}
	old, err := w.Store.OutcomeOf(ctx, intentID)
	if err != nil || old.Result != store.AuditFailed || old.MoveTaskID != 0 {
		t.Errorf("the old intent's outcome = %+v, %v; want failed, naming no task", old, err)
	}
	if e := lastAudit(t, w); e.Result != store.AuditAccepted || e.MoveTaskID != task.ID {
		t.Errorf("the new start's outcome = %+v", e)
	}
}

// startInSim starts a move task of orders-dlq in the simulator directly, as a process that died
// afterwards did, and returns its handle.
func startInSim(t *testing.T, w *actionstest.World, rate int32) string {
	t.Helper()
	in := &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(w.ARN("orders-dlq"))}
	if rate > 0 {
		in.MaxNumberOfMessagesPerSecond = aws.Int32(rate)
	}
	out, err := w.SQS.StartMessageMoveTask(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.TaskHandle)
}
