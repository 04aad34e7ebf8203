package store

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestRememberRedriveAndArrivals: a redrive remembers its DLQ's newest sample before the start
// (once), and the messages that come later with a remembered body hash or tool call id are the
// arrivals to match, on both engines.
func TestRememberRedriveAndArrivals(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		dlq := addQueue(t, s, "tools-dlq.fifo")
		other := addQueue(t, s, "other-dlq")
		const source = "arn:aws:sqs:us-east-1:000000000000:tools.fifo"
		msg := func(id, hash, call, tool string, sent time.Time) SampledMessage {
			return SampledMessage{MessageID: id, BodyHash: hash, ToolCallID: call, ToolName: tool, GroupID: "sess_" + call,
				SentAt: sent, Dimensions: map[string]string{"mcpServer": "research"}, DeadLetterSourceARN: source}
		}
		// Before the redrive: four messages, of which the sample saw three of a DLQ of six.
		if _, err := s.SaveSample(ctx, Sample{QueueID: dlq.ID, At: t0.Add(-time.Hour), Seen: 1, ApproxVisible: 1},
			[]SampledMessage{msg("m0", "h0", "tc_0", "old", t0.Add(-2*time.Hour))}, nil); err != nil {
			t.Fatal(err)
		}
		before := []SampledMessage{msg("m1", "h1", "tc_1", "web_search", t0.Add(-time.Hour)), msg("m2", "h2", "tc_2", "web_search", t0.Add(-time.Hour)),
			msg("m3", "", "tc_3", "fetch_url", t0.Add(-time.Hour))}
		if _, err := s.SaveSample(ctx, Sample{QueueID: dlq.ID, At: t0.Add(-time.Minute), Seen: 3, ApproxVisible: 6}, before, nil); err != nil {
			t.Fatal(err)
		}
		taskID, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: dlq.ID, Status: MoveTaskRunning, SourceARN: dlq.ARN, StartedAt: t0, ToMove: 6})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []bool{true, false} {
			got, err := s.RememberRedrive(ctx, taskID, t0.Add(time.Second))
			if err != nil || got != want {
				t.Fatalf("RememberRedrive #%d = %v, %v; want %v", i+1, got, err, want)
			}
		}
		// A sample taken after the start is not what the task moved.
		later := []SampledMessage{
			msg("n1", "h1", "tc_1", "web_search", t0.Add(time.Second)),        // h1 back
			msg("n3", "", "tc_3", "fetch_url", t0.Add(time.Second)),           // tc_3 back, no hash
			msg("n9", "h9", "tc_9", "web_search", t0.Add(time.Second)),        // a new failure
			msg("m2", "h2", "tc_2", "web_search", t0.Add(-time.Hour)),         // not moved yet
			msg("n0", "h0", "tc_0", "old", t0.Add(time.Second)),               // of the older sample only
			msg("n5", "hx", "tc_1", "web_search", t0.Add(2*time.Second)),      // tc_1 again, another body
			msg("n6", "h2", "", "web_search", t0.Add(-30*time.Second)),        // h2, sent before the start
			msg("n7", "h1", "tc_1", "web_search", t0.Add(-2*time.Hour).UTC()), // h1, first seen too early below
		}
		if _, err := s.SaveSample(ctx, Sample{QueueID: dlq.ID, At: t0.Add(time.Minute), Seen: len(later), ApproxVisible: 8}, later, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SaveSample(ctx, Sample{QueueID: other.ID, At: t0.Add(time.Minute), Seen: 1, ApproxVisible: 1},
			[]SampledMessage{msg("o1", "h1", "tc_1", "web_search", t0.Add(time.Second))}, nil); err != nil {
			t.Fatal(err)
		}

		mems, err := s.RedriveMemories(ctx, []int64{taskID, taskID + 100})
		if err != nil {
			t.Fatal(err)
		}
		m, ok := mems[taskID]
		if !ok || len(mems) != 1 {
			t.Fatalf("memories = %+v", mems)
		}
		if m.Seen != 3 || m.ApproxVisible != 6 || m.Coverage() != 0.5 || !m.SampleAt.Equal(t0.Add(-time.Minute)) || len(m.Messages) != 3 {
			t.Fatalf("memory = %+v; want the sample of a minute before, 3 of 6", m)
		}
		// A task without a destination sends each message back to the queue it failed in.
		if r := m.Messages[0]; r.MessageID != "m1" || r.BodyHash != "h1" || r.ToolCallID != "tc_1" || r.GroupID != "sess_tc_1" || r.Dimensions["mcpServer"] != "research" ||
			r.DestinationARN != source {
			t.Errorf("first remembered = %+v", r)
		}
		arrivals, err := s.RedrivenArrivals(ctx, []int64{dlq.ID}, t0)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, a := range arrivals {
			got = append(got, a.MessageID)
			if a.DeadLetterSourceARN != source {
				t.Errorf("%s came from %q, want %q", a.MessageID, a.DeadLetterSourceARN, source)
			}
			if !a.FirstSeen.Equal(t0.Add(time.Minute)) || !a.LastSeen.Equal(t0.Add(time.Minute)) {
				t.Errorf("%s first seen %v, last %v", a.MessageID, a.FirstSeen, a.LastSeen)
			}
		}
		// m2 was first seen before the redrive: it is no arrival. The others carry a remembered
		// hash or call id (the matching by time is the views').
		if want := "[n1 n3 n5 n6 n7]"; fmt.Sprint(got) != want {
			t.Errorf("arrivals = %v; want %s", got, want)
		}

		// A task with a destination sent every message there.
		const elsewhere = "arn:aws:sqs:us-east-1:000000000000:replay.fifo"
		t1, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: dlq.ID, Status: MoveTaskRunning, SourceARN: dlq.ARN, DestinationARN: elsewhere,
			StartedAt: t0.Add(time.Hour), ToMove: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.RememberRedrive(ctx, t1, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if mems, err = s.RedriveMemories(ctx, []int64{t1}); err != nil || len(mems[t1].Messages) != len(later) {
			t.Fatalf("memory of the task with a destination = %+v, %v", mems, err)
		}
		for _, r := range mems[t1].Messages {
			if r.DestinationARN != elsewhere {
				t.Errorf("%s remembered as sent to %q, want %q", r.MessageID, r.DestinationARN, elsewhere)
			}
		}

		// A task of a DLQ never sampled before its start remembers no sample.
		t2, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: other.ID, Status: MoveTaskRunning, SourceARN: other.ARN, StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := s.RememberRedrive(ctx, t2, t0); err != nil || got {
			t.Fatalf("RememberRedrive of an unsampled DLQ = %v, %v", got, err)
		}
		mems, err = s.RedriveMemories(ctx, []int64{t2})
		if err != nil || mems[t2].SampleID != 0 || len(mems[t2].Messages) != 0 {
			t.Fatalf("memory of the unsampled DLQ = %+v, %v", mems, err)
		}
		if _, err := s.RememberRedrive(ctx, 9999, t0); err == nil {
			t.Error("RememberRedrive of no task succeeded")
		}
	})
}

