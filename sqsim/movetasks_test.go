package sqsim

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
)

// redriveSetup makes a source queue with a DLQ holding n dead-lettered
// messages (maxReceiveCount 1, VisibilityTimeout 0 so that the second
// receive moves each message).
func redriveSetup(t *testing.T, h *harness, n int, fifo bool) (src, dlq, srcARN, dlqARN string) {
	t.Helper()
	suffix := ""
	srcAttrs, dlqAttrs := map[string]string{"VisibilityTimeout": "0"}, map[string]string{}
	if fifo {
		suffix = ".fifo"
		srcAttrs["FifoQueue"], dlqAttrs["FifoQueue"] = "true", "true"
	}
	dlq = h.createQueue(t, "dlq"+suffix, dlqAttrs)
	dlqARN = h.queueARN(t, dlq)
	srcAttrs["RedrivePolicy"] = fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":1}`, dlqARN)
	src = h.createQueue(t, "src"+suffix, srcAttrs)
	srcARN = h.queueARN(t, src)
	for i := range n {
		var opts []func(*sqs.SendMessageInput)
		if fifo {
			opts = append(opts, inGroup(fmt.Sprint("g", i%3), fmt.Sprint("d", i)))
		}
		h.send(t, src, fmt.Sprint("m", i), opts...)
	}
	for range 2 * n {
		h.receive(t, src, 10)
	}
	if snap, _ := h.sim.Snapshot("dlq" + suffix); len(snap) != n {
		t.Fatalf("setup: DLQ holds %d messages, want %d", len(snap), n)
	}
	return src, dlq, srcARN, dlqARN
}

func (h *harness) moveTasks(t *testing.T, sourceARN string) []types.ListMessageMoveTasksResultEntry {
	t.Helper()
	out, err := h.sqs.ListMessageMoveTasks(context.Background(), &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(sourceARN), MaxResults: aws.Int32(10)})
	if err != nil {
		t.Fatalf("ListMessageMoveTasks: %v", err)
	}
	return out.Results
}

func TestMoveTaskRate(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			h := newHarness(t)
			_, _, _, dlqARN := redriveSetup(t, h, 25, fifo)
			suffix := map[bool]string{true: ".fifo"}[fifo]
			start, err := h.sqs.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), MaxNumberOfMessagesPerSecond: aws.Int32(10)})
			if err != nil {
				t.Fatal(err)
			}
			steps := []struct {
				advance time.Duration
				moved   int64
				status  string
			}{
				{0, 0, "RUNNING"},
				{time.Second, 10, "RUNNING"},
				{500 * time.Millisecond, 15, "RUNNING"},
				{500 * time.Millisecond, 20, "RUNNING"},
				{time.Second, 25, "COMPLETED"},
			}
			for _, st := range steps {
				h.advance(st.advance)
				tasks := h.moveTasks(t, dlqARN)
				if len(tasks) != 1 {
					t.Fatalf("%d tasks", len(tasks))
				}
				task := tasks[0]
				if task.ApproximateNumberOfMessagesMoved != st.moved || aws.ToString(task.Status) != st.status || aws.ToInt64(task.ApproximateNumberOfMessagesToMove) != 25 {
					t.Fatalf("after %v: moved %d status %s toMove %d; want %d %s 25", st.advance, task.ApproximateNumberOfMessagesMoved, aws.ToString(task.Status), aws.ToInt64(task.ApproximateNumberOfMessagesToMove), st.moved, st.status)
				}
				if running := st.status == "RUNNING"; running != (aws.ToString(task.TaskHandle) == aws.ToString(start.TaskHandle)) {
					t.Errorf("TaskHandle %q while %s", aws.ToString(task.TaskHandle), st.status)
				}
				if src, _ := h.sim.Snapshot("src" + suffix); len(src) != int(st.moved) {
					t.Errorf("source holds %d, want %d", len(src), st.moved)
				}
			}
			snap, _ := h.sim.Snapshot("src" + suffix)
			for _, m := range snap {
				if m.ReceiveCount != 0 || m.DeadLetterSourceARN != "" {
					t.Errorf("moved message not reset: %+v", m)
				}
				if fifo && (m.GroupID == "" || m.DeduplicationID == "") {
					t.Errorf("moved FIFO message lost its ids: %+v", m)
				}
			}
		})
	}
}

