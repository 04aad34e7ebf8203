package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/awscalls"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
)

// batch is SQS's limit on the entries of one batch call and the messages of one receive.
const batch = 10

// jobRun is one run of a job on this replica: from its start or resume to its end, or to the
// replica's loss of the lead.
type jobRun struct {
	e      *Engine
	sel    Selection
	dlq    store.Queue
	client SQSAPI
	limit  int

	mu    sync.Mutex
	job   store.SelectionJob // its counts and status, saved by the watcher
	ended string             // the status to end with once the workers stop; "" while running
	// failure is why the job failed, for its FailureReason.
	failure string
	groups  map[string]bool // FIFO groups decided in this run: chosen or not
	// unjournaled are messages the job took and could not journal (its store failed): released
	// by their handles once the workers stopped, without the store.
	unjournaled []store.JournalEntry
	dests       map[string]destination
	limitHit    bool
	paceAt      time.Time
	changed     bool
}

// destination is where a job sends: a queue's URL, or why it cannot send there.
type destination struct {
	arn, url string
	fifo     bool
	refused  string
}

// item is one received message on its way.
type item struct {
	m     types.Message
	read  store.SampledMessage
	entry store.JournalEntry
}

func (e *Engine) runJob(ctx context.Context, j store.SelectionJob) {
	r := &jobRun{e: e, job: j, groups: map[string]bool{}, dests: map[string]destination{}}
	if err := r.prepare(ctx); err != nil {
		r.stop(store.MoveTaskFailed, err.Error())
	}
	if r.ended == "" && j.Status == store.MoveTaskCancelling {
		r.stop(store.MoveTaskCancelled, "")
	}
	if r.ended == "" {
		if err := r.resume(ctx); err != nil && ctx.Err() == nil {
			r.stop(store.MoveTaskFailed, err.Error())
		}
	}
	switch {
	case r.ended != "":
	case j.Kind == store.KindRestore:
		r.restore(ctx)
	default:
		r.scan(ctx)
	}
	if ctx.Err() != nil {
		// This replica stopped leading or is shutting down: the job stays RUNNING and whoever
		// leads next resumes it from its journal.
		r.save(context.WithoutCancel(ctx))
		return
	}
	r.finish(ctx)
}

// resume takes a job up where its journal says a run before this one (killed, or on a replica
// that lost the lead) left it. Its counts come from the journal. What it had sent and not yet
// deleted is deleted with the handle it journaled; what it held or was sending it releases, so
// that this run's scan meets it again at once instead of after the dead run's hold (for a
// message that was being sent, within SQS's five-minute deduplication window, so that a FIFO
// destination drops the second send). A new job has an empty journal: nothing to do.
func (r *jobRun) resume(ctx context.Context) error {
	counts, err := r.e.opts.Store.JournalCounts(ctx, r.job.ID)
	if err != nil {
		return fmt.Errorf("toolq could not read its journal (%s)", storeCause(err))
	}
	if len(counts) == 0 {
		return nil
	}
	r.mu.Lock()
	j := &r.job
	j.Matched = counts[store.JournalSending] + counts[store.JournalSent] + counts[store.JournalDeleted] + counts[store.JournalFailed]
	j.Moved, j.Failed = counts[store.JournalDeleted], counts[store.JournalFailed]
	j.Held, j.Released = counts[store.JournalHeld]+counts[store.JournalReleased], counts[store.JournalReleased]
	if j.Kind == store.KindRestore {
		j.Moved = counts[store.JournalSent] // a restore's last step is the send
		j.Held, j.Released = 0, 0
	}
	r.changed = true
	r.mu.Unlock()
	if r.job.Kind == store.KindRestore {
		return nil
	}
	var sent []item
	r.eachHeld(ctx, store.JournalSent, func(entries []store.JournalEntry) {
		for _, e := range entries {
			sent = append(sent, item{m: types.Message{ReceiptHandle: aws.String(e.ReceiptHandle)}, entry: e})
		}
	})
	for chunk := range slices.Chunk(sent, batch) {
		if err := r.delete(ctx, chunk); err != nil {
			return err
		}
	}
	for _, state := range []string{store.JournalHeld, store.JournalSending, store.JournalFailed} {
		r.eachHeld(ctx, state, func(entries []store.JournalEntry) { r.changeVisibility(ctx, entries, 0) })
	}
	return nil
}

