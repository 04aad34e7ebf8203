package actions

import (
	"context"
	"fmt"

	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
)

// StartRestoreRequest asks to send archived messages of a dead-letter queue to a queue again.
type StartRestoreRequest struct {
	Queue string // the DLQ the messages were discarded from: its name or ARN
	// Selection names the archived messages, matched as a selection of the DLQ would be.
	Selection *engine.Selection
	// Destination is a queue of the same account and type; empty: each message's source.
	Destination    string
	IdempotencyKey string
}

// maxArchiveScan bounds how much of a queue's archive a restore's check reads to tell whether
// its selection matches anything.
const maxArchiveScan = 10_000

// StartRestore checks and starts a restore of archived messages, audited as a start is: the
// operator role, read-only mode, the idempotency key, the selection (refused when it matches
// nothing in the archive), the destination (of the queue's account and type), one job of the
// queue at a time, and the intent before the job exists.
func (s *Service) StartRestore(ctx context.Context, actor Actor, req StartRestoreRequest) (StartedRedrive, error) {
	params := map[string]any{}
	if req.Selection != nil {
		params["selection"] = req.Selection
	}
	if req.Destination != "" {
		params["destination"] = req.Destination
	}
	a := attempt{actor: actor, action: ActionStartRestore, ref: req.Queue, params: params}
	task, err := s.startRestore(ctx, actor, req, &a)
	if !a.recorded {
		a.task = task
		s.record(ctx, a, err)
	}
	return StartedRedrive{MoveTask: task, Repeat: a.first != nil}, err
}

func (s *Service) startRestore(ctx context.Context, actor Actor, req StartRestoreRequest, a *attempt) (task store.MoveTask, err error) {
	if err := s.checkActor(actor); err != nil {
		return store.MoveTask{}, err
	}
	if a.key, err = parseKey(req.IdempotencyKey); err != nil {
		return store.MoveTask{}, err
	}
	q, err := s.resolveDLQ(ctx, req.Queue)
	a.queue = q
	if err != nil {
		return store.MoveTask{}, err
	}
	if req.Selection == nil {
		return store.MoveTask{}, refuse(Unprocessable, "empty_selection", "a restore needs a selection of the archive: name the tools, dimension values, reasons, search, message ids or groups to restore")
	}
	if err := req.Selection.Check(s.dims, q.FIFO); err != nil {
		return store.MoveTask{}, refuse(Unprocessable, err.Code, "%s", err.Message)
	}
	if err := s.archiveHolds(ctx, q, *req.Selection); err != nil {
		return store.MoveTask{}, err
	}
	client, unlock, err := s.lockQueue(ctx, q)
	if err != nil {
		return store.MoveTask{}, err
	}
	defer unlock()
	defer s.recordLocked(ctx, a, &task, &err)
	if a.key != "" {
		if task, err, repeat := s.firstAnswer(ctx, client, q, a); repeat {
			return task, err
		}
	}
	if err := s.writeIntent(ctx, a); err != nil {
		return store.MoveTask{}, err
	}
	if err := s.runningJob(ctx, q); err != nil {
		return store.MoveTask{}, err
	}
	destARN, err := s.destination(ctx, q, req.Destination)
	if err != nil {
		return store.MoveTask{}, err
	}
	job, err := s.store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask: store.MoveTask{QueueID: q.ID, SourceARN: q.ARN, DestinationARN: destARN,
			StartedAt: s.now().UTC().Truncate(1e6), Kind: store.KindRestore},
		Selection: req.Selection.JSON(), Actor: actor.Name,
	})
	if err != nil {
		return store.MoveTask{}, fmt.Errorf("actions: create the restore of %s: %w", q.Name, err)
	}
	if s.engine != nil {
		s.engine.Wake()
	}
	return job.MoveTask, nil
}

// archiveHolds refuses a restore whose selection matches none of the queue's archived messages
// not restored yet.
func (s *Service) archiveHolds(ctx context.Context, q store.Queue, sel engine.Selection) error {
	before := int64(0)
	for scanned := 0; scanned < maxArchiveScan; {
		page, err := s.store.ArchivedMessages(ctx, store.ArchiveFilter{QueueID: q.ID, BeforeID: before, Limit: 500, NotRestored: true})
		if err != nil {
			return fmt.Errorf("actions: archive of %s: %w", q.Name, err)
		}
		for _, m := range page {
			if sel.Matches(engine.AsSampled(m), s.errorDim) {
				return nil
			}
		}
		if len(page) < 500 {
			return refuse(Unprocessable, "selection_matches_nothing", "the selection matches none of the archived messages of %s that were not restored yet", q.Name)
		}
		scanned += len(page)
		before = page[len(page)-1].ID
	}
	return nil // too much to check here: the job finds out
}
