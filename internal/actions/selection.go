package actions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/arn"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
)

// A start with a Selection is a selective redrive: a job of the engine (package engine) that
// moves the chosen messages and leaves the rest, instead of a move task of the whole queue. It
// goes through the same door as a move task: the role, read-only mode, the idempotency key or
// the confirmation, the queue's lock, the audit intent before anything is asked of AWS, and one
// redrive of a queue at a time, whichever kind.

// SelectionInSample is what a selection holds in the dead-letter queue's newest sample: what a
// preview and a confirmation show. The job itself scans the whole queue.
type SelectionInSample struct {
	// Sampled is how many messages the sample holds, and Complete whether it saw the whole queue.
	Sampled  int
	Complete bool
	Matched  int
	// ByTool and ByDestination count the matched messages by tool name ("" for none) and by the
	// queue each goes to (its source, or the redrive's destination; "" when it has neither).
	ByTool        map[string]int
	ByDestination map[string]int
	// Groups are the FIFO groups chosen, on a FIFO queue.
	Groups []string
}

// checkSelection refuses a selection that cannot be run on q: what engine.Selection.Check
// refuses, a dead-letter queue that is itself a source (a tier) unless it is opted in, and a
// selection that matches nothing in a sample that saw the whole queue.
func (s *Service) checkSelection(ctx context.Context, q store.Queue, sel engine.Selection) (SelectionInSample, error) {
	if err := sel.Check(s.dims, q.FIFO); err != nil {
		return SelectionInSample{}, refuse(Unprocessable, err.Code, "%s", err.Message)
	}
	if q.DeadLetterTargetARN != "" && (s.optedIn == nil || !s.optedIn(q.Name)) {
		return SelectionInSample{}, refuse(Unprocessable, "tier_dead_letter_queue",
			"%s has a RedrivePolicy of its own (its messages move on to %s after %d receives), and a selective redrive receives every message of it: opt it in with --peek-source to allow it",
			q.Name, arn.QueueName(q.DeadLetterTargetARN), q.MaxReceiveCount)
	}
	in, err := s.selectionInSample(ctx, q, sel)
	if err != nil {
		return SelectionInSample{}, err
	}
	if in.Complete && in.Matched == 0 {
		return in, refuse(Unprocessable, "selection_matches_nothing",
			"the selection matches none of the %d messages of %s, and toolq's newest sample saw the whole queue", in.Sampled, q.Name)
	}
	return in, nil
}

// selectionInSample counts what a selection holds in the queue's newest sample, with the same
// matching as the engine.
func (s *Service) selectionInSample(ctx context.Context, q store.Queue, sel engine.Selection) (SelectionInSample, error) {
	out := SelectionInSample{ByTool: map[string]int{}, ByDestination: map[string]int{}}
	sample, err := s.store.LatestSample(ctx, q.ID)
	if errors.Is(err, store.ErrNotFound) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("actions: sample of %s: %w", q.Name, err)
	}
	msgs, err := s.store.SampleMessages(ctx, sample.ID, store.MessageFilter{})
	if err != nil {
		return out, fmt.Errorf("actions: sample of %s: %w", q.Name, err)
	}
	out.Sampled, out.Complete = len(msgs), sample.Coverage() >= 1 && !sample.Capped
	chosen := map[string]bool{}
	if q.FIFO {
		for _, m := range msgs {
			if sel.Matches(m, s.errorDim) {
				chosen[m.GroupID] = true
			}
		}
		out.Groups = slices.Sorted(maps.Keys(chosen))
	}
	for _, m := range msgs {
		if q.FIFO && !chosen[m.GroupID] || !q.FIFO && !sel.Matches(m, s.errorDim) {
			continue
		}
		out.Matched++
		out.ByTool[m.ToolName]++
		out.ByDestination[arn.QueueName(m.DeadLetterSourceARN)]++
	}
	return out, nil
}

