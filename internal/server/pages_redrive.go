package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// redriveProps reads a dead-letter queue's redrive panel: its tasks, the destinations it may
// choose, and why this user may not act, if so.
func (s *Server) redriveProps(ctx context.Context, d views.QueueDetail, page templates.Page, who auth.Identity) (templates.RedriveProps, error) {
	r := templates.RedriveProps{
		Page: page, Ref: d.Ref, QueueName: d.Name, FIFO: d.FIFO, Visible: d.Visible, Sources: d.SourceQueues,
	}
	history, err := s.opts.Views.Redrives(ctx, d.ID)
	if err != nil {
		return r, fmt.Errorf("redrive panel: tasks: %w", err)
	}
	// The panel's tasks are one fresh read, its history and its running task alike: the
	// snapshot's (d.Redrive) may miss a task's end by up to its lag, and the browser fetches this
	// panel the moment a push says a task changed, so that a panel built on the snapshot would
	// show COMPLETED in its history beside a start form disabled for a running task.
	r.History = history
	for i := range history {
		if history[i].Running {
			r.Running = &history[i]
			break
		}
	}
	targets, err := s.opts.Views.RedriveTargets(ctx, d.ID)
	if err != nil {
		return r, fmt.Errorf("redrive panel: destinations: %w", err)
	}
	r.Destinations, r.Others, r.TierSources = targets.Destinations, targets.Others, targets.TierSources
	switch {
	case s.opts.Actions.ReadOnly():
		r.Disabled = "toolq runs in read-only mode: redrives are turned off."
	case !who.CanAct():
		role := cmp.Or(string(who.Role), "none")
		r.Disabled = "Your role (" + role + ") may look but not start or cancel redrives."
	case r.Running != nil:
		r.Disabled = "A move task is running: wait for it to finish, or cancel it, before starting another."
	}
	r.CanCancel = r.Running != nil && who.CanAct() && !s.opts.Actions.ReadOnly()
	snap, err := s.opts.Views.Snapshot(ctx)
	if err != nil {
		return r, fmt.Errorf("redrive panel: %w", err)
	}
	if last, ok := snap.LastRedrive(d.ID); ok {
		r.Last = &last
	}
	return r, nil
}

// redriveDetailPage answers GET /queues/{queue}/redrives/{redriveId}: one redrive and what came
// back of it.
func (s *Server) redriveDetailPage(c echo.Context) error {
	key, r, err := s.redriveOf(c)
	if err != nil {
		return err
	}
	d, err := s.opts.Views.Queue(c.Request().Context(), key.ID)
	if err != nil {
		return err
	}
	return render(c, http.StatusOK, templates.RedriveDetailPage(templates.RedriveDetailProps{
		Page: s.page(c, "Redrive of "+key.Name, "", ""), Ref: key.Ref, QueueName: key.Name, FIFO: d.FIFO, Redrive: r,
	}))
}

// loadRedrive reads the panel of the dead-letter queue named in the path.
func (s *Server) loadRedrive(c echo.Context) (templates.RedriveProps, error) {
	key, err := s.queueOf(c)
	if err != nil {
		return templates.RedriveProps{}, err
	}
	ctx := c.Request().Context()
	d, err := s.opts.Views.Queue(ctx, key.ID)
	if err != nil {
		return templates.RedriveProps{}, err
	}
	if !d.IsDeadLetterQueue {
		return templates.RedriveProps{}, newError(http.StatusNotFound, "not_dead_letter_queue", "this queue is no queue's dead-letter queue: there is nothing to redrive")
	}
	if d.RedriveUnavailable != "" {
		return templates.RedriveProps{}, newError(http.StatusUnprocessableEntity, "eventbridge_dead_letter_queue", d.RedriveUnavailable)
	}
	// The panel's own page is not live: it is where browsers without JavaScript (hence without a
	// websocket) land, and a queue topic's pushes target sections this page does not have.
	page := s.page(c, "Redrive "+d.Name, "", "")
	return s.redriveProps(ctx, d, page, identity(c))
}

// renderRedrive answers with the panel: alone for HTMX, which swaps it in place, or on a page of
// its own for a plain form post.
func renderRedrive(c echo.Context, status int, r templates.RedriveProps) error {
	if isHTMX(c) {
		return render(c, status, templates.RedrivePanel(r))
	}
	return render(c, status, templates.RedrivePage(r))
}

// redrivePanel answers GET /queues/{queue}/redrive: the panel, which pushes ask browsers to
// fetch again after a move task changed.
func (s *Server) redrivePanel(c echo.Context) error {
	r, err := s.loadRedrive(c)
	if err != nil {
		return err
	}
	return renderRedrive(c, http.StatusOK, r)
}

