package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func TestArchive(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "tool-calls-dlq")
		if st, err := s.ArchiveStats(ctx); err != nil || st.Messages != 0 || !st.Oldest.IsZero() {
			t.Fatalf("ArchiveStats of an empty archive = %+v, %v", st, err)
		}
		job, err := s.CreateSelectionJob(ctx, SelectionJob{
			MoveTask:  MoveTask{QueueID: q.ID, SourceARN: q.ARN, StartedAt: t0, Kind: KindDiscard},
			Selection: `{"tools":["read_file"]}`, Actor: "alice",
		})
		if err != nil || job.Kind != KindDiscard {
			t.Fatalf("CreateSelectionJob = %+v, %v", job, err)
		}
		m := ArchivedMessage{
			QueueID: q.ID, QueueARN: q.ARN, JobID: job.ID, MessageID: "m1", Body: `{"toolName":"read_file"}`,
			MessageAttributes: map[string]ArchivedAttribute{"blob": {DataType: "Binary", BinaryValue: []byte{0, 0xff, 1}}, "n": {DataType: "Number", StringValue: "3"}},
			SystemAttributes:  map[string]string{"AWSTraceHeader": "Root=1-x", "SenderId": "AIDA"},
			TraceHeader:       "Root=1-x", SentAt: t0.Add(-time.Hour), ReceiveCount: 4, ToolName: "read_file",
			Dimensions: map[string]string{"mcpServer": "research"}, Reason: "path_escape", DiscardedBy: "alice", DiscardedAt: t0,
		}
		entry := JournalEntry{MessageID: "m1", State: JournalSent, UpdatedAt: t0}
		// A resumed job archives again: the message is kept once.
		for range 2 {
			if err := s.Archive(ctx, job.ID, []ArchivedMessage{m}, []JournalEntry{entry}); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.ArchivedMessages(ctx, ArchiveFilter{QueueID: q.ID, NotRestored: true, Limit: 10})
		if err != nil || len(all) != 1 {
			t.Fatalf("ArchivedMessages = %d, %v; want the one message once", len(all), err)
		}
		got := all[0]
		if got.Body != m.Body || !bytes.Equal(got.MessageAttributes["blob"].BinaryValue, []byte{0, 0xff, 1}) || got.SystemAttributes["SenderId"] != "AIDA" ||
			!got.SentAt.Equal(m.SentAt) || got.Reason != "path_escape" || got.Dimensions["mcpServer"] != "research" {
			t.Errorf("archived %+v", got)
		}
		if j, err := s.JournalOf(ctx, job.ID, []string{"m1"}); err != nil || j["m1"].State != JournalSent {
			t.Errorf("the journal with the archive: %+v, %v", j, err)
		}
		if one, err := s.ArchivedMessage(ctx, q.ID, "m1"); err != nil || one.ID != got.ID {
			t.Errorf("ArchivedMessage = %+v, %v", one, err)
		}
		if _, err := s.ArchivedMessage(ctx, q.ID, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ArchivedMessage of nothing = %v; want ErrNotFound", err)
		}
		if err := s.MarkRestored(ctx, job.ID, []int64{got.ID}, "arn:aws:sqs:us-east-1:123456789012:tool-calls", t0.Add(time.Minute), nil); err != nil {
			t.Fatal(err)
		}
		if left, err := s.ArchivedMessages(ctx, ArchiveFilter{NotRestored: true}); err != nil || len(left) != 0 {
			t.Errorf("not restored after the restore: %d, %v", len(left), err)
		}
		if st, err := s.ArchiveStats(ctx); err != nil || st.Messages != 1 || !st.Oldest.Equal(t0) || st.BodyBytes != int64(len(m.Body)) {
			t.Errorf("ArchiveStats = %+v, %v", st, err)
		}
		// Retention deletes only what is older than it.
		if n, err := s.PruneArchive(ctx, t0); err != nil || n != 0 {
			t.Errorf("PruneArchive at the discard = %d, %v; want none", n, err)
		}
		if n, err := s.PruneArchive(ctx, t0.Add(time.Millisecond)); err != nil || n != 1 {
			t.Errorf("PruneArchive after it = %d, %v; want 1", n, err)
		}
	})
}