// prepare reads what the job needs: its selection, its queue and the queue's client.
func (r *jobRun) prepare(ctx context.Context) error {
	var err error
	if r.sel, err = ParseSelection(r.job.Selection); err != nil {
		return errors.New("the job's selection cannot be read")
	}
	if r.dlq, err = r.e.opts.Store.GetQueue(ctx, r.job.QueueID); err != nil {
		return fmt.Errorf("the dead-letter queue is no longer known to toolq")
	}
	c, ok := r.e.opts.Clients[r.dlq.Scope()]
	if !ok || c == nil {
		return fmt.Errorf("no AWS client is configured for %s", safetext.Line(r.dlq.Scope(), 100))
	}
	r.client = c
	r.limit = r.e.opts.InFlightLimit
	if r.limit == 0 {
		r.limit = 110_000
		if r.dlq.FIFO {
			r.limit = 18_000
		}
	}
	return nil
}

// scan runs the workers until the queue holds nothing more to receive, the job is cancelled or
// fails, or ctx ends; beside them a watcher saves progress, notices a cancel and extends holds.
func (r *jobRun) scan(ctx context.Context) {
	work, stopWatch := context.WithCancel(ctx)
	var watch sync.WaitGroup
	watch.Go(func() { r.watch(work) })
	var wg sync.WaitGroup
	for range r.e.opts.Workers {
		wg.Go(func() { r.work(ctx) })
	}
	wg.Wait()
	stopWatch()
	watch.Wait()
}

// watch saves the job's counts and reads its status every poll: a cancel asked on any replica
// stops the workers at their next step. It extends the hold of what the job holds every half
// hold.
func (r *jobRun) watch(ctx context.Context) {
	tick := time.NewTicker(r.e.opts.Poll)
	defer tick.Stop()
	extended := r.e.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r.save(ctx)
		if j, err := r.e.opts.Store.GetSelectionJob(ctx, r.job.ID); err == nil && j.Status == store.MoveTaskCancelling {
			r.stop(store.MoveTaskCancelled, "")
		}
		if r.e.now().Sub(extended) >= r.e.opts.Hold/2 {
			extended = r.e.now()
			r.eachHeld(ctx, store.JournalHeld, func(entries []store.JournalEntry) {
				r.changeVisibility(ctx, entries, int32(r.e.opts.Hold/time.Second))
			})
		}
	}
}

// stop ends the job with a status once its workers have stopped; the first reason wins.
func (r *jobRun) stop(status store.MoveTaskStatus, failure string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended == "" {
		r.ended, r.failure = string(status), failure
	}
}

func (r *jobRun) stopped() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ended != ""
}

// work is one receive-send-delete loop.
func (r *jobRun) work(ctx context.Context) {
	for ctx.Err() == nil && !r.stopped() {
		r.mu.Lock()
		full := r.job.Held >= int64(r.limit)
		if full {
			r.limitHit = true
		}
		r.mu.Unlock()
		if full {
			return
		}
		out, err := r.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(r.dlq.URL),
			MaxNumberOfMessages:         batch,
			VisibilityTimeout:           int32(r.e.opts.Hold / time.Second),
			WaitTimeSeconds:             r.e.opts.WaitTimeSeconds,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() == nil {
				r.stop(store.MoveTaskFailed, r.awsFailure("receive from "+r.dlq.Name, "sqs:ReceiveMessage", err))
			}
			return
		}
		if len(out.Messages) == 0 {
			return
		}
		if err := r.process(ctx, out.Messages); err != nil {
			if ctx.Err() == nil {
				r.stop(store.MoveTaskFailed, err.Error())
			}
			return
		}
	}
}

