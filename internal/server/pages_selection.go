package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/templates"
	"github.com/toolq/toolq/web/templates/ids"
)

// The selective redrive's pages: the messages page's form (SelectionBar) and a message's
// "Redrive this call" post the selection to POST /queues/{queue}/redrive/selection, which shows
// the confirmation (the action's preview: its checks, and what the selection holds in the
// sample); its form posts again with confirm=1, which starts the job and answers 303 to the
// queue page, where the redrive panel follows it live. Without JavaScript all of it works.

// Form fields of a selection; a dimension is "name=value".
const (
	fieldTool      = "sel_tool"
	fieldDimension = "sel_dim"
	fieldReason    = "sel_reason"
	fieldSearch    = "sel_q"
	fieldMessageID = "sel_message_id"
	fieldGroup     = "sel_group"
)

// maxFormValues bounds the values of one selection field a form may send.
const maxFormValues = engine.MaxSelectionValues

// selectionForm is the selective redrive's form on a queue's pages: nil for a queue that is not
// a dead-letter queue a redrive can move, else with why this user may not act now, if so.
func (s *Server) selectionForm(ctx context.Context, d views.QueueDetail, who auth.Identity) (*templates.SelectionForm, error) {
	if !d.IsDeadLetterQueue || d.RedriveUnavailable != "" {
		return nil, nil
	}
	f := &templates.SelectionForm{FIFO: d.FIFO}
	switch {
	case s.opts.Actions.ReadOnly():
		f.Disabled = "toolq runs in read-only mode: redrives are turned off."
	case !who.CanAct():
		f.Disabled = "Your role (" + cmp.Or(string(who.Role), "none") + ") may look but not redrive."
	default:
		rs, err := s.opts.Views.Redrives(ctx, d.ID)
		if err != nil {
			return nil, err
		}
		if len(rs) > 0 && rs[0].Running {
			f.Disabled = "A redrive of this queue is running: wait for it to finish, or cancel it on the queue's page, before starting another."
		}
	}
	return f, nil
}

