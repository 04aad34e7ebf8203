package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSelectionJobsAndTheirJournal(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "tool-calls-dlq")
		if _, err := s.RunningSelectionJob(ctx, q.ID); !errors.Is(err, ErrNotFound) {
			t.Fatalf("RunningSelectionJob before any = %v; want ErrNotFound", err)
		}
		job, err := s.CreateSelectionJob(ctx, SelectionJob{
			MoveTask:  MoveTask{QueueID: q.ID, SourceARN: q.ARN, StartedAt: t0},
			Selection: `{"tools":["fetch_url"]}`, Actor: "alice",
		})
		if err != nil {
			t.Fatal(err)
		}
		// It is listed with the move tasks, as a selection, but not among SQS's running tasks.
		tasks, err := s.ListMoveTasks(ctx, q.ID, 0)
		if err != nil || len(tasks) != 1 || tasks[0].Kind != KindSelection || tasks[0].Status != MoveTaskRunning {
			t.Fatalf("ListMoveTasks = %+v, %v; want the job, RUNNING", tasks, err)
		}
		if running, err := s.RunningMoveTasks(ctx); err != nil || len(running) != 0 {
			t.Errorf("RunningMoveTasks = %+v, %v; want none (SQS does not list a job)", running, err)
		}
		if got, err := s.RunningSelectionJob(ctx, q.ID); err != nil || got.ID != job.ID {
			t.Errorf("RunningSelectionJob = %+v, %v; want the job", got, err)
		}
		if got, err := s.RunnableSelectionJobs(ctx); err != nil || len(got) != 1 || got[0].Actor != "alice" {
			t.Errorf("RunnableSelectionJobs = %+v, %v", got, err)
		}

		entries := []JournalEntry{
			{MessageID: "m1", State: JournalSending, DestinationARN: "arn:aws:sqs:us-east-1:123456789012:tool-calls", BodyHash: "h1", ToolCallID: "tc_1", ToolName: "fetch_url", Dimensions: map[string]string{"mcpServer": "crawler"}, UpdatedAt: t0},
			{MessageID: "m2", State: JournalHeld, ReceiptHandle: "rh2", UpdatedAt: t0},
			{MessageID: "m3", State: JournalHeld, ReceiptHandle: "rh3", UpdatedAt: t0},
		}
		if err := s.WriteJournal(ctx, job.ID, entries); err != nil {
			t.Fatal(err)
		}
		entries[0].State, entries[0].NewMessageID = JournalDeleted, "new-1"
		if err := s.WriteJournal(ctx, job.ID, entries[:1]); err != nil {
			t.Fatal(err)
		}
		got, err := s.JournalOf(ctx, job.ID, []string{"m1", "m2", "nope"})
		if err != nil || len(got) != 2 || got["m1"].State != JournalDeleted || got["m1"].NewMessageID != "new-1" || got["m1"].Dimensions["mcpServer"] != "crawler" {
			t.Fatalf("JournalOf = %+v, %v", got, err)
		}
		if counts, err := s.JournalCounts(ctx, job.ID); err != nil || counts[JournalHeld] != 2 || counts[JournalDeleted] != 1 {
			t.Errorf("JournalCounts = %v, %v; want 2 held, 1 deleted", counts, err)
		}
		held, err := s.JournalInState(ctx, job.ID, JournalHeld, "m2", 10)
		if err != nil || len(held) != 1 || held[0].MessageID != "m3" || held[0].ReceiptHandle != "rh3" {
			t.Errorf("JournalInState after m2 = %+v, %v; want m3", held, err)
		}

		if ok, err := s.CancelSelectionJob(ctx, job.ID, t0.Add(time.Second)); !ok || err != nil {
			t.Fatalf("CancelSelectionJob = %v, %v", ok, err)
		}
		job.Status, job.Moved, job.Matched, job.Held, job.Released = MoveTaskCancelled, 1, 1, 2, 2
		job.UpdatedAt, job.EndedAt = t0.Add(2*time.Second), t0.Add(2*time.Second)
		if err := s.SaveSelectionJob(ctx, job); err != nil {
			t.Fatal(err)
		}
		// An ended job keeps its end.
		again := job
		again.Status = MoveTaskRunning
		if err := s.SaveSelectionJob(ctx, again); err != nil {
			t.Fatal(err)
		}
		if ok, err := s.CancelSelectionJob(ctx, job.ID, t0); ok || err != nil {
			t.Errorf("CancelSelectionJob of an ended job = %v, %v; want false", ok, err)
		}
		jobs, err := s.SelectionJobs(ctx, []int64{job.ID, job.ID + 100})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("SelectionJobs = %+v, %v", jobs, err)
		}
		if j := jobs[job.ID]; j.Status != MoveTaskCancelled || j.Moved != 1 || j.ToMove != 1 || j.Released != 2 || !j.EndedAt.Equal(t0.Add(2*time.Second)) {
			t.Errorf("saved job = %+v", j)
		}
		if got, err := s.GetSelectionJob(ctx, job.ID); err != nil || got.Status != MoveTaskCancelled {
			t.Errorf("GetSelectionJob = %+v, %v", got, err)
		}

		// What the job moved is remembered for its outcome, once.
		for range 2 {
			if err := s.RememberSelection(ctx, job.ID, t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		mem, err := s.RedriveMemories(ctx, []int64{job.ID})
		if err != nil {
			t.Fatal(err)
		}
		m := mem[job.ID]
		if m.SampleID == 0 || m.Seen != 1 || len(m.Messages) != 1 || m.Messages[0].BodyHash != "h1" || m.Messages[0].ToolCallID != "tc_1" ||
			m.Messages[0].DestinationARN != "arn:aws:sqs:us-east-1:123456789012:tool-calls" {
			t.Errorf("RedriveMemories = %+v; want the one message moved, with the queue it went to", m)
		}
	})
}