// process decides, journals and moves one receive's messages. The decision and its journal are
// taken under the run's lock, so that two workers never decide one message twice.
func (r *jobRun) process(ctx context.Context, msgs []types.Message) error {
	sending, deleting, err := r.decide(ctx, msgs)
	if err != nil {
		// Not journaled: the job stops, and what this receive took goes back when it does.
		entries := make([]store.JournalEntry, len(msgs))
		for i, m := range msgs {
			entries[i] = store.JournalEntry{MessageID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle)}
		}
		r.releaseLater(entries)
		return err
	}
	move := r.send
	if r.job.Kind == store.KindDiscard {
		move = r.archive
	}
	moved, err := move(ctx, sending)
	if err != nil {
		return err
	}
	return r.delete(ctx, append(deleting, moved...))
}

// decide reads each message, finds what the journal says of it and what is to be done, and
// journals that before anything is done: held (no match), sending (a match, or a resumed send),
// failed (a match with nowhere to go). Messages the journal says were sent are only deleted.
func (r *jobRun) decide(ctx context.Context, msgs []types.Message) (sending, deleting []item, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i] = aws.ToString(m.MessageId)
	}
	prev, err := r.e.opts.Store.JournalOf(ctx, r.job.ID, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("toolq could not read its journal (%s), so it stopped before moving anything more", storeCause(err))
	}
	items := make([]item, len(msgs))
	for i, m := range msgs {
		items[i] = item{m: m, read: r.e.opts.Read(r.dlq.ID, m)}
	}
	r.decideGroups(items, prev)
	now := r.e.now()
	var journal []store.JournalEntry
	for _, it := range items {
		p, seen := prev[it.read.MessageID]
		e := store.JournalEntry{
			MessageID: it.read.MessageID, GroupID: it.read.GroupID, ReceiptHandle: aws.ToString(it.m.ReceiptHandle),
			BodyHash: it.read.BodyHash, ToolCallID: it.read.ToolCallID, ToolName: it.read.ToolName,
			Dimensions: it.read.Dimensions, UpdatedAt: now,
		}
		switch {
		case seen && (p.State == store.JournalSent || p.State == store.JournalDeleted):
			// Sent before a restart, or received again before its delete: delete it, never send twice.
			e.State, e.DestinationARN, e.NewMessageID = p.State, p.DestinationARN, p.NewMessageID
			it.entry = e
			deleting = append(deleting, it)
			journal = append(journal, e)
			continue
		case seen && p.State == store.JournalSending:
			e.State, e.DestinationARN = store.JournalSending, p.DestinationARN
		case seen && p.State == store.JournalFailed:
			// It failed earlier in this job: kept with the handle to release it, not tried again.
			e.State, e.DestinationARN, e.Error = store.JournalFailed, p.DestinationARN, p.Error
		case r.chosen(it.read) && r.job.Kind == store.KindDiscard:
			e.State = store.JournalSending // to the archive
			r.job.Matched++
		case r.chosen(it.read):
			d := r.destinationFor(ctx, it.read)
			e.DestinationARN = d.arn
			if d.refused != "" {
				e.State, e.Error = store.JournalFailed, d.refused
				r.job.Matched++
				r.job.Failed++
			} else {
				e.State = store.JournalSending
				r.job.Matched++
			}
		default:
			e.State = store.JournalHeld
			if !seen || p.State != store.JournalHeld {
				r.job.Held++
			}
		}
		it.entry = e
		if e.State == store.JournalSending {
			sending = append(sending, it)
		}
		journal = append(journal, e)
	}
	if err := r.e.opts.Store.WriteJournal(ctx, r.job.ID, journal); err != nil {
		return nil, nil, fmt.Errorf("toolq could not write its journal (%s), so it stopped before sending anything more", storeCause(err))
	}
	r.changed = true
	return sending, deleting, nil
}