// startSelection creates the job of a checked selective redrive, the caller holding the queue's
// lock with its intent written, and wakes the engine.
func (s *Service) startSelection(ctx context.Context, q store.Queue, req StartRedriveRequest, destARN string, rate int, actor Actor) (store.MoveTask, error) {
	kind := store.KindSelection
	if req.Discard {
		kind = store.KindDiscard
	}
	job, err := s.store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask: store.MoveTask{
			QueueID: q.ID, SourceARN: q.ARN, DestinationARN: destARN, MaxPerSecond: rate,
			StartedAt: s.now().UTC().Truncate(1e6), Kind: kind,
		},
		Selection: req.Selection.JSON(), Actor: actor.Name,
	})
	if err != nil {
		return store.MoveTask{}, fmt.Errorf("actions: create the selection job of %s: %w", q.Name, err)
	}
	if s.engine != nil {
		s.engine.Wake()
	}
	return job.MoveTask, nil
}

// runningJob refuses a start while a selection job of q runs: a move task and a selective
// redrive never run on one queue at once.
func (s *Service) runningJob(ctx context.Context, q store.Queue) error {
	j, err := s.store.RunningSelectionJob(ctx, q.ID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil
	case err != nil:
		return fmt.Errorf("actions: selection jobs of %s: %w", q.Name, err)
	}
	return errTaskRunning(q, j.MoveTask)
}

// cancelSelection marks q's running selection job CANCELLING: the engine stops it at its next
// step and releases what it holds. What moved stays moved.
func (s *Service) cancelSelection(ctx context.Context, q store.Queue, j store.SelectionJob) (store.MoveTask, error) {
	if j.Status == store.MoveTaskCancelling {
		return store.MoveTask{}, refuse(Conflict, "no_task_running", "the redrive of %s is already being cancelled", q.Name)
	}
	ok, err := s.store.CancelSelectionJob(ctx, j.ID, s.now())
	if err != nil {
		return store.MoveTask{}, fmt.Errorf("actions: cancel the selection job of %s: %w", q.Name, err)
	}
	if !ok {
		return store.MoveTask{}, refuse(Conflict, "no_task_running", "the redrive of %s ended before it could be cancelled", q.Name)
	}
	if s.engine != nil {
		s.engine.Wake()
	}
	t := j.MoveTask
	t.Status = store.MoveTaskCancelling
	return t, nil
}

// checkDiscard refuses a discard without a selection (toolq never empties a DLQ wholesale into
// its archive) or with a destination or a rate, which only a redrive has.
func checkDiscard(req StartRedriveRequest) error {
	switch {
	case !req.Discard:
		return nil
	case req.Selection == nil:
		return refuse(Unprocessable, "empty_selection", "a discard needs a selection: name the tools, dimension values, reasons, search, message ids or groups to discard")
	case req.Destination != "" || strings.TrimSpace(req.MaxPerSecond) != "":
		return refuse(Invalid, "invalid_discard", "a discard sends nothing anywhere: it takes no destination and no rate")
	}
	return nil
}

// selectionDigest binds a confirmation to one selection, and to its kind: a redrive's
// confirmation never confirms a discard of the same selection.
func selectionDigest(sel *engine.Selection, discard bool) string {
	if sel == nil {
		return ""
	}
	kind := "redrive:"
	if discard {
		kind = "discard:"
	}
	sum := sha256.Sum256([]byte(kind + sel.JSON()))
	return hex.EncodeToString(sum[:12])
}

// selective reports whether an audited start was of a selective redrive.
func selective(intent store.AuditEntry) bool {
	var params map[string]json.RawMessage
	if json.Unmarshal([]byte(intent.Params), &params) != nil {
		return false
	}
	_, ok := params["selection"]
	return ok
}

// jobStartedAfter finds the selection job an interrupted start created: the first of q's jobs
// created at or after its intent and given to no other intent.
func (s *Service) jobStartedAfter(ctx context.Context, q store.Queue, intent store.AuditEntry, claimed map[int64]bool) (store.MoveTask, bool, error) {
	tasks, err := s.store.ListMoveTasks(ctx, q.ID, 0)
	if err != nil {
		return store.MoveTask{}, false, fmt.Errorf("actions: redrives of %s: %w", q.Name, err)
	}
	slices.SortFunc(tasks, func(a, b store.MoveTask) int { return a.StartedAt.Compare(b.StartedAt) })
	for _, t := range tasks {
		if t.Kind == store.KindSelection && !claimed[t.ID] && !t.StartedAt.Before(intent.At.Truncate(time.Millisecond)) {
			return t, true, nil
		}
	}
	return store.MoveTask{}, false, nil
}
