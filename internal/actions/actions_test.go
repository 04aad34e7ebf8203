package actions_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

var (
	operator = actions.Actor{Name: "alice", Kind: "token", Role: "operator", RemoteAddr: "192.0.2.7", TokenID: 1, Credential: "token:1"}
	viewer   = actions.Actor{Name: "bob", Kind: "token", Role: "viewer", RemoteAddr: "192.0.2.8", TokenID: 2, Credential: "token:2"}
)

// newWorld creates the queues the tests use and watches them:
//   - orders → orders-dlq (standard), 25 messages in the DLQ
//   - calls.fifo → calls-dlq.fifo (FIFO), 6 messages in the DLQ
//   - billing → denied-dlq, whose RedriveAllowPolicy is denyAll
//   - audit-log → picky-dlq, whose RedriveAllowPolicy lists only audit-log
//   - reports → locked-dlq, whose RedriveAllowPolicy lists only audit-log (not reports)
//   - spare: a standard queue toolq does not watch
func newWorld(t *testing.T) *actionstest.World {
	t.Helper()
	w := actionstest.New(t)
	w.CreateQueue(t, "orders-dlq", "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.CreateQueue(t, "orders", "orders-dlq", nil)
	w.CreateQueue(t, "calls-dlq.fifo", "", nil)
	w.CreateQueue(t, "calls.fifo", "calls-dlq.fifo", nil)
	w.CreateQueue(t, "denied-dlq", "", nil)
	w.CreateQueue(t, "billing", "denied-dlq", nil)
	w.CreateQueue(t, "picky-dlq", "", nil)
	w.CreateQueue(t, "audit-log", "picky-dlq", nil)
	w.CreateQueue(t, "locked-dlq", "", nil)
	w.CreateQueue(t, "reports", "locked-dlq", nil)
	// The policies change after the sources were set up, as they do when a team locks a DLQ down.
	w.SetAttributes(t, "denied-dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`})
	w.SetAttributes(t, "picky-dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + w.ARN("audit-log") + `"]}`})
	w.SetAttributes(t, "locked-dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + w.ARN("audit-log") + `"]}`})
	w.CreateQueue(t, "spare", "", nil)
	w.DeadLetter(t, "orders", 25)
	w.DeadLetter(t, "calls.fifo", 6)
	w.Watch(t, "orders-dlq", "orders", "calls-dlq.fifo", "calls.fifo", "denied-dlq", "billing", "picky-dlq", "audit-log", "locked-dlq", "reports")
	return w
}

// wantRefusal checks that err is an *actions.Error with code and status.
func wantRefusal(t *testing.T, err error, code string, kind actions.Kind) {
	t.Helper()
	var ae *actions.Error
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v; want *actions.Error %s", err, code)
	}
	if ae.Code != code || ae.Kind != kind {
		t.Fatalf("err = %s (kind %d); want %s (kind %d)", ae.Code, ae.Kind, code, kind)
	}
	if ae.Message == "" {
		t.Errorf("refusal %s has no message", code)
	}
}

// lastAudit returns the newest audit entry.
func lastAudit(t *testing.T, w *actionstest.World) store.AuditEntry {
	t.Helper()
	entries, err := w.Store.ListAudit(context.Background(), store.AuditFilter{Limit: 1})
	if err != nil || len(entries) == 0 {
		t.Fatalf("ListAudit: %v, %d entries", err, len(entries))
	}
	return entries[0]
}

// liveTasks lists a queue's move tasks in the simulator, newest first.
func liveTasks(t *testing.T, w *actionstest.World, name string) []store.MoveTaskStatus {
	t.Helper()
	out, err := w.SQS.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(w.ARN(name)), MaxResults: aws.Int32(10)})
	if err != nil {
		t.Fatalf("ListMessageMoveTasks(%s): %v", name, err)
	}
	var st []store.MoveTaskStatus
	for _, r := range out.Results {
		st = append(st, store.MoveTaskStatus(aws.ToString(r.Status)))
	}
	return st
}