// decideGroups, on a FIFO queue, chooses each group of the receive not decided yet: chosen when
// any of its received messages matches, or when the journal shows the job already moving it.
func (r *jobRun) decideGroups(items []item, prev map[string]store.JournalEntry) {
	if !r.dlq.FIFO {
		return
	}
	// A group's first matching message may come after others of the same receive: decide on
	// the whole receive. A group decided in an earlier receive keeps its decision (its earlier
	// messages were held as not chosen: moving a later one alone would break the session's
	// order), unless the journal says this job is moving it.
	here := map[string]bool{}
	for _, it := range items {
		g := it.read.GroupID
		p := prev[it.read.MessageID]
		moving := p.State == store.JournalSending || p.State == store.JournalSent || p.State == store.JournalDeleted
		if _, before := r.groups[g]; before && !moving {
			continue
		}
		here[g] = here[g] || moving || r.sel.Matches(it.read, r.e.opts.ErrorDimension)
	}
	maps.Copy(r.groups, here)
}

// chosen reports whether a message is to move: on FIFO its group's decision, else its own match.
func (r *jobRun) chosen(m store.SampledMessage) bool {
	if r.dlq.FIFO {
		return r.groups[m.GroupID]
	}
	return r.sel.Matches(m, r.e.opts.ErrorDimension)
}

// destinationFor is where a message goes: the job's destination, else the source queue it came
// from (DeadLetterQueueSourceArn), resolved once per queue. A destination in another account, of
// the other type, or gone is refused for the messages that would go there; they stay in the DLQ.
func (r *jobRun) destinationFor(ctx context.Context, m store.SampledMessage) destination {
	target := r.job.DestinationARN
	if target == "" {
		target = m.DeadLetterSourceARN
	}
	if target == "" {
		return destination{refused: "it has no DeadLetterQueueSourceArn (it was sent to the dead-letter queue directly): choose a destination to move it"}
	}
	if d, ok := r.dests[target]; ok {
		return d
	}
	d := r.resolve(ctx, target)
	r.dests[target] = d
	return d
}

func (r *jobRun) resolve(ctx context.Context, target string) destination {
	d := destination{arn: target}
	a, err := arn.ParseQueue(target)
	switch {
	case err != nil:
		d.refused = "its source is not an SQS queue ARN"
	case r.dlq.AccountID != "" && a.Account != r.dlq.AccountID:
		d.refused = fmt.Sprintf("its destination %s is in another account than the dead-letter queue", safetext.Line(a.Name, 80))
	case strings.HasSuffix(a.Name, ".fifo") != r.dlq.FIFO:
		d.refused = fmt.Sprintf("its destination %s is not of the dead-letter queue's type (FIFO or standard)", safetext.Line(a.Name, 80))
	}
	if d.refused != "" {
		return d
	}
	d.fifo = r.dlq.FIFO
	out, err := r.client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(a.Name), QueueOwnerAWSAccountId: aws.String(a.Account)})
	switch {
	case err != nil && awscalls.QueueMissing(err):
		d.refused = fmt.Sprintf("its destination %s no longer exists", safetext.Line(a.Name, 80))
	case err != nil:
		d.refused = r.awsFailure("find the queue "+safetext.Line(a.Name, 80), "sqs:GetQueueUrl", err)
	default:
		d.url = aws.ToString(out.QueueUrl)
	}
	return d
}