// TestRedriveDestinationsBackfill: the migration that keeps where each remembered message went
// fills it in for redrives remembered before it, from the task's destination or the message's
// DeadLetterQueueSourceArn, on both engines.
func TestRedriveDestinationsBackfill(t *testing.T) {
	t.Parallel()
	const destinationsVersion = 19 // migrations/00019_redrive_destinations.sql
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		dlq := addQueue(t, s, "tools-dlq")
		const source, elsewhere = "arn:aws:sqs:us-east-1:123456789012:tools", "arn:aws:sqs:us-east-1:123456789012:replay"
		if _, err := s.SaveSample(ctx, Sample{QueueID: dlq.ID, At: t0.Add(-time.Minute), Seen: 2, ApproxVisible: 2}, []SampledMessage{
			{MessageID: "m1", BodyHash: "h1", ToolCallID: "tc_1", SentAt: t0.Add(-time.Hour), DeadLetterSourceARN: source},
			{MessageID: "m2", BodyHash: "h2", ToolCallID: "tc_2", SentAt: t0.Add(-time.Hour)}, // sent straight to the DLQ
		}, nil); err != nil {
			t.Fatal(err)
		}
		back, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: dlq.ID, Status: MoveTaskCompleted, SourceARN: dlq.ARN, StartedAt: t0})
		if err != nil {
			t.Fatal(err)
		}
		there, err := s.UpsertMoveTask(ctx, MoveTask{QueueID: dlq.ID, Status: MoveTaskCompleted, SourceARN: dlq.ARN, DestinationARN: elsewhere, StartedAt: t0.Add(time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{back, there} {
			if _, err := s.RememberRedrive(ctx, id, t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		p := mustProvider(t, s)
		if _, err := p.DownTo(ctx, destinationsVersion-1); err != nil {
			t.Fatalf("DownTo(%d): %v", destinationsVersion-1, err)
		}
		if _, err := p.UpTo(ctx, destinationsVersion); err != nil {
			t.Fatalf("UpTo(%d): %v", destinationsVersion, err)
		}
		mems, err := s.RedriveMemories(ctx, []int64{back, there})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]map[string]string{back: {"m1": source, "m2": ""}, there: {"m1": elsewhere, "m2": elsewhere}}
		for id, dests := range want {
			if len(mems[id].Messages) != len(dests) {
				t.Fatalf("task %d remembers %+v", id, mems[id].Messages)
			}
			for _, r := range mems[id].Messages {
				if r.DestinationARN != dests[r.MessageID] {
					t.Errorf("task %d: %s went to %q after the backfill, want %q", id, r.MessageID, r.DestinationARN, dests[r.MessageID])
				}
			}
		}
	})
}
