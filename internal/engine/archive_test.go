package engine_test

import (
	"bytes"
	"context"
	"database/sql"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	_ "modernc.org/sqlite"

	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
)

// runKind creates a job of a kind (discard, restore) as the actions do, and runs it to its end.
func (w *world) runKind(t *testing.T, kind string, sel engine.Selection) store.SelectionJob {
	t.Helper()
	ctx := context.Background()
	q, err := w.Store.ResolveQueue(ctx, w.dlq)
	if err != nil {
		t.Fatal(err)
	}
	w.Advance(time.Millisecond) // each job its own start
	job, err := w.Store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask:  store.MoveTask{QueueID: q.ID, SourceARN: q.ARN, StartedAt: w.Now(), Kind: kind},
		Selection: sel.JSON(), Actor: "alice",
	})
	if err != nil {
		t.Fatal(err)
	}
	return w.runUntilEnd(t, job.ID)
}

// TestDiscardKeepsEveryMessageWholeAndRestoreSendsItBack: a discard leaves exactly the other
// messages in the DLQ, and the archive holds each discarded one with its body and every
// attribute byte-identical to what SQS gave; a restore sends it back to its source with the same
// body, attributes and trace header, and marks it restored.
func TestDiscardKeepsEveryMessageWholeAndRestoreSendsItBack(t *testing.T) {
	t.Parallel()
	for _, fifo := range []bool{false, true} {
		t.Run("fifo="+strconv.FormatBool(fifo), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, fifo)
			w.fail(t, failedCalls)
			before := w.inDLQ(t)
			job := w.runKind(t, store.KindDiscard, engine.Selection{Tools: []string{"read_file"}})
			if job.Status != store.MoveTaskCompleted {
				t.Fatalf("discard = %s %q", job.Status, job.FailureReason)
			}
			want := []string{"tc_04"}
			if fifo {
				want = []string{"tc_03", "tc_04"} // the whole of sess_b
			}
			left := toolCallIDs(t, w.receiveAll(t, w.dlq))
			if len(left) != len(failedCalls)-len(want) || job.Moved != int64(len(want)) {
				t.Fatalf("left in the DLQ %v, %d discarded; want all but %v", left, job.Moved, want)
			}
			w.Advance(601 * time.Second)
			archived, err := w.Store.ArchivedMessages(context.Background(), store.ArchiveFilter{})
			if err != nil || len(archived) != len(want) {
				t.Fatalf("archive = %d messages, %v; want %d", len(archived), err, len(want))
			}
			for _, a := range archived {
				was := before[a.ToolCallID]
				if a.Body != aws.ToString(was.Body) || a.MessageID != aws.ToString(was.MessageId) || a.DiscardedBy != "alice" || a.ToolName == "" {
					t.Errorf("archived %+v; was %s", a, aws.ToString(was.Body))
				}
				for name, v := range was.MessageAttributes {
					got := a.MessageAttributes[name]
					if got.DataType != aws.ToString(v.DataType) || got.StringValue != aws.ToString(v.StringValue) || !bytes.Equal(got.BinaryValue, v.BinaryValue) {
						t.Errorf("%s: archived attribute %s = %+v; was %+v", a.ToolCallID, name, got, v)
					}
				}
				for _, sys := range []string{"AWSTraceHeader", "DeadLetterQueueSourceArn", "SentTimestamp", "ApproximateReceiveCount", "SenderId"} {
					if a.SystemAttributes[sys] == "" {
						t.Errorf("%s: archived without its %s", a.ToolCallID, sys)
					}
				}
				if a.TraceHeader != was.Attributes["AWSTraceHeader"] || a.DeadLetterSourceARN != w.ARN(w.source) {
					t.Errorf("%s: trace %q, source %q", a.ToolCallID, a.TraceHeader, a.DeadLetterSourceARN)
				}
			}

			restore := w.runKind(t, store.KindRestore, engine.Selection{Tools: []string{"read_file", "fetch_url"}})
			if restore.Status != store.MoveTaskCompleted || restore.Moved != int64(len(want)) {
				t.Fatalf("restore = %s %q, %d restored", restore.Status, restore.FailureReason, restore.Moved)
			}
			back := w.receiveAll(t, w.source)
			if got := toolCallIDs(t, back); !sameSet(got, want) || (fifo && got[0] != "tc_03") {
				t.Errorf("restored %v; want %v in order", got, want)
			}
			for _, m := range back {
				w.checkWhole(t, before, m)
			}
			archived, _ = w.Store.ArchivedMessages(context.Background(), store.ArchiveFilter{})
			for _, a := range archived {
				if a.RestoredAt.IsZero() || a.RestoredTo != w.ARN(w.source) || a.RestoreJobID != restore.ID {
					t.Errorf("%s: not marked restored: %+v", a.ToolCallID, a)
				}
			}
		})
	}
}

// TestDiscardDeletesNothingTheArchiveDidNotTake: a database that refuses the archive's rows (a
// full disk) stops the discard before any delete; the job says why and the messages are all in
// the DLQ, visible.
func TestDiscardDeletesNothingTheArchiveDidNotTake(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false)
	w.fail(t, failedCalls)
	db, err := sql.Open("sqlite", "file:"+w.DBPath+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TRIGGER full BEFORE INSERT ON archived_messages BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END`); err != nil {
		t.Fatal(err)
	}
	job := w.runKind(t, store.KindDiscard, engine.Selection{Tools: []string{"fetch_url", "read_file"}})
	if job.Status != store.MoveTaskFailed || job.Moved != 0 || !bytes.Contains([]byte(job.FailureReason), []byte("archive")) {
		t.Errorf("job = %s, %d deleted, %q; want FAILED, none, saying the archive refused", job.Status, job.Moved, job.FailureReason)
	}
	if n := len(w.receiveAll(t, w.dlq)); n != len(failedCalls) {
		t.Errorf("%d visible in the DLQ; want all %d", n, len(failedCalls))
	}
}