// send sends the messages, each with its body, message attributes, trace header and, on FIFO,
// its group and the job's deduplication id; in the order received, by destination, ten at a
// time. What SQS accepted is journaled sent with its new id; what it refused, failed. A failed
// call stops the job: its messages are journaled failed and stay in the DLQ.
func (r *jobRun) send(ctx context.Context, items []item) (sent []item, err error) {
	var order []string
	byDest := map[string][]item{}
	for _, it := range items {
		if _, ok := byDest[it.entry.DestinationARN]; !ok {
			order = append(order, it.entry.DestinationARN)
		}
		byDest[it.entry.DestinationARN] = append(byDest[it.entry.DestinationARN], it)
	}
	for _, target := range order {
		d := r.destinationOf(ctx, target)
		for chunk := range slices.Chunk(byDest[target], batch) {
			if err := r.pace(ctx, len(chunk)); err != nil {
				return sent, err
			}
			ok, err := r.sendBatch(ctx, d, chunk)
			sent = append(sent, ok...)
			if err != nil {
				return sent, err
			}
		}
	}
	return sent, nil
}

// destinationOf is the destination of a resumed send, resolved once.
func (r *jobRun) destinationOf(ctx context.Context, target string) destination {
	r.mu.Lock()
	defer r.mu.Unlock()
	if d, ok := r.dests[target]; ok {
		return d
	}
	d := r.resolve(ctx, target)
	r.dests[target] = d
	return d
}

func (r *jobRun) sendBatch(ctx context.Context, d destination, chunk []item) (sent []item, err error) {
	if d.refused != "" {
		return nil, r.journalFailed(ctx, chunk, d.refused)
	}
	in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(d.url)}
	for i, it := range chunk {
		in.Entries = append(in.Entries, r.sendEntry(i, d, outgoing{
			body: aws.ToString(it.m.Body), attributes: it.m.MessageAttributes,
			trace: it.m.Attributes[string(types.MessageSystemAttributeNameAWSTraceHeader)],
			group: it.read.GroupID, key: it.read.MessageID,
		}))
	}
	out, err := r.client.SendMessageBatch(ctx, in)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err // journaled sending: the next run sends it again with the same id
		}
		why := r.awsFailure("send to "+arn.QueueName(d.arn), "sqs:SendMessage", err)
		return nil, errors.Join(errors.New(why), r.journalFailed(ctx, chunk, why))
	}
	now := r.e.now()
	var journal []store.JournalEntry
	for _, ok := range out.Successful {
		i, _ := strconv.Atoi(aws.ToString(ok.Id))
		if i < 0 || i >= len(chunk) {
			continue
		}
		it := chunk[i]
		it.entry.State, it.entry.NewMessageID, it.entry.UpdatedAt = store.JournalSent, aws.ToString(ok.MessageId), now
		sent = append(sent, it)
		journal = append(journal, it.entry)
	}
	var refused []item
	var codes []string
	for _, f := range out.Failed {
		i, _ := strconv.Atoi(aws.ToString(f.Id))
		if i >= 0 && i < len(chunk) {
			refused = append(refused, chunk[i])
			codes = append(codes, safetext.Line(aws.ToString(f.Code), 64))
		}
	}
	if err := r.e.opts.Store.WriteJournal(context.WithoutCancel(ctx), r.job.ID, journal); err != nil {
		// Sent, not journaled: a restart sends them again with the same deduplication id.
		return nil, fmt.Errorf("toolq could not journal what it sent (%s), so it stopped", storeCause(err))
	}
	if len(refused) > 0 {
		if err := r.journalFailed(ctx, refused, "SQS refused the send ("+strings.Join(slices.Compact(slices.Sorted(slices.Values(codes))), ", ")+")"); err != nil {
			return sent, err
		}
	}
	return sent, nil
}

// outgoing is a message as a job sends it: a received one (a redrive) or an archived one (a
// restore). key names it in the job's journal, and so in its deduplication id.
type outgoing struct {
	body       string
	attributes map[string]types.MessageAttributeValue
	trace      string // AWSTraceHeader
	group      string
	key        string
}

