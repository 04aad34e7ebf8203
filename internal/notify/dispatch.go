package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolq/toolq/internal/safetext"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
)

// routePage is how many alerts one routing step reads.
const routePage = 500

// dueBatch bounds the messages one Dispatch sends.
const dueBatch = 50

// Dispatch routes the new alerts to the targets whose filters they pass, makes the messages
// whose group may have one now (none in the last Interval), and sends the messages that are due,
// waiting for them. Each step is stored before the next: an alert is routed once, taken by one
// message once, and a message is sent until a target takes it or it is given up on.
func (s *Service) Dispatch(ctx context.Context) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.route(ctx); err != nil {
		return err
	}
	if err := s.batch(ctx); err != nil {
		return err
	}
	return s.deliverDue(ctx)
}

// route routes the alerts after the router's cursor.
func (s *Service) route(ctx context.Context) error {
	cursor, err := s.cursor(ctx)
	if err != nil {
		return err
	}
	for {
		alerts, err := s.opts.Views.AlertsAfter(ctx, cursor, routePage)
		if err != nil || len(alerts) == 0 {
			return err
		}
		var entries []store.OutboxEntry
		for _, a := range alerts {
			for _, t := range s.opts.Targets {
				if group, ok := t.route(a); ok {
					entries = append(entries, store.OutboxEntry{AlertID: a.ID, Target: t.Name, GroupKey: group, CreatedAt: s.opts.Now().UTC()})
				}
			}
			cursor = a.ID
		}
		if err := s.opts.Store.RouteAlerts(ctx, entries, cursor); err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		if len(entries) > 0 {
			s.settled = false
		}
		if len(alerts) < routePage {
			return nil
		}
	}
}

// cursor is the newest alert routed.
func (s *Service) cursor(ctx context.Context) (int64, error) {
	v, err := s.opts.Store.KV(ctx, store.AlertRouterKey)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("notify: %w", err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("notify: router cursor %q: %w", v, err)
	}
	return n, nil
}

// groupKey is one target's group: what one message is about.
type groupKey struct{ target, group string }

// heldGroup is why a group's waiting alerts were held back: they repeated what its messages of
// the last Interval told. That holds until an alert newer than newest waits too, or until the
// oldest of those messages leaves the interval (until), since what was told only shrinks as
// time passes; before either, looking again would read the same and decide the same.
type heldGroup struct {
	newest int64
	until  time.Time
}

// batch makes one message of the waiting alerts of each target's group that may have one: at
// most one a group every Interval, summarising what came meanwhile, unless a waiting alert is
// news (see news). A group held back is not read again before its heldGroup says something may
// have changed, and once a batch has decided every group, none is read before an alert is
// routed or a held group's time comes: an idle notifier reads nothing here, whatever the number
// of groups and the history.
func (s *Service) batch(ctx context.Context) error {
	now := s.opts.Now().UTC()
	if s.settled && (s.wake.IsZero() || now.Before(s.wake)) {
		return nil
	}
	s.settled = false
	waiting, err := s.opts.Store.WaitingOutbox(ctx)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	groups := map[groupKey][]int64{}
	var order []groupKey
	for _, e := range waiting {
		k := groupKey{e.Target, e.GroupKey}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], e.AlertID) // in id order: the newest last
	}
	for k := range s.held {
		if _, ok := groups[k]; !ok {
			delete(s.held, k) // its alerts went out
		}
	}
	for _, k := range order {
		t, ok := s.target(k.target)
		if !ok {
			continue // a target no longer configured: its alerts wait for it to come back
		}
		ids := groups[k]
		if h, ok := s.held[k]; ok && h.newest == ids[len(ids)-1] && now.Before(h.until) {
			continue
		}
		delete(s.held, k)
		told, err := s.opts.Store.ToldAfter(ctx, k.target, k.group, now.Add(-s.opts.Interval))
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		alerts, err := s.opts.Views.AlertsByID(ctx, ids)
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		if len(alerts) == 0 {
			continue
		}
		if len(told.AlertIDs) > 0 {
			toldAlerts, err := s.opts.Views.AlertsByID(ctx, told.AlertIDs)
			if err != nil {
				return fmt.Errorf("notify: %w", err)
			}
			if !news(alerts, toldAlerts) && (t.Kind != PagerDuty || !turned(alerts, toldAlerts)) {
				s.held[k] = heldGroup{newest: ids[len(ids)-1], until: told.Oldest.Add(s.opts.Interval)}
				continue
			}
		}
		m := message{Target: t.Name, Group: k.group, CreatedAt: now, Alerts: alerts}
		if err := s.enqueue(ctx, t, m, ids); err != nil {
			return err
		}
	}
	// Every group is decided: sent, held, or waiting for a target that is not configured.
	s.settled, s.wake = true, time.Time{}
	for _, h := range s.held {
		if s.wake.IsZero() || h.until.Before(s.wake) {
			s.wake = h.until
		}
	}
	return nil
}

