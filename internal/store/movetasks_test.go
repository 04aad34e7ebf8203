package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestMoveTasks(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		dlq := addQueue(t, s, "web-search-dlq")
		other := addQueue(t, s, "exports-dlq")

		old := MoveTask{QueueID: dlq.ID, Status: MoveTaskCompleted, SourceARN: dlq.ARN, Moved: 5, ToMove: 5, StartedAt: t0.Add(-time.Hour)}
		if _, err := s.UpsertMoveTask(ctx, old); err != nil {
			t.Fatal(err)
		}
		running := MoveTask{QueueID: dlq.ID, TaskHandle: "h-1", Status: MoveTaskRunning, SourceARN: dlq.ARN, MaxPerSecond: 10, ToMove: 100, StartedAt: t0}
		id, err := s.UpsertMoveTask(ctx, running)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: other.ID, TaskHandle: "h-2", Status: MoveTaskCancelling, SourceARN: other.ARN, StartedAt: t0}); err != nil {
			t.Fatal(err)
		}

		// ListMessageMoveTasks reports progress without the handle once the task is over.
		done := running
		done.TaskHandle, done.Status, done.Moved, done.UpdatedAt = "", MoveTaskCompleted, 100, t0.Add(time.Minute)
		id2, err := s.UpsertMoveTask(ctx, done)
		if err != nil || id2 != id {
			t.Fatalf("second upsert = %d, %v; want id %d", id2, err, id)
		}

		ts, err := s.ListMoveTasks(ctx, dlq.ID, 0)
		if err != nil || len(ts) != 2 {
			t.Fatalf("ListMoveTasks = %d, %v; want 2", len(ts), err)
		}
		if got := ts[0]; got.ID != id || got.TaskHandle != "h-1" || got.Status != MoveTaskCompleted || got.Moved != 100 || !got.UpdatedAt.Equal(t0.Add(time.Minute)) || got.MaxPerSecond != 10 {
			t.Errorf("newest task = %+v", got)
		}
		if one, _ := s.ListMoveTasks(ctx, dlq.ID, 1); len(one) != 1 || one[0].ID != id {
			t.Errorf("ListMoveTasks limit 1 = %+v", one)
		}
		if got, err := s.GetMoveTask(ctx, id); err != nil || got.TaskHandle != "h-1" || got.Status != MoveTaskCompleted || got.QueueID != dlq.ID {
			t.Errorf("GetMoveTask = %+v, %v", got, err)
		}
		if _, err := s.GetMoveTask(ctx, 404); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetMoveTask(404) = %v; want ErrNotFound", err)
		}

		recent, err := s.RecentMoveTasks(ctx, 1)
		if err != nil || len(recent) != 2 || len(recent[dlq.ID]) != 1 || recent[dlq.ID][0].ID != id || recent[other.ID][0].TaskHandle != "h-2" {
			t.Errorf("RecentMoveTasks(1) = %+v, %v; want each queue's newest", recent, err)
		}
		if recent, err = s.RecentMoveTasks(ctx, 5); err != nil || len(recent[dlq.ID]) != 2 || recent[dlq.ID][1].Status != MoveTaskCompleted || recent[dlq.ID][1].Moved != 5 {
			t.Errorf("RecentMoveTasks(5) of %s = %+v, %v; want both, newest first", dlq.Name, recent[dlq.ID], err)
		}

		run, err := s.RunningMoveTasks(ctx)
		if err != nil || len(run) != 1 || run[0].TaskHandle != "h-2" || !run[0].Running() {
			t.Errorf("RunningMoveTasks = %+v, %v; want the cancelling one", run, err)
		}

		if _, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: 404, SourceARN: "arn:x", Status: MoveTaskRunning, StartedAt: t0}); !errors.Is(err, ErrNotFound) {
			t.Errorf("task of a missing queue = %v; want ErrNotFound", err)
		}
		if _, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: dlq.ID, SourceARN: dlq.ARN}); err == nil {
			t.Error("task without a start time was stored")
		}
	})
}