// sendEntry is the i-th entry of a SendMessageBatch to d: the body, every message attribute,
// the trace header (the one system attribute a sender may set), and on FIFO the group and the
// job's deduplication id for the message.
func (r *jobRun) sendEntry(i int, d destination, o outgoing) types.SendMessageBatchRequestEntry {
	e := types.SendMessageBatchRequestEntry{
		Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(o.body), MessageAttributes: o.attributes,
	}
	if o.trace != "" {
		e.MessageSystemAttributes = map[string]types.MessageSystemAttributeValue{
			string(types.MessageSystemAttributeNameAWSTraceHeader): {DataType: aws.String("String"), StringValue: aws.String(o.trace)},
		}
	}
	if d.fifo {
		e.MessageGroupId = aws.String(o.group)
		e.MessageDeduplicationId = aws.String(DeduplicationID(r.job.ID, o.key))
	}
	return e
}

// journalFailed journals messages that matched but could not be sent: they stay in the DLQ and
// are released with what the job held.
func (r *jobRun) journalFailed(ctx context.Context, items []item, why string) error {
	now := r.e.now()
	entries := make([]store.JournalEntry, len(items))
	for i, it := range items {
		it.entry.State, it.entry.Error, it.entry.UpdatedAt = store.JournalFailed, why, now
		entries[i] = it.entry
	}
	r.mu.Lock()
	r.job.Failed += int64(len(items))
	r.mu.Unlock()
	if err := r.e.opts.Store.WriteJournal(context.WithoutCancel(ctx), r.job.ID, entries); err != nil {
		return fmt.Errorf("toolq could not journal a failed send (%s), so it stopped", storeCause(err))
	}
	return nil
}

// delete deletes sent messages from the DLQ, ten at a time, and journals them deleted: moved. A
// delete SQS refuses leaves the message journaled sent, deleted when the job meets it again.
func (r *jobRun) delete(ctx context.Context, items []item) error {
	for chunk := range slices.Chunk(items, batch) {
		in := &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(r.dlq.URL)}
		for i, it := range chunk {
			in.Entries = append(in.Entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: it.m.ReceiptHandle})
		}
		out, err := r.client.DeleteMessageBatch(ctx, in)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			return fmt.Errorf("%s; %d messages were sent and are still in the dead-letter queue too, deleted when the job is started again with the permission",
				r.awsFailure("delete from "+r.dlq.Name, "sqs:DeleteMessage", err), len(chunk))
		}
		now := r.e.now()
		var journal []store.JournalEntry
		for _, ok := range out.Successful {
			i, _ := strconv.Atoi(aws.ToString(ok.Id))
			if i < 0 || i >= len(chunk) {
				continue
			}
			e := chunk[i].entry
			already := e.State == store.JournalDeleted
			e.State, e.UpdatedAt = store.JournalDeleted, now
			journal = append(journal, e)
			if !already {
				r.mu.Lock()
				r.job.Moved++
				r.mu.Unlock()
			}
		}
		if err := r.e.opts.Store.WriteJournal(context.WithoutCancel(ctx), r.job.ID, journal); err != nil {
			return fmt.Errorf("toolq could not journal what it deleted (%s), so it stopped", storeCause(err))
		}
	}
	return nil
}