func TestStartRedriveRefusals(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	svc := w.Actions(actions.Options{})
	readOnly := w.Actions(actions.Options{ReadOnly: true})
	noClient := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{}, Store: w.Store, Now: w.Now})

	tests := []struct {
		name   string
		svc    *actions.Service
		actor  actions.Actor
		req    actions.StartRedriveRequest
		code   string
		status actions.Kind
	}{
		{"read-only mode", readOnly, operator, actions.StartRedriveRequest{Queue: "orders-dlq"}, "read_only", actions.Forbidden},
		{"viewer", svc, viewer, actions.StartRedriveRequest{Queue: "orders-dlq"}, "forbidden", actions.Forbidden},
		{"no role", svc, actions.Actor{Name: "x"}, actions.StartRedriveRequest{Queue: "orders-dlq"}, "forbidden", actions.Forbidden},
		{"unknown queue", svc, operator, actions.StartRedriveRequest{Queue: "nope"}, "queue_not_found", actions.NotFound},
		{"junk queue", svc, operator, actions.StartRedriveRequest{Queue: "../../etc/passwd"}, "invalid_queue", actions.Invalid},
		{"not a DLQ", svc, operator, actions.StartRedriveRequest{Queue: "orders"}, "not_dead_letter_queue", actions.Unprocessable},
		{"rate too high", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(501)}, "invalid_rate", actions.Invalid},
		{"negative rate", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(-1)}, "invalid_rate", actions.Invalid},
		{"zero rate", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(0)}, "invalid_rate", actions.Invalid},
		{"rate not a number", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "fast"}, "invalid_rate", actions.Invalid},
		{"fractional rate", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "2.5"}, "invalid_rate", actions.Invalid},
		{"viewer with a bad rate", svc, viewer, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "fast"}, "forbidden", actions.Forbidden},
		{"destination missing", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "no-such-queue"}, "destination_not_found", actions.Unprocessable},
		{"destination ARN missing", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: w.ARN("no-such-queue")}, "destination_not_found", actions.Unprocessable},
		{"destination is the DLQ", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "orders-dlq"}, "invalid_destination", actions.Unprocessable},
		{"standard to FIFO", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "calls.fifo"}, "destination_type_mismatch", actions.Unprocessable},
		{"FIFO to standard", svc, operator, actions.StartRedriveRequest{Queue: "calls-dlq.fifo", Destination: "orders"}, "destination_type_mismatch", actions.Unprocessable},
		{"denyAll", svc, operator, actions.StartRedriveRequest{Queue: "denied-dlq"}, "redrive_not_allowed", actions.Unprocessable},
		{"byQueue without its sources", svc, operator, actions.StartRedriveRequest{Queue: "locked-dlq"}, "redrive_not_allowed", actions.Unprocessable},
		{"byQueue without its sources, to a destination", svc, operator, actions.StartRedriveRequest{Queue: "locked-dlq", Destination: "spare"}, "redrive_not_allowed", actions.Unprocessable},
		{"denyAll, to a destination", svc, operator, actions.StartRedriveRequest{Queue: "denied-dlq", Destination: "spare"}, "redrive_not_allowed", actions.Unprocessable},
		{"no client for the region", noClient, operator, actions.StartRedriveRequest{Queue: "orders-dlq"}, "aws_error", actions.Upstream},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.svc.StartRedrive(ctx, tt.actor, tt.req)
			wantRefusal(t, err, tt.code, tt.status)
			e := lastAudit(t, w)
			wantResult := store.AuditRefused
			if tt.code == "aws_error" {
				wantResult = store.AuditFailed
			}
			if e.Action != actions.ActionStartRedrive || e.Result != wantResult || e.Actor != tt.actor.Name && tt.actor.Name != "" {
				t.Errorf("audit = %+v; want %s %s by %s", e, actions.ActionStartRedrive, wantResult, tt.actor.Name)
			}
		})
	}
	for _, q := range []string{"orders-dlq", "calls-dlq.fifo", "denied-dlq", "picky-dlq", "locked-dlq"} {
		if got := liveTasks(t, w, q); len(got) != 0 {
			t.Errorf("%s has move tasks %v after refusals only", q, got)
		}
	}
	if got := w.Count(t, "orders-dlq"); got != 25 {
		t.Errorf("orders-dlq holds %d messages after refusals; want 25", got)
	}
}

func TestStartRedriveAWSError(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	svc := w.Actions(actions.Options{})
	w.Sim.SetFault("StartMessageMoveTask", sqsim.Fault{ErrorRate: 1})
	_, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	wantRefusal(t, err, "aws_error", actions.Upstream)
	var ae *actions.Error
	errors.As(err, &ae)
	// The message names what failed, AWS's code and the HTTP status, never AWS's own text.
	if ae.Message != "AWS failed to start the move task (InternalError, HTTP 500); try again" {
		t.Errorf("message = %q", ae.Message)
	}
	if e := lastAudit(t, w); e.Result != store.AuditFailed {
		t.Errorf("audit result = %s; want failed", e.Result)
	}
}