// startRedrivePage answers POST /queues/{queue}/redrive. Without confirm=1 it shows the
// confirmation step (how many messages, where, and that it cannot be undone); with it, it starts
// the move task and answers 303 to the queue page (HTMX: the panel, swapped in place).
func (s *Server) startRedrivePage(c echo.Context) error {
	r, err := s.loadRedrive(c)
	if err != nil {
		return err
	}
	r.Destination = formText(c, "destination", 300)
	if r.Destination == templates.OtherDestination {
		// "Other queue…": the queue typed beside it; the action checks that it exists and is
		// of the dead-letter queue's type.
		r.Destination = strings.TrimSpace(formText(c, "destination_other", 300))
		if r.Destination == "" {
			r.Error = "Name the other queue to send the messages to, or choose one from the list."
			return renderRedrive(c, http.StatusUnprocessableEntity, r)
		}
	}
	// The rate goes to the action as typed: it checks the role first, then the rate, and audits
	// a refusal of either, as for the API. The confirmation step calls no action, so it shows
	// a bad rate as typed and the action refuses it on confirm (browsers hold the field to 1–500
	// before that).
	r.MaxPerSecond = strings.TrimSpace(formText(c, "max_per_second", 10))
	if c.FormValue("confirm") != "1" {
		if r.Disabled != "" {
			r.Error = r.Disabled
			return renderRedrive(c, disabledStatus(r), r)
		}
		r.Confirm = true
		// One key per confirmation: every post of this confirmation is the same start.
		r.IdempotencyKey = rand.Text()
		return renderRedrive(c, http.StatusOK, r)
	}
	ctx := c.Request().Context()
	started, err := s.opts.Actions.StartRedrive(ctx, actor(c), actions.StartRedriveRequest{
		Queue: r.Ref, Destination: r.Destination, MaxPerSecond: r.MaxPerSecond,
		IdempotencyKey: formText(c, "idempotency_key", actions.MaxIdempotencyKey+1), // the action checks it
	})
	if err != nil {
		return s.redriveRefused(c, err, r)
	}
	if started.Repeat {
		return s.redriveDone(c, r, outcomeRepeated)
	}
	return s.redriveDone(c, r, outcomeStarted)
}

// cancelRedrivePage answers POST /queues/{queue}/redrive/cancel.
func (s *Server) cancelRedrivePage(c echo.Context) error {
	r, err := s.loadRedrive(c)
	if err != nil {
		return err
	}
	if _, err := s.opts.Actions.CancelRedrive(c.Request().Context(), actor(c), r.Ref); err != nil {
		return s.redriveRefused(c, err, r)
	}
	return s.redriveDone(c, r, outcomeCancelling)
}

// Outcomes of the redrive actions, by the key that a plain form's 303 carries in ?done= to the
// queue page: only these fixed texts can show there, whatever a link says.
const (
	outcomeStarted    = "redrive-started"
	outcomeRepeated   = "redrive-repeated"
	outcomeCancelling = "redrive-cancelling"
	// outcomeSelectionStarted: a selective redrive's job started.
	outcomeSelectionStarted = "selection-started"
	// outcomeDiscardStarted: a discard's job started.
	outcomeDiscardStarted = "discard-started"
)

var outcomeNotices = map[string]string{
	outcomeStarted:          "Move task started: the messages are on their way. Follow its progress in the redrive panel; a move cannot be undone.",
	outcomeRepeated:         "This confirmation was already sent: nothing new was started. The redrive panel shows the move task it started.",
	outcomeCancelling:       "Cancelling the move task: what has moved stays moved.",
	outcomeDiscardStarted:   "Discard started: toolq stores each chosen message whole in its archive, then deletes it from the dead-letter queue; the rest stay. Find them in the archive, where a restore sends them to a queue again.",
	outcomeRestoreStarted:   "Restore started: toolq sends the chosen archived messages to their queue again; they stay in the archive, marked restored. Follow it in the redrive panel.",
	outcomeSelectionStarted: "Selective redrive started: toolq scans the dead-letter queue and sends back the messages the selection names; the rest stay. Follow it in the redrive panel; a move cannot be undone.",
}

// redriveDone answers an accepted action: a plain form gets a 303 to the queue page, which shows
// the outcome; HTMX gets the fresh panel and the outcome, stamped with the time, in the flash area
// (the panel itself is fetched again by the pushes that follow the task).
func (s *Server) redriveDone(c echo.Context, r templates.RedriveProps, outcome string) error {
	if !isHTMX(c) {
		return c.Redirect(http.StatusSeeOther, r.Nav.QueueURL(r.Ref, url.Values{"done": {outcome}})+"#"+ids.RedrivePanel())
	}
	fresh, err := s.loadRedrive(c)
	if err != nil {
		return err
	}
	fresh.Notice = s.outcomeStamp(fresh.QueueName) + outcomeNotices[outcome]
	return render(c, http.StatusOK, templates.RedriveOutcome(fresh))
}

// redriveRefused shows an action's refusal in the panel, with the form as the user filled it; an
// error that is not the action's own goes to the error handler (a 500 without internals).
func (s *Server) redriveRefused(c echo.Context, err error, r templates.RedriveProps) error {
	var ae *actions.Error
	if !errors.As(err, &ae) {
		return err
	}
	fresh, lerr := s.loadRedrive(c)
	if lerr == nil {
		fresh.Destination, fresh.MaxPerSecond = r.Destination, r.MaxPerSecond
		r = fresh
	}
	r.Error = ae.Message
	status := actionStatus(ae.Kind)
	if isHTMX(c) {
		// The panel is fetched again as soon as a move task changes, which takes its error along.
		r.Alert = s.outcomeStamp(r.QueueName) + ae.Message
		return render(c, status, templates.RedriveOutcome(r))
	}
	return renderRedrive(c, status, r)
}

// outcomeStamp starts a flash message: when, and about which queue, since it stays in view while
// the operator moves on.
func (s *Server) outcomeStamp(queue string) string {
	return s.opts.Now().UTC().Format("15:04:05 UTC") + " · " + queue + ": "
}

// disabledStatus is the status of a refused confirmation step: 409 while a task runs, else 403.
func disabledStatus(r templates.RedriveProps) int {
	if r.Running != nil && r.CanCancel {
		return http.StatusConflict
	}
	return http.StatusForbidden
}

// formText returns a form field trimmed to max bytes, without control characters: the value is
// echoed back into the page and passed to the actions, which validate it for real.
func formText(c echo.Context, name string, max int) string {
	return safetext.Field(c.FormValue(name), max)
}