// pace waits, at the job's rate, until n more messages may be sent.
func (r *jobRun) pace(ctx context.Context, n int) error {
	if r.job.MaxPerSecond <= 0 {
		return nil
	}
	r.mu.Lock()
	now := r.e.now()
	at := r.paceAt
	if at.Before(now) {
		at = now
	}
	r.paceAt = at.Add(time.Duration(n) * time.Second / time.Duration(r.job.MaxPerSecond))
	r.mu.Unlock()
	if wait := at.Sub(now); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// finish releases what the job holds, counts what it could not reach, remembers what it moved
// and saves its end.
func (r *jobRun) finish(ctx context.Context) {
	r.mu.Lock()
	if r.ended == "" {
		r.ended = string(store.MoveTaskCompleted)
	}
	r.mu.Unlock()
	if r.ended == string(store.MoveTaskCompleted) && !r.limitHit && r.job.Kind != store.KindRestore {
		r.settleSent(ctx)
	}
	// Release with as many calls at once as the scan had workers: a held DLQ of 10,000 is 1,000
	// calls, which one after another took a third of a job's time.
	for chunk := range slices.Chunk(r.unjournaled, batch) {
		r.changeVisibility(ctx, chunk, 0)
	}
	sem := make(chan struct{}, r.e.opts.Workers)
	var releasing sync.WaitGroup
	for _, state := range []string{store.JournalHeld, store.JournalFailed} {
		r.eachHeld(ctx, state, func(entries []store.JournalEntry) {
			sem <- struct{}{}
			releasing.Go(func() {
				defer func() { <-sem }()
				r.release(ctx, state, entries)
			})
		})
	}
	releasing.Wait()
	if r.limitHit {
		r.job.NotReached = r.visible(ctx)
	}
	if r.ended != string(store.MoveTaskFailed) {
		r.failure = ""
	}
	if r.job.Kind == store.KindSelection {
		// What comes back of a redrive is counted; a discard sent nothing anywhere, and a
		// restore's messages are the archive's, which toolq keeps.
		if err := r.e.opts.Store.RememberSelection(ctx, r.job.ID, r.e.now()); err != nil {
			r.e.log.Warn("engine: remember what the job moved", "job", r.job.ID, "err", err)
		}
	}
	r.mu.Lock()
	r.job.Status, r.job.FailureReason = store.MoveTaskStatus(r.ended), r.failure
	r.job.EndedAt = r.e.now()
	r.changed = true
	r.mu.Unlock()
	r.save(ctx)
	r.e.log.Info("engine: job ended", "job", r.job.ID, "queue", r.dlq.Name, "status", r.ended,
		"matched", r.job.Matched, "moved", r.job.Moved, "held", r.job.Held, "released", r.job.Released, "failed", r.job.Failed, "reason", r.failure)
}

// settleSent, once a scan met every message of the queue, takes the messages still journaled
// sent for deleted: they were sent, and the scan did not meet them again, so they left the DLQ
// (their delete's answer was lost when a run before this one stopped).
func (r *jobRun) settleSent(ctx context.Context) {
	r.eachHeld(ctx, store.JournalSent, func(entries []store.JournalEntry) {
		now := r.e.now()
		for i := range entries {
			entries[i].State, entries[i].UpdatedAt = store.JournalDeleted, now
		}
		if err := r.e.opts.Store.WriteJournal(ctx, r.job.ID, entries); err != nil {
			r.e.log.Warn("engine: journal settled deletes", "job", r.job.ID, "err", err)
			return
		}
		r.mu.Lock()
		r.job.Moved += int64(len(entries))
		r.mu.Unlock()
	})
}

// releaseLater keeps handles to release when the job's workers have stopped.
func (r *jobRun) releaseLater(entries []store.JournalEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unjournaled = append(r.unjournaled, entries...)
}

// release makes up to ten held (or failed) messages visible again and journals the held ones
// released; a failed one stays failed, its journal saying why it did not move.
func (r *jobRun) release(ctx context.Context, state string, entries []store.JournalEntry) {
	released := r.changeVisibility(ctx, entries, 0)
	if state == store.JournalFailed {
		return
	}
	now := r.e.now()
	for i := range entries {
		entries[i].State, entries[i].UpdatedAt = store.JournalReleased, now
	}
	if err := r.e.opts.Store.WriteJournal(ctx, r.job.ID, entries); err != nil {
		r.e.log.Warn("engine: journal released messages", "job", r.job.ID, "err", err)
	}
	r.mu.Lock()
	r.job.Released += int64(released)
	r.mu.Unlock()
}

// eachHeld calls fn with the journal's entries in a state, ten at a time.
func (r *jobRun) eachHeld(ctx context.Context, state string, fn func([]store.JournalEntry)) {
	after := ""
	for ctx.Err() == nil {
		entries, err := r.e.opts.Store.JournalInState(ctx, r.job.ID, state, after, batch)
		if err != nil {
			r.e.log.Warn("engine: read the journal", "job", r.job.ID, "err", err)
			return
		}
		if len(entries) == 0 {
			return
		}
		after = entries[len(entries)-1].MessageID
		fn(entries)
	}
}

// changeVisibility sets the visibility timeout of up to ten held messages: 0 releases them,
// the hold extends it. A handle that is no longer valid means the message's hold ended already.
// It reports how many SQS changed.
func (r *jobRun) changeVisibility(ctx context.Context, entries []store.JournalEntry, seconds int32) int {
	in := &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: aws.String(r.dlq.URL)}
	for i, e := range entries {
		if e.ReceiptHandle == "" {
			continue
		}
		in.Entries = append(in.Entries, types.ChangeMessageVisibilityBatchRequestEntry{
			Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(e.ReceiptHandle), VisibilityTimeout: seconds,
		})
	}
	if len(in.Entries) == 0 {
		return 0
	}
	out, err := r.client.ChangeMessageVisibilityBatch(ctx, in)
	if err != nil {
		r.e.log.Warn("engine: change the visibility of held messages; they come back when their hold ends", "job", r.job.ID, "queue", r.dlq.Name, "err", err)
		return 0
	}
	if len(out.Failed) > 0 {
		r.e.log.Warn("engine: SQS did not change the visibility of some held messages; they come back when their hold ends", "job", r.job.ID, "queue", r.dlq.Name, "failed", len(out.Failed))
	}
	return len(out.Successful)
}