// news reports whether waiting alerts tell a target what the messages of their group within the
// last Interval (told) did not: an alert of a class none of them carried, or more severe than
// every one of its class they carried. Then the waiting alerts go out at once, all of them,
// rather than wait for the interval: a DLQ's first arrival is never held behind a health change
// or advice, a queue going critical never behind its warning, a redrive's end never behind its
// start. What repeats what was told (a second arrival, a flapping health) waits, to be
// summarised when the interval has passed.
func news(waiting, told []views.Alert) bool {
	worst := map[string]int{}
	for _, a := range told {
		if r, ok := worst[class(a)]; !ok || a.Severity.Rank() > r {
			worst[class(a)] = a.Severity.Rank()
		}
	}
	for _, a := range waiting {
		if r, ok := worst[class(a)]; !ok || a.Severity.Rank() > r {
			return true
		}
	}
	return false
}

// class is what an alert is news of: its kind, except that configuration advice is a class of
// its own, so that it neither holds nor is held by what happens to the queue's messages.
func class(a views.Alert) string {
	if a.Health != nil && a.Health.Configuration {
		return "advice"
	}
	return string(a.Kind)
}

// enqueue stores a message for a target, taking the alerts it summarises. The message's id is
// part of what it says (the webhook id), so it is stored first and written right after.
func (s *Service) enqueue(ctx context.Context, t Target, m message, alertIDs []int64) error {
	id, err := s.opts.Store.CreateMessage(ctx, store.NotifyMessage{Target: t.Name, GroupKey: m.Group, CreatedAt: m.CreatedAt,
		Title: safetext.Line(m.title(), 300), Payload: "", NextAttemptAt: m.CreatedAt}, alertIDs)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	m.ID = id
	return s.write(ctx, t, m)
}

