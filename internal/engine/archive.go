package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// archive is a discard's step in place of the send: each message whole in the archive, with the
// journal entry that says so, in one transaction. Only then does the job delete it from the DLQ.
// When the store cannot write, the job stops before any delete and releases what it took.
func (r *jobRun) archive(ctx context.Context, items []item) ([]item, error) {
	if len(items) == 0 {
		return nil, nil
	}
	now := r.e.now()
	msgs := make([]store.ArchivedMessage, len(items))
	entries := make([]store.JournalEntry, len(items))
	for i, it := range items {
		msgs[i] = r.archived(it, now)
		it.entry.State, it.entry.UpdatedAt = store.JournalSent, now
		items[i].entry, entries[i] = it.entry, it.entry
	}
	if err := r.e.opts.Store.Archive(context.WithoutCancel(ctx), r.job.ID, msgs, entries); err != nil {
		// Nothing was deleted: the messages go back once the workers stopped (released now,
		// another worker's receive would take them again, and hold them with no journal).
		r.releaseLater(entriesOf(items))
		return nil, fmt.Errorf("toolq could not write its archive (%s), so it deleted nothing and released what it held", storeCause(err))
	}
	return items, nil
}

// archived is a received message as the archive keeps it: whole, with what the triage read.
func (r *jobRun) archived(it item, now time.Time) store.ArchivedMessage {
	sys := it.m.Attributes
	attrs := make(map[string]store.ArchivedAttribute, len(it.m.MessageAttributes))
	for name, v := range it.m.MessageAttributes {
		attrs[name] = store.ArchivedAttribute{DataType: aws.ToString(v.DataType), StringValue: aws.ToString(v.StringValue), BinaryValue: v.BinaryValue}
	}
	received, _ := strconv.Atoi(sys[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
	sent, _ := strconv.ParseInt(sys[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64)
	return store.ArchivedMessage{
		QueueID: r.dlq.ID, QueueARN: r.dlq.ARN, JobID: r.job.ID, MessageID: aws.ToString(it.m.MessageId),
		Body: aws.ToString(it.m.Body), MessageAttributes: attrs, SystemAttributes: sys,
		GroupID:             sys[string(types.MessageSystemAttributeNameMessageGroupId)],
		DeduplicationID:     sys[string(types.MessageSystemAttributeNameMessageDeduplicationId)],
		SequenceNumber:      sys[string(types.MessageSystemAttributeNameSequenceNumber)],
		DeadLetterSourceARN: sys[string(types.MessageSystemAttributeNameDeadLetterQueueSourceArn)],
		TraceHeader:         sys[string(types.MessageSystemAttributeNameAWSTraceHeader)],
		SentAt:              time.UnixMilli(sent).UTC(), ReceiveCount: received, BodyHash: it.read.BodyHash,
		ToolName: it.read.ToolName, ToolCallID: it.read.ToolCallID, SessionID: it.read.SessionID,
		Dimensions: it.read.Dimensions, Reason: ReasonCode(it.read, r.e.opts.ErrorDimension),
		DiscardedBy: r.job.Actor, DiscardedAt: now,
	}
}

// sqsAttributes are archived message attributes as SQS takes them again.
func sqsAttributes(attrs map[string]store.ArchivedAttribute) map[string]types.MessageAttributeValue {
	if len(attrs) == 0 {
		return nil
	}
	out := make(map[string]types.MessageAttributeValue, len(attrs))
	for name, v := range attrs {
		a := types.MessageAttributeValue{DataType: aws.String(v.DataType), BinaryValue: v.BinaryValue}
		if v.BinaryValue == nil {
			a.StringValue = aws.String(v.StringValue)
		}
		out[name] = a
	}
	return out
}

func entriesOf(items []item) []store.JournalEntry {
	out := make([]store.JournalEntry, len(items))
	for i, it := range items {
		out[i] = it.entry
	}
	return out
}

// AsSampled is an archived message as the triage reads a message, for a selection to match.
func AsSampled(m store.ArchivedMessage) store.SampledMessage {
	attrs := make([]store.MessageAttribute, 0, len(m.MessageAttributes))
	for name, v := range m.MessageAttributes {
		attrs = append(attrs, store.MessageAttribute{Name: name, DataType: v.DataType, Value: v.StringValue})
	}
	return store.SampledMessage{
		QueueID: m.QueueID, MessageID: m.MessageID, GroupID: m.GroupID, DeduplicationID: m.DeduplicationID,
		SequenceNumber: m.SequenceNumber, DeadLetterSourceARN: m.DeadLetterSourceARN, Attributes: attrs,
		Body: m.Body, BodySize: len(m.Body), ToolName: m.ToolName, ToolCallID: m.ToolCallID, SessionID: m.SessionID,
		Dimensions: m.Dimensions, BodyHash: m.BodyHash, SentAt: m.SentAt,
	}
}

// archivePage is how many archived messages a restore reads at a time.
const archivePage = 100

// restore sends the archived messages of the queue that the selection names, and not restored
// yet, to the job's destination or each one's source, oldest first within each page, with their
// attributes, trace header and FIFO group; each is journaled sending before its send and marked
// restored with its journal entry after. A resumed restore sends again, with the same
// deduplication id, what was being sent, and skips what was restored.
func (r *jobRun) restore(ctx context.Context) {
	before := int64(0)
	for ctx.Err() == nil && !r.stopped() {
		if j, err := r.e.opts.Store.GetSelectionJob(ctx, r.job.ID); err == nil && j.Status == store.MoveTaskCancelling {
			r.stop(store.MoveTaskCancelled, "")
			return
		}
		page, err := r.e.opts.Store.ArchivedMessages(ctx, store.ArchiveFilter{QueueID: r.dlq.ID, BeforeID: before, Limit: archivePage})
		if err != nil {
			r.stop(store.MoveTaskFailed, fmt.Sprintf("toolq could not read its archive (%s)", storeCause(err)))
			return
		}
		if len(page) == 0 {
			return
		}
		before = page[len(page)-1].ID
		if err := r.restorePage(ctx, page); err != nil {
			if ctx.Err() == nil {
				r.stop(store.MoveTaskFailed, err.Error())
			}
			return
		}
		r.save(ctx)
	}
}

// restorePage restores the messages of one page of the archive that the selection names.
func (r *jobRun) restorePage(ctx context.Context, page []store.ArchivedMessage) error {
	keys := make([]string, len(page))
	for i, m := range page {
		keys[i] = strconv.FormatInt(m.ID, 10)
	}
	prev, err := r.e.opts.Store.JournalOf(ctx, r.job.ID, keys)
	if err != nil {
		return fmt.Errorf("toolq could not read its journal (%s)", storeCause(err))
	}
	now := r.e.now()
	var todo []store.ArchivedMessage
	var journal []store.JournalEntry
	// The page is newest first: send oldest first, as the messages were sent.
	for i := len(page) - 1; i >= 0; i-- {
		m := page[i]
		p, seen := prev[keys[i]]
		switch {
		case seen && p.State != store.JournalSending:
			continue // restored, or refused, by this job already
		case !seen && (!m.RestoredAt.IsZero() || !r.sel.Matches(AsSampled(m), r.e.opts.ErrorDimension)):
			continue
		}
		target := cmp.Or(r.job.DestinationARN, m.DeadLetterSourceARN)
		e := store.JournalEntry{MessageID: keys[i], State: store.JournalSending, DestinationARN: target, GroupID: m.GroupID,
			BodyHash: m.BodyHash, ToolCallID: m.ToolCallID, ToolName: m.ToolName, Dimensions: m.Dimensions, UpdatedAt: now}
		if !seen {
			r.mu.Lock()
			r.job.Matched++
			r.changed = true
			r.mu.Unlock()
		}
		todo = append(todo, m)
		journal = append(journal, e)
	}
	if err := r.e.opts.Store.WriteJournal(ctx, r.job.ID, journal); err != nil {
		return fmt.Errorf("toolq could not write its journal (%s), so it sent nothing more", storeCause(err))
	}
	for i := 0; i < len(todo); {
		// One destination a batch, ten at most, in order.
		n := 1
		for n < batch && i+n < len(todo) && journal[i+n].DestinationARN == journal[i].DestinationARN {
			n++
		}
		if err := r.restoreBatch(ctx, todo[i:i+n], journal[i:i+n]); err != nil {
			return err
		}
		i += n
	}
	return nil
}

func (r *jobRun) restoreBatch(ctx context.Context, msgs []store.ArchivedMessage, entries []store.JournalEntry) error {
	target := entries[0].DestinationARN
	var d destination
	if target == "" {
		d.refused = "it has no source queue (it was sent to the dead-letter queue directly): choose a destination to restore it"
	} else {
		d = r.destinationOf(ctx, target)
	}
	if d.refused != "" {
		now := r.e.now()
		for i := range entries {
			entries[i].State, entries[i].Error, entries[i].UpdatedAt = store.JournalFailed, d.refused, now
		}
		r.mu.Lock()
		r.job.Failed += int64(len(entries))
		r.mu.Unlock()
		return r.e.opts.Store.WriteJournal(context.WithoutCancel(ctx), r.job.ID, entries)
	}
	if err := r.pace(ctx, len(msgs)); err != nil {
		return err
	}
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(d.url)}
	for i, m := range msgs {
		in.Entries = append(in.Entries, r.sendEntry(i, d, outgoing{
			body: m.Body, attributes: sqsAttributes(m.MessageAttributes), trace: m.TraceHeader,
			group: m.GroupID, key: entries[i].MessageID,
		}))
	}
	out, err := r.client.SendMessageBatch(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		return errors.New(r.awsFailure("send to "+arn.QueueName(d.arn), "sqs:SendMessage", err))
	}
	now := r.e.now()
	var ids []int64
	var done []store.JournalEntry
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(aws.ToString(ok.Id))
		if i < 0 || i >= len(msgs) {
			continue
		}
		e := entries[i]
		e.State, e.NewMessageID, e.UpdatedAt = store.JournalSent, aws.ToString(ok.MessageId), now
		ids, done = append(ids, msgs[i].ID), append(done, e)
	}
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		if i >= 0 && i < len(msgs) {
			e := entries[i]
			e.State, e.Error, e.UpdatedAt = store.JournalFailed, "SQS refused the send ("+safetext.Line(aws.ToString(f.Code), 64)+")", now
			done = append(done, e)
			r.mu.Lock()
			r.job.Failed++
			r.mu.Unlock()
		}
	}
	if err := r.e.opts.Store.MarkRestored(context.WithoutCancel(ctx), r.job.ID, ids, d.arn, now, done); err != nil {
		return fmt.Errorf("toolq could not mark what it restored (%s), so it stopped", storeCause(err))
	}
	r.mu.Lock()
	r.job.Moved += int64(len(ids))
	r.changed = true
	r.mu.Unlock()
	return nil
}