// selectionOf reads the selection a form posts: with scope=checked the checked messages and
// groups; with scope=filters the page's filters; with pick=NAME=VALUE one group of the page's
// grouping (a tool, or a dimension's value); on the confirmation, every field as the preview
// carried it.
func selectionOf(c echo.Context) (engine.Selection, error) {
	form, err := c.FormParams()
	if err != nil {
		return engine.Selection{}, newError(http.StatusBadRequest, "invalid_form", "the form could not be read")
	}
	values := func(name string) []string {
		vs := form[name]
		if len(vs) > maxFormValues {
			vs = vs[:maxFormValues+1] // the engine refuses it, selection_too_large
		}
		var out []string
		for _, v := range vs {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
		return out
	}
	var sel engine.Selection
	dims := func(pairs []string) {
		for _, p := range pairs {
			name, value, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			if name == views.GroupToolName {
				sel.Tools = append(sel.Tools, value)
				continue
			}
			if sel.Dimensions == nil {
				sel.Dimensions = map[string][]string{}
			}
			sel.Dimensions[name] = append(sel.Dimensions[name], value)
		}
	}
	switch {
	case form.Get("pick") != "":
		dims([]string{form.Get("pick")})
	case form.Get("scope") == "checked":
		sel.MessageIDs, sel.Groups = values(fieldMessageID), values(fieldGroup)
	default: // scope=filters, or the confirmation's fields
		sel.Tools, sel.Reasons, sel.MessageIDs, sel.Groups = values(fieldTool), values(fieldReason), values(fieldMessageID), values(fieldGroup)
		sel.Q = strings.TrimSpace(form.Get(fieldSearch))
		dims(values(fieldDimension))
	}
	return sel, nil
}

// selectionFields are the hidden fields that carry a selection from its confirmation to its start.
func selectionFields(sel engine.Selection) []templates.DimensionFilter {
	var out []templates.DimensionFilter
	add := func(name string, values []string) {
		for _, v := range values {
			out = append(out, templates.DimensionFilter{Name: name, Value: v})
		}
	}
	add(fieldTool, sel.Tools)
	for _, name := range slices.Sorted(maps.Keys(sel.Dimensions)) {
		for _, v := range sel.Dimensions[name] {
			out = append(out, templates.DimensionFilter{Name: fieldDimension, Value: name + "=" + v})
		}
	}
	add(fieldReason, sel.Reasons)
	if sel.Q != "" {
		add(fieldSearch, []string{sel.Q})
	}
	add(fieldMessageID, sel.MessageIDs)
	add(fieldGroup, sel.Groups)
	return out
}

// namedCounts orders counts by count, then name.
func namedCounts(m map[string]int) []templates.NamedCount {
	out := make([]templates.NamedCount, 0, len(m))
	for name, n := range m {
		out = append(out, templates.NamedCount{Name: name, Count: n})
	}
	slices.SortFunc(out, func(a, b templates.NamedCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// selectionPage answers POST /queues/{queue}/redrive/selection: the confirmation of a selective
// redrive, or with confirm=1 its start.
func (s *Server) selectionPage(c echo.Context) error { return s.selectionFlow(c, false) }

// discardPage answers POST /queues/{queue}/discard/selection: the confirmation of a discard into
// the archive, or with confirm=1 its start.
func (s *Server) discardPage(c echo.Context) error { return s.selectionFlow(c, true) }

func (s *Server) selectionFlow(c echo.Context, discard bool) error {
	key, err := s.queueOf(c)
	if err != nil {
		return err
	}
	sel, err := selectionOf(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	title := "Redrive chosen messages of "
	if discard {
		title = "Discard chosen messages of "
	}
	p := templates.SelectionConfirmProps{Page: s.page(c, title+key.Name, "", ""), Ref: key.Ref, QueueName: key.Name, Discard: discard}
	req := actions.StartRedriveRequest{Queue: key.Ref, Selection: &sel, Discard: discard}
	if c.FormValue("confirm") == "1" {
		req.IdempotencyKey = formText(c, "idempotency_key", actions.MaxIdempotencyKey+1) // the action checks it
		started, err := s.opts.Actions.StartRedrive(ctx, actor(c), req)
		if err != nil {
			return s.selectionRefused(c, p, err)
		}
		outcome := outcomeSelectionStarted
		if discard {
			outcome = outcomeDiscardStarted
		}
		if started.Repeat {
			outcome = outcomeRepeated
		}
		return c.Redirect(http.StatusSeeOther, p.Nav.QueueURL(key.Ref, url.Values{"done": {outcome}})+"#"+ids.RedrivePanel())
	}
	preview, err := s.opts.Actions.ReviewRedrive(ctx, actor(c), req)
	if err != nil {
		return s.selectionRefused(c, p, err)
	}
	in := preview.InSample
	view := views.SelectionJob{Tools: sel.Tools, Dimensions: sel.Dimensions, Reasons: sel.Reasons, Q: sel.Q, MessageIDs: sel.MessageIDs, Groups: sel.Groups}
	p.FIFO, p.Selection, p.Fields = preview.FIFO, templates.SelectionFields(&view), selectionFields(sel)
	p.Sampled, p.SampleComplete, p.Matched, p.Groups = in.Sampled, in.Complete, in.Matched, in.Groups
	p.ByTool, p.ByDestination = namedCounts(in.ByTool), namedCounts(in.ByDestination)
	// One key per confirmation: every post of this confirmation is the same start.
	p.IdempotencyKey = rand.Text()
	if snap, err := s.opts.Views.Snapshot(ctx); err == nil {
		if last, ok := snap.LastRedrive(key.ID); ok {
			p.Last = &last
		}
	}
	return render(c, http.StatusOK, templates.SelectionConfirmPage(p))
}

// selectionRefused shows an action's refusal on the confirmation page, with its status.
func (s *Server) selectionRefused(c echo.Context, p templates.SelectionConfirmProps, err error) error {
	var ae *actions.Error
	if !errors.As(err, &ae) {
		return err
	}
	p.Error = ae.Message
	return render(c, actionStatus(ae.Kind), templates.SelectionConfirmPage(p))
}