// write renders a stored message for its target and stores the payload.
func (s *Service) write(ctx context.Context, t Target, m message) error {
	var payload []byte
	var err error
	switch t.Kind {
	case Slack:
		payload, err = renderSlack(m, s.opts.PublicURL, s.opts.ChatSafe)
	case Teams:
		payload, err = renderTeams(m, s.opts.PublicURL, s.opts.ChatSafe)
	case PagerDuty:
		payload, err = renderPagerDuty(m, s.opts.PublicURL)
	default:
		payload, err = renderWebhook(m, s.opts.PublicURL)
	}
	if err != nil {
		return fmt.Errorf("notify: write message %d: %w", m.ID, err)
	}
	if err := s.opts.Store.SetMessagePayload(ctx, m.ID, string(payload)); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// target returns the configured target of a name.
func (s *Service) target(name string) (Target, bool) {
	for _, t := range s.opts.Targets {
		if t.Name == name {
			return t, true
		}
	}
	return Target{}, false
}

// deliverDue sends the due messages, each target's one after the other, the targets at once.
func (s *Service) deliverDue(ctx context.Context) error {
	due, err := s.opts.Store.DueMessages(ctx, s.opts.Now(), dueBatch)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	byTarget := map[string][]store.NotifyMessage{}
	for _, m := range due {
		byTarget[m.Target] = append(byTarget[m.Target], m)
	}
	var wg sync.WaitGroup
	for name, msgs := range byTarget {
		t, ok := s.target(name)
		if !ok {
			continue
		}
		wg.Go(func() {
			for _, m := range msgs {
				if ctx.Err() != nil {
					return
				}
				if err := s.deliver(ctx, t, m); err != nil && ctx.Err() == nil {
					s.log.Warn("notify: record a delivery", "target", t.Name, "message", m.ID, "err", err)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// maxRetryAfter caps a target's Retry-After.
const maxRetryAfter = time.Hour

// deliver makes one attempt to send a message and records it.
func (s *Service) deliver(ctx context.Context, t Target, m store.NotifyMessage) error {
	if m.Payload == "" {
		// Stored but not written (a crash between the two): write it now, send it next time.
		alerts, err := s.messageAlerts(ctx, m)
		if err != nil {
			return err
		}
		return s.write(ctx, t, message{ID: m.ID, Target: m.Target, Group: m.GroupKey, CreatedAt: m.CreatedAt, Alerts: alerts})
	}
	start := s.opts.Now()
	status, retryAfter, refusal, err := s.post(ctx, t, m)
	if ctx.Err() != nil {
		return nil // shutting down: the attempt did not count, the message stays due
	}
	m.Attempts++
	d := store.NotifyDelivery{MessageID: m.ID, Target: t.Name, At: s.opts.Now().UTC(), Attempt: m.Attempts,
		HTTPStatus: status, Duration: s.opts.Now().Sub(start)}
	switch {
	case err == nil && status >= 200 && status < 300:
		d.Outcome, m.Status, m.SentAt, m.LastError = store.DeliverySent, store.MessageSent, d.At, ""
	case (err != nil || retryable(status)) && m.Attempts < s.opts.MaxAttempts:
		d.Outcome, m.Status = store.DeliveryRetry, store.MessagePending
		wait := s.opts.RetryBase << min(m.Attempts-1, 16)
		if retryAfter > wait {
			wait = min(retryAfter, maxRetryAfter)
		}
		m.NextAttemptAt = d.At.Add(wait)
	default:
		d.Outcome, m.Status = store.DeliveryFailed, store.MessageFailed
	}
	if d.Outcome != store.DeliverySent {
		d.Error = deliveryError(status, refusal, err)
		m.LastError = d.Error
		s.log.Warn("notify: delivery failed", "target", t.Name, "message", m.ID, "attempt", m.Attempts, "outcome", d.Outcome, "err", d.Error)
	}
	s.tel.attempt(t.Name, d.Outcome)
	return s.opts.Store.RecordDelivery(ctx, d, m)
}

// messageAlerts reads the alerts a stored message summarises.
func (s *Service) messageAlerts(ctx context.Context, m store.NotifyMessage) ([]views.Alert, error) {
	ids, err := s.opts.Store.MessageAlertIDs(ctx, m.ID)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	return s.opts.Views.AlertsByID(ctx, ids)
}

// post sends a message's payload, signed for a webhook, with its routing key for PagerDuty. It
// returns the HTTP status, how long the target asked to wait (Retry-After), if it did, and why it
// refused the message when it said so in a shape toolq reads (PagerDuty's errors).
func (s *Service) post(ctx context.Context, t Target, m store.NotifyMessage) (int, time.Duration, string, error) {
	body := []byte(m.Payload)
	if t.Kind == PagerDuty {
		var err error
		if body, err = withRoutingKey(body, t.RoutingKey); err != nil {
			return 0, 0, "", err
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "toolq-notify")
	if t.Kind == Webhook {
		key, err := t.signingKey() // New checked it
		if err != nil {
			return 0, 0, "", err
		}
		id, ts := webhookID(m.ID), s.opts.Now().Unix()
		req.Header.Set("webhook-id", id)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
		if key != nil {
			req.Header.Set("webhook-signature", signature(key, id, ts, []byte(m.Payload)))
		}
	}
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var wait time.Duration
	if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
		wait = time.Duration(secs) * time.Second
	}
	var refusal string
	if t.Kind == PagerDuty && resp.StatusCode >= 300 {
		// What PagerDuty says is wrong with the event; it never needs the key repeated.
		if refusal = pagerDutyError(answer); t.RoutingKey != "" {
			refusal = strings.ReplaceAll(refusal, t.RoutingKey, "…")
		}
	}
	return resp.StatusCode, wait, refusal, nil
}

// retryable reports whether a target's answer may go better later: it is busy, limits the rate,
// or failed on its side. Other refusals (a revoked Slack webhook's 404, a 400) will not change.
func retryable(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// deliveryError says why an attempt failed, with the target's own words when it gave them
// (refusal), without the target's URL: a Slack webhook's URL is a credential, and net/http puts
// it in its errors.
func deliveryError(status int, refusal string, err error) string {
	if err == nil {
		if refusal != "" {
			return safetext.Line(fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), refusal), 300)
		}
		return fmt.Sprintf("HTTP %d %s", status, http.StatusText(status))
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return safetext.Line(err.Error(), 300)
}