func TestMoveTaskCancelAndConservation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, _, _, dlqARN := redriveSetup(t, h, 20, false)
	start, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), MaxNumberOfMessagesPerSecond: aws.Int32(4)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "InvalidParameterValue" {
		t.Fatalf("second task: %v, want InvalidParameterValue", err)
	}
	h.advance(2 * time.Second)
	cancel, err := h.sqs.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	if err != nil {
		t.Fatal(err)
	}
	if cancel.ApproximateNumberOfMessagesMoved != 8 {
		t.Errorf("cancel reports %d moved, want 8", cancel.ApproximateNumberOfMessagesMoved)
	}
	if got := aws.ToString(h.moveTasks(t, dlqARN)[0].Status); got != "CANCELLING" {
		t.Errorf("status right after cancel = %s, want CANCELLING", got)
	}
	h.advance(10 * time.Second)
	task := h.moveTasks(t, dlqARN)[0]
	if aws.ToString(task.Status) != "CANCELLED" || task.ApproximateNumberOfMessagesMoved != 8 {
		t.Errorf("after cancel: %s moved %d", aws.ToString(task.Status), task.ApproximateNumberOfMessagesMoved)
	}
	src, _ := h.sim.Snapshot("src")
	dlq, _ := h.sim.Snapshot("dlq")
	if len(src) != 8 || len(dlq) != 12 {
		t.Errorf("source %d + DLQ %d, want 8 + 12", len(src), len(dlq))
	}
	_, err = h.sqs.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Errorf("cancelling a cancelled task: %v, want ResourceNotFoundException", err)
	}
	// A new task may start now, and moves the rest; nothing is lost or
	// duplicated.
	if _, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)}); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	src, _ = h.sim.Snapshot("src")
	dlq, _ = h.sim.Snapshot("dlq")
	ids := map[string]bool{}
	for _, m := range src {
		ids[m.MessageID] = true
	}
	if len(src) != 20 || len(dlq) != 0 || len(ids) != 20 {
		t.Errorf("after the second task: source %d (%d distinct), DLQ %d", len(src), len(ids), len(dlq))
	}
	if tasks := h.moveTasks(t, dlqARN); len(tasks) != 2 || aws.ToString(tasks[0].Status) != "COMPLETED" || aws.ToInt32(tasks[0].MaxNumberOfMessagesPerSecond) != 0 {
		t.Errorf("tasks newest first: %+v", tasks)
	}
}

func TestMoveTaskErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	_, _, srcARN, dlqARN := redriveSetup(t, h, 1, false)
	missing := "arn:aws:sqs:us-east-1:000000000000:missing"
	tests := []struct {
		name string
		call func() error
		want any
		code string
	}{
		{name: "source missing", call: func() error {
			_, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(missing)})
			return err
		}, want: new(*types.ResourceNotFoundException)},
		{name: "source not a DLQ", call: func() error {
			_, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(srcARN)})
			return err
		}, code: "InvalidParameterValue"},
		{name: "destination missing", call: func() error {
			_, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), DestinationArn: aws.String(missing)})
			return err
		}, want: new(*types.ResourceNotFoundException)},
		{name: "rate too high", call: func() error {
			_, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), MaxNumberOfMessagesPerSecond: aws.Int32(501)})
			return err
		}, code: "InvalidParameterValue"},
		{name: "garbled handle", call: func() error {
			_, err := h.sqs.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: aws.String("nope")})
			return err
		}, code: "InvalidParameterValue"},
		{name: "list too many", call: func() error {
			_, err := h.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(dlqARN), MaxResults: aws.Int32(11)})
			return err
		}, code: "InvalidParameterValue"},
		{name: "list missing source", call: func() error {
			_, err := h.sqs.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(missing)})
			return err
		}, want: new(*types.ResourceNotFoundException)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if tt.want != nil && !errors.As(err, tt.want) {
				t.Fatalf("err = %v, want %T", err, tt.want)
			}
			var apiErr smithy.APIError
			if tt.code != "" && (!errors.As(err, &apiErr) || apiErr.ErrorCode() != tt.code) {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
		})
	}
}