func TestRedriveCompletesAndConservesMessages(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	svc := w.Actions(actions.Options{})
	w.Events.Kinds()
	before := w.Count(t, "orders-dlq") + w.Count(t, "orders")

	task, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(10)})
	if err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	if task.Status != store.MoveTaskRunning || task.TaskHandle == "" || task.ToMove != 25 || task.MaxPerSecond != 10 || task.ID == 0 {
		t.Fatalf("task = %+v; want RUNNING with a handle, 25 to move at 10/s, stored", task)
	}
	stored, err := w.Store.ListMoveTasks(ctx, task.QueueID, 0)
	if err != nil || len(stored) != 1 || !stored[0].Running() {
		t.Fatalf("stored tasks = %+v, %v; want the running task", stored, err)
	}
	kinds := w.Events.Kinds()
	if !slices.Contains(kinds, events.MoveTasksChanged) || !slices.Contains(kinds, events.AuditAppended) {
		t.Errorf("events = %v; want movetasks and audit", kinds)
	}
	e := lastAudit(t, w)
	if e.Result != store.AuditAccepted || e.Detail != task.TaskHandle || e.QueueName != "orders-dlq" || e.QueueARN != w.ARN("orders-dlq") ||
		e.Actor != "alice" || e.Role != "operator" || e.RemoteAddr != "192.0.2.7" || e.Params != `{"maxMessagesPerSecond":10}` {
		t.Errorf("audit = %+v", e)
	}

	// Follow it: 10 a second.
	w.Advance(time.Second)
	if got := w.Count(t, "orders"); got != 10 {
		t.Errorf("after 1 s, orders holds %d; want 10", got)
	}
	w.Advance(2 * time.Second)
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 || got[0] != store.MoveTaskCompleted {
		t.Errorf("tasks = %v; want one COMPLETED", got)
	}
	after := w.Count(t, "orders-dlq") + w.Count(t, "orders")
	if after != before || w.Count(t, "orders-dlq") != 0 {
		t.Errorf("messages: %d before, %d after (%d left in the DLQ); want all 25 moved", before, after, w.Count(t, "orders-dlq"))
	}
	// A new start is allowed once the first completed. The DLQ is empty, so SQS completes it at
	// once and lists it without its handle: the answer and the store must still say COMPLETED,
	// not a RUNNING task that would block the next start.
	again, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	if err != nil {
		t.Fatalf("second StartRedrive after completion: %v", err)
	}
	if again.Status != store.MoveTaskCompleted || again.ToMove != 0 {
		t.Errorf("empty DLQ's task = %+v; want COMPLETED with nothing to move", again)
	}
	stored, err = w.Store.ListMoveTasks(ctx, task.QueueID, 0)
	if err != nil || len(stored) != 2 || stored[0].Running() || stored[1].Running() {
		t.Errorf("stored tasks = %+v, %v; want two finished tasks", stored, err)
	}
	if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"}); err != nil {
		t.Errorf("third StartRedrive: %v", err)
	}
}

// TestRedriveAllowPolicyGovernsSourcesOnly: a DLQ's RedriveAllowPolicy says which source queues
// may use it as their DLQ, not where a move task may send messages. A byQueue policy that lists
// the DLQ's source lets it redrive to any queue of its type, listed or not.
func TestRedriveAllowPolicyGovernsSourcesOnly(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		destination func(w *actionstest.World) string
		receiver    string // the queue the messages arrive in
	}{
		{"to a destination the policy does not list", func(*actionstest.World) string { return "spare" }, "spare"},
		{"to a destination by ARN", func(w *actionstest.World) string { return w.ARN("spare") }, "spare"},
		{"back to the original source", func(*actionstest.World) string { return "" }, "audit-log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.DeadLetter(t, "audit-log", 4)
			svc := w.Actions(actions.Options{})
			req := actions.StartRedriveRequest{Queue: "picky-dlq", Destination: tt.destination(w)}
			if _, err := svc.StartRedrive(context.Background(), operator, req); err != nil {
				t.Fatalf("StartRedrive: %v", err)
			}
			w.Advance(time.Second)
			if got, left := w.Count(t, tt.receiver), w.Count(t, "picky-dlq"); got != 4 || left != 0 {
				t.Errorf("%s holds %d and picky-dlq %d; want 4 and 0", tt.receiver, got, left)
			}
		})
	}
}

