package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/choices"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// Errors of SendTest, for the server to answer.
var (
	// ErrForbidden: only operators send test notifications.
	ErrForbidden = errors.New("notify: only operators may send test notifications")
	// ErrNoTarget: no target has that name, or none is configured.
	ErrNoTarget = errors.New("notify: no such notification target")
)

// TestRequest asks for a test notification to one target ("" for every target), on behalf of
// someone (as the audit log names them).
type TestRequest struct {
	Target     string
	By         string
	ByKind     auth.Kind
	ByTokenID  int64 // the store id of By's API token, 0 for other kinds
	Role       auth.Role
	RemoteAddr string
}

// SendTest queues a test notification to the target, or to every target, past the grouping:
// it goes out at the dispatcher's next tick, through the same delivery, retries and records as
// any other. The role is checked first; every request, sent or refused, is in the audit log.
func (s *Service) SendTest(ctx context.Context, r TestRequest) (sent []string, err error) {
	defer func() { s.auditTest(ctx, r, sent, err) }()
	if r.Role != auth.RoleOperator {
		return nil, ErrForbidden
	}
	var targets []Target
	for _, t := range s.opts.Targets {
		if r.Target == "" || t.Name == r.Target {
			targets = append(targets, t)
		}
	}
	if len(targets) == 0 {
		names := make([]string, 0, len(s.opts.Targets))
		for _, t := range s.opts.Targets {
			names = append(names, t.Name)
		}
		return nil, choices.Wrap(ErrNoTarget, r.Target, names)
	}
	now := s.opts.Now().UTC()
	by := r.By
	if by == "" {
		by = "an operator"
	}
	for _, t := range targets {
		a := views.Alert{At: now, Kind: views.AlertTest, Severity: views.SeverityInfo, Path: "/status", Group: "test",
			Title: fmt.Sprintf("Test notification from toolq to %s, sent by %s", t.Name, by)}
		if err := s.enqueueTest(ctx, t, a); err != nil {
			return sent, err
		}
		sent = append(sent, t.Name)
	}
	return sent, nil
}

// enqueueTest queues a test alert's message to a target. PagerDuty's is an incident of its own,
// triggered and resolved at once, so that a test pages nobody for long and leaves nothing open.
func (s *Service) enqueueTest(ctx context.Context, t Target, a views.Alert) error {
	group := "test"
	if t.Kind == PagerDuty {
		group = testDedupKey(t.Name, a.At)
	}
	m := message{Target: t.Name, Group: group, CreatedAt: a.At, Alerts: []views.Alert{a}}
	if err := s.enqueue(ctx, t, m, nil); err != nil || t.Kind != PagerDuty {
		return err
	}
	a.Resolved, a.Title = true, "Test notification from toolq to "+t.Name+": resolved"
	m.Alerts = []views.Alert{a}
	return s.enqueue(ctx, t, m, nil)
}

// auditTest records a test request; the row outlives a client that hangs up.
func (s *Service) auditTest(ctx context.Context, r TestRequest, sent []string, err error) {
	result, detail := store.AuditAccepted, ""
	switch {
	case errors.Is(err, ErrForbidden), errors.Is(err, ErrNoTarget):
		result, detail = store.AuditRefused, err.Error()
	case err != nil:
		result, detail = store.AuditFailed, "internal error"
	}
	params, _ := json.Marshal(map[string]any{"target": r.Target, "queued": sent})
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	by := r.By
	if by == "" {
		by = "unknown"
	}
	if _, aerr := s.opts.Store.AppendAudit(actx, store.AuditEntry{At: s.opts.Now().UTC(), Actor: by, ActorKind: string(r.ByKind),
		TokenID: r.ByTokenID, Role: string(r.Role), Action: "notify.test", Params: string(params), Result: result, Detail: detail, RemoteAddr: r.RemoteAddr}); aerr != nil {
		s.log.Error("notify: audit a test", "err", aerr)
		return
	}
	s.opts.Publisher.Publish(events.Event{Kind: events.AuditAppended, At: s.opts.Now()})
}