func TestMoveTaskFailsWhenDestinationDeleted(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	src, _, _, dlqARN := redriveSetup(t, h, 10, false)
	if _, err := h.sqs.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN), MaxNumberOfMessagesPerSecond: aws.Int32(3)}); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	if _, err := h.sqs.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(src)}); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	task := h.moveTasks(t, dlqARN)[0]
	if aws.ToString(task.Status) != "FAILED" || aws.ToString(task.FailureReason) != "AWS.SimpleQueueService.NonExistentQueue" || task.ApproximateNumberOfMessagesMoved != 3 {
		t.Errorf("task %s %q moved %d", aws.ToString(task.Status), aws.ToString(task.FailureReason), task.ApproximateNumberOfMessagesMoved)
	}
	if dlq, _ := h.sim.Snapshot("dlq"); len(dlq) != 7 {
		t.Errorf("DLQ holds %d, want the 7 not moved", len(dlq))
	}
}

// TestRedriveGivesNewMessages: a move task redrives each message as a new
// one, as SQS documents: a new message id and SentTimestamp, no receives, its
// body and attributes (and FIFO group and deduplication ids) kept; the
// retention period starts again.
func TestRedriveGivesNewMessages(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprint("fifo=", fifo), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			suffix := map[bool]string{true: ".fifo"}[fifo]
			src, _, _, dlqARN := redriveSetup(t, h, 3, fifo)
			before, _ := h.sim.Snapshot("dlq" + suffix)
			h.advance(time.Hour)
			if _, err := h.sqs.StartMessageMoveTask(context.Background(), &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlqARN)}); err != nil {
				t.Fatal(err)
			}
			// The task moves DefaultMoveRate messages a second: all three
			// within its first second.
			h.advance(time.Second)
			redriveAt := h.clock.Now()
			got := h.receive(t, src, 10)
			if len(got) != len(before) {
				t.Fatalf("received %d redriven messages, want %d", len(got), len(before))
			}
			old := map[string]MessageSnapshot{}
			for _, m := range before {
				old[m.Body] = m
			}
			for _, m := range got {
				was, ok := old[aws.ToString(m.Body)]
				switch {
				case !ok:
					t.Errorf("received %q, which the DLQ did not hold", aws.ToString(m.Body))
				case aws.ToString(m.MessageId) == was.MessageID:
					t.Errorf("%q kept its message id %s across the redrive", was.Body, was.MessageID)
				case m.Attributes["SentTimestamp"] != fmt.Sprint(redriveAt.UnixMilli()):
					t.Errorf("%q SentTimestamp %s, want the redrive's %d", was.Body, m.Attributes["SentTimestamp"], redriveAt.UnixMilli())
				case m.Attributes["ApproximateReceiveCount"] != "1" || m.Attributes["DeadLetterQueueSourceArn"] != "":
					t.Errorf("%q attributes %v, want a first receive and no DeadLetterQueueSourceArn", was.Body, m.Attributes)
				case fifo && (m.Attributes["MessageGroupId"] != was.GroupID || m.Attributes["MessageDeduplicationId"] != was.DeduplicationID):
					t.Errorf("%q group %s dedup %s, want %s %s kept", was.Body, m.Attributes["MessageGroupId"], m.Attributes["MessageDeduplicationId"], was.GroupID, was.DeduplicationID)
				}
			}
			// Retention starts at the redrive: the default four days after it,
			// not after the first send an hour earlier.
			h.advance(4*24*time.Hour - time.Second)
			if snap, _ := h.sim.Snapshot("src" + suffix); len(snap) != len(before) {
				t.Errorf("%d messages left just before four days from the redrive, want %d", len(snap), len(before))
			}
			h.advance(time.Second)
			if snap, _ := h.sim.Snapshot("src" + suffix); len(snap) != 0 {
				t.Errorf("%d messages left four days after the redrive, want none", len(snap))
			}
		})
	}
}