func TestRedriveFIFOToChosenDestination(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.CreateQueue(t, "replay.fifo", "", nil)
	svc := w.Actions(actions.Options{})
	// replay.fifo is not watched: the destination is looked up in SQS.
	task, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "calls-dlq.fifo", Destination: "replay.fifo"})
	if err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	if task.DestinationARN != w.ARN("replay.fifo") {
		t.Errorf("destination = %q", task.DestinationARN)
	}
	w.Advance(time.Second)
	if got := w.Count(t, "replay.fifo"); got != 6 {
		t.Errorf("replay.fifo holds %d; want 6", got)
	}
}

func TestSecondStartIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	svc := w.Actions(actions.Options{})
	if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1)}); err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	_, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	wantRefusal(t, err, "task_running", actions.Conflict)
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
		t.Errorf("tasks = %v; want exactly one", got)
	}
}

func TestConcurrentStartsMakeOneTask(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	svc := w.Actions(actions.Options{})
	const clicks = 5
	var wg sync.WaitGroup
	errs := make([]error, clicks)
	for i := range clicks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(1)})
		}()
	}
	wg.Wait()
	accepted := 0
	for _, err := range errs {
		if err == nil {
			accepted++
			continue
		}
		wantRefusal(t, err, "task_running", actions.Conflict)
	}
	if accepted != 1 {
		t.Errorf("%d starts accepted; want 1", accepted)
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
		t.Errorf("tasks = %v; want exactly one", got)
	}
}

func TestCancelHalfWay(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	svc := w.Actions(actions.Options{})
	before := w.Count(t, "orders-dlq")

	_, err := svc.CancelRedrive(ctx, operator, "orders-dlq")
	wantRefusal(t, err, "no_task_running", actions.Conflict)

	started, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(10)})
	if err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	w.Advance(time.Second)

	_, err = svc.CancelRedrive(ctx, viewer, "orders-dlq")
	wantRefusal(t, err, "forbidden", actions.Forbidden)

	task, err := svc.CancelRedrive(ctx, operator, "orders-dlq")
	if err != nil {
		t.Fatalf("CancelRedrive: %v", err)
	}
	if task.Status != store.MoveTaskCancelling || task.Moved != 10 || !task.StartedAt.Equal(started.StartedAt) {
		t.Errorf("cancelled task = %+v; want CANCELLING with 10 moved", task)
	}
	if e := lastAudit(t, w); e.Action != actions.ActionCancelRedrive || e.Result != store.AuditAccepted || e.Detail != started.TaskHandle {
		t.Errorf("audit = %+v", e)
	}
	w.Advance(5 * time.Second)
	moved, left := w.Count(t, "orders"), w.Count(t, "orders-dlq")
	if moved != 10 || moved+left != before {
		t.Errorf("moved %d + left %d; want 10 + %d = %d", moved, left, before-10, before)
	}
	if got := liveTasks(t, w, "orders-dlq"); got[0] != store.MoveTaskCancelled {
		t.Errorf("tasks = %v; want CANCELLED", got)
	}
	_, err = svc.CancelRedrive(ctx, operator, "orders-dlq")
	wantRefusal(t, err, "no_task_running", actions.Conflict)
}

// cancelTakesAMoment is the SQS client of a world whose move tasks stop within the instant of a
// cancel: its clock moves on after CancelMessageMoveTask answers, so the ListMessageMoveTasks
// that follows shows the task CANCELLED already, as a real one may.
type cancelTakesAMoment struct {
	*sqs.Client
	w *actionstest.World
}

func (c cancelTakesAMoment) CancelMessageMoveTask(ctx context.Context, in *sqs.CancelMessageMoveTaskInput, optFns ...func(*sqs.Options)) (*sqs.CancelMessageMoveTaskOutput, error) {
	out, err := c.Client.CancelMessageMoveTask(ctx, in, optFns...)
	c.w.Advance(time.Second)
	return out, err
}

// TestCancelAnswersCancelling: a cancel answers the task CANCELLING, as CancelMessageMoveTask
// leaves it, even when the task has stopped by the time toolq lists it; the store has the list's
// CANCELLED.
func TestCancelAnswersCancelling(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{actionstest.Region: cancelTakesAMoment{w.SQS, w}}, Store: w.Store, Now: w.Now})
	if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: rate(10)}); err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	w.Advance(time.Second)
	task, err := svc.CancelRedrive(ctx, operator, "orders-dlq")
	if err != nil {
		t.Fatalf("CancelRedrive: %v", err)
	}
	if task.Status != store.MoveTaskCancelling || task.Moved != 10 {
		t.Errorf("answer = %s with %d moved; want CANCELLING with 10", task.Status, task.Moved)
	}
	if got := liveTasks(t, w, "orders-dlq"); got[0] != store.MoveTaskCancelled {
		t.Fatalf("tasks = %v; the world did not stop the task at once", got)
	}
	stored, err := w.Store.GetMoveTask(ctx, task.ID)
	if err != nil || stored.Status != store.MoveTaskCancelled {
		t.Errorf("stored = %+v, %v; want the list's CANCELLED", stored, err)
	}
}