// visible is the DLQ's visible messages now: what a scan stopped at the in-flight limit did not
// reach.
func (r *jobRun) visible(ctx context.Context) int64 {
	out, err := r.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(r.dlq.URL), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)], 10, 64)
	return n
}

// save writes the job's counts when they changed, and tells the pages.
func (r *jobRun) save(ctx context.Context) {
	r.mu.Lock()
	if !r.changed {
		r.mu.Unlock()
		return
	}
	r.changed = false
	j := r.job
	j.UpdatedAt = r.e.now()
	if j.Status == "" {
		j.Status = store.MoveTaskRunning
	}
	r.mu.Unlock()
	// A cancel asked meanwhile must not be overwritten by RUNNING.
	if cur, err := r.e.opts.Store.GetSelectionJob(ctx, j.ID); err == nil && cur.Status == store.MoveTaskCancelling && j.Status == store.MoveTaskRunning {
		j.Status = store.MoveTaskCancelling
	}
	if err := r.e.opts.Store.SaveSelectionJob(ctx, j); err != nil {
		r.e.log.Warn("engine: save the job's progress", "job", j.ID, "err", err)
		return
	}
	r.e.pub.Publish(events.Event{Kind: events.MoveTasksChanged, QueueID: j.QueueID, At: j.UpdatedAt})
}

// awsFailure says what failed in words safe to show: the AWS error code, and for a denial the
// permission the job needs.
func (r *jobRun) awsFailure(what, permission string, err error) string {
	f := awscalls.Describe(err)
	code := safetext.Line(f.Code, 64)
	if awscalls.AccessDenied(err) {
		return fmt.Sprintf("AWS denied toolq to %s (%s): the job needs %s", what, code, permission)
	}
	if code == "" {
		return fmt.Sprintf("toolq could not %s: AWS could not be reached", what)
	}
	return fmt.Sprintf("AWS refused to %s (%s)", what, code)
}

// storeCause is a store failure in words safe to show.
func storeCause(err error) string {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "the dashboard is stopping"
	}
	return "the database refused the write; the server's log says why"
}