// TestActionsWhenAWSIsDown: an endpoint that does not answer is a 502 aws_error that says which
// step failed, never the transport's text (addresses, ports), and is audited as failed.
func TestActionsWhenAWSIsDown(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more
	client := sqs.New(sqs.Options{
		Region: actionstest.Region, BaseEndpoint: aws.String(down.URL), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	svc := actions.New(actions.Options{Clients: map[string]actions.SQSAPI{actionstest.Region: client}, Store: w.Store, Now: w.Now})
	tests := []struct {
		name string
		do   func() error
	}{
		{"start", func() error {
			_, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
			return err
		}},
		{"start to an unwatched destination", func() error {
			_, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "spare"})
			return err
		}},
		{"cancel", func() error {
			_, err := svc.CancelRedrive(context.Background(), operator, "orders-dlq")
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			wantRefusal(t, err, "aws_error", actions.Upstream)
			var ae *actions.Error
			errors.As(err, &ae)
			host := strings.TrimPrefix(down.URL, "http://")
			if !strings.HasPrefix(ae.Message, "AWS could not be reached to ") || strings.Contains(ae.Message, host) || strings.Contains(ae.Message, "dial") {
				t.Errorf("message = %q", ae.Message)
			}
			if e := lastAudit(t, w); e.Result != store.AuditFailed || strings.Contains(e.Detail, host) {
				t.Errorf("audit = %+v; want failed, without the address", e)
			}
		})
	}
	if got := w.Count(t, "orders-dlq"); got != 25 {
		t.Errorf("orders-dlq holds %d; want 25", got)
	}
}

// TestAWSCallsAreCounted: the actions' own AWS calls show in toolq_aws_calls_total, the metric
// the collector counts its reads in, so /metrics tells every call toolq makes.
func TestAWSCallsAreCounted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := prometheus.NewRegistry()
	svc := w.Actions(actions.Options{Registerer: reg})
	if _, err := svc.StartRedrive(context.Background(), operator, actions.StartRedriveRequest{Queue: "orders-dlq"}); err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "toolq_aws_calls_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var op, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "operation":
					op = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			calls[op+"/"+outcome] += m.GetCounter().GetValue()
		}
	}
	if calls["StartMessageMoveTask/ok"] != 1 || calls["ListMessageMoveTasks/ok"] < 1 {
		t.Errorf("toolq_aws_calls_total = %v; want one StartMessageMoveTask and the ListMessageMoveTasks checks", calls)
	}
}

// rate is an optional move rate for a request.
func rate(n int) string { return strconv.Itoa(n) }

// TestEventBridgeDLQIsNeverRedriven: a move task out of an EventBridge target's dead-letter
// queue is refused, with why, and audited, also when a RedrivePolicy names the queue too.
func TestEventBridgeDLQIsNeverRedriven(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx := context.Background()
	w.CreateQueue(t, "audit", "", nil)
	w.CreateQueue(t, "audit-events-dlq", "", nil)
	w.Watch(t, "audit", "audit-events-dlq")
	w.TargetDeadLetter(t, "audit", "audit-events-dlq")
	// orders-dlq is an SQS DLQ with 25 messages; naming it a target's DLQ as well refuses it too.
	w.TargetDeadLetter(t, "audit", "orders-dlq")
	svc := w.Actions(actions.Options{})
	for _, q := range []string{"audit-events-dlq", "orders-dlq"} {
		_, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: q})
		wantRefusal(t, err, "eventbridge_dead_letter_queue", actions.Unprocessable)
		var ae *actions.Error
		errors.As(err, &ae)
		if !strings.Contains(ae.Message, "PutEvents") {
			t.Errorf("refusal says %q; want why (events to put again)", ae.Message)
		}
		if e := lastAudit(t, w); e.Result != store.AuditRefused || e.QueueName != q {
			t.Errorf("audit = %+v", e)
		}
		if got := liveTasks(t, w, q); len(got) != 0 {
			t.Errorf("%s has move tasks %v", q, got)
		}
	}
}
