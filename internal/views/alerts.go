package views

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// AlertKind names what an alert is about.
type AlertKind string

// The kinds of alerts, one JSON shape for the notifier and GET /api/v1/events alike.
const (
	AlertDLQArrival       AlertKind = "dlq.arrival"       // messages arrived in a dead-letter queue
	AlertDLQDrained       AlertKind = "dlq.drained"       // … it is empty again (drained, redriven, discarded)
	AlertHealthChanged    AlertKind = "health.changed"    // a queue became warning or critical, or ok again
	AlertSessionBlocked   AlertKind = "session.blocked"   // a FIFO session is blocked behind a failing head
	AlertSessionUnblocked AlertKind = "session.unblocked" // … no session of the queue is blocked any more
	AlertRedriveStarted   AlertKind = "redrive.started"   // a move task started
	AlertRedriveCompleted AlertKind = "redrive.completed" // … completed
	AlertRedriveFailed    AlertKind = "redrive.failed"    // … failed
	AlertRedriveCancelled AlertKind = "redrive.cancelled" // … was cancelled
	// AlertRedriveOutcome: what came back of a redrive settled, or crossed the threshold after.
	AlertRedriveOutcome AlertKind = "redrive.outcome"
	// AlertDiscard: a discard of a dead-letter queue's chosen calls into toolq's archive
	// started or ended (its Redrive says how).
	AlertDiscard       AlertKind = "discard"
	AlertRegionBlind   AlertKind = "region.blind"   // toolq cannot see a region
	AlertRegionVisible AlertKind = "region.visible" // … sees it again
	AlertTest          AlertKind = "test"           // an operator's test notification
)

// AlertKinds lists every kind, in the documentation's order.
var AlertKinds = []AlertKind{AlertDLQArrival, AlertDLQDrained, AlertHealthChanged, AlertSessionBlocked, AlertSessionUnblocked, AlertRedriveStarted,
	AlertRedriveCompleted, AlertRedriveFailed, AlertRedriveCancelled, AlertRedriveOutcome, AlertDiscard, AlertRegionBlind, AlertRegionVisible, AlertTest}

// AlertSeverity orders alerts for filters: info < warning < critical.
type AlertSeverity string

// Alert severities.
const (
	SeverityInfo     AlertSeverity = "info"
	SeverityWarning  AlertSeverity = "warning"
	SeverityCritical AlertSeverity = "critical"
)

// Rank orders severities: info 0, warning 1, critical 2; -1 for anything else.
func (s AlertSeverity) Rank() int {
	switch s {
	case SeverityInfo:
		return 0
	case SeverityWarning:
		return 1
	case SeverityCritical:
		return 2
	}
	return -1
}

// Alert is one thing toolq tells people and bots: the notifier's messages summarise alerts, and
// GET /api/v1/events streams them, in this one JSON shape. Exactly one of the kind's objects
// (arrival, health, session, redrive, sight) is set, or none for dlq.drained, session.unblocked
// and test.
type Alert struct {
	ID       int64         `json:"id"`
	At       time.Time     `json:"at"`
	Kind     AlertKind     `json:"kind"`
	Severity AlertSeverity `json:"severity"`
	// Resolved: the alert says a problem ended (a queue ok again, a DLQ empty again, no session
	// blocked any more, a region seen again); its severity is the problem's.
	Resolved bool   `json:"resolved"`
	Queue    string `json:"queue,omitempty"` // the queue's name; "" for a region's alert
	QueueARN string `json:"queueArn,omitempty"`
	Region   string `json:"region,omitempty"`
	// Title says it in one line of plain text; hostile text in it (group ids, reasons) was made
	// safe to show, not safe to post to a chat as it is.
	Title string `json:"title"`
	// Path is the dashboard page about it ("/queues/web-search-dlq", "/status"); URL the same
	// under --public-url or the request's address, set by whoever hands the alert out.
	Path    string        `json:"path"`
	URL     string        `json:"url,omitempty"`
	Arrival *AlertArrival `json:"arrival,omitempty"`
	// Traces link the traces of the messages the alert is about (a blocked session's head, a
	// DLQ's newest messages) under --trace-url; none without it.
	Traces  []AlertTrace  `json:"traces,omitempty"`
	Health  *AlertHealth  `json:"health,omitempty"`
	Session *AlertSession `json:"session,omitempty"`
	Redrive *AlertRedrive `json:"redrive,omitempty"`
	Sight   *SightProblem `json:"sight,omitempty"`
	// QueueID and Group are how the store keeps it: one notification message summarises the
	// alerts of one group (a queue, a region).
	QueueID int64  `json:"-"`
	Group   string `json:"-"`
}

// AlertArrival is a dead-letter queue's new messages, with what its sample says of them.
type AlertArrival struct {
	New   int64 `json:"new"`   // messages more than at the last look
	Depth int64 `json:"depth"` // visible, in flight and delayed now
	// OldestAgeSeconds is the age of the oldest message of the sample; null when unknown.
	OldestAgeSeconds *float64 `json:"oldestAgeSeconds"`
	// SampleCovers: the sample was taken after the arrival was seen, so Triage includes the new
	// messages; false when the sample did not come in time (see docs/api.md).
	SampleCovers bool   `json:"sampleCovers"`
	Triage       Triage `json:"triage"`
}

// AlertHealth is a queue's health change.
type AlertHealth struct {
	From    HealthStatus `json:"from"`
	To      HealthStatus `json:"to"`
	Reasons []string     `json:"reasons"` // never nil
	// Configuration: the change is configuration advice alone (every reason of the status it
	// reaches, or for a return to ok of the status it leaves, is a finding about the queue's
	// configuration, such as a DLQ keeping messages no longer than its source): nothing
	// happened to a message. Notifications do not count it against the queue's interval.
	Configuration bool `json:"configuration"`
}

// AlertSession is a FIFO session (message group) blocked behind its failing head message.
type AlertSession struct {
	GroupID          string            `json:"groupId"`
	HeadMessageID    string            `json:"headMessageId"`
	HeadReceiveCount int               `json:"headReceiveCount"`
	Messages         int               `json:"messages"`   // the group's messages in the sample, head included
	ToolName         string            `json:"toolName"`   // the head's, "" when unknown
	Dimensions       map[string]string `json:"dimensions"` // the head's; never nil
}

// AlertRedrive is a move task that started or ended.
type AlertRedrive struct {
	Status         string    `json:"status"`
	Moved          int64     `json:"moved"`
	ToMove         int64     `json:"toMove"`
	DestinationARN string    `json:"destinationArn,omitempty"` // "" : the original sources
	FailureReason  string    `json:"failureReason,omitempty"`
	StartedAt      time.Time `json:"startedAt"`
	// By is who started it, or cancelled it for a cancellation, as the audit log says; "" when
	// it was not done through toolq (the AWS console, the CLI).
	By string `json:"by,omitempty"`
	// ID and Outcome, for redrive.outcome: the redrive's id and what came back of it.
	ID      int64           `json:"id,omitempty"`
	Outcome *RedriveOutcome `json:"outcome,omitempty"`
}

// QueueAlertGroup and RegionAlertGroup are the groups of a queue's and a region's alerts: one
// notification message is about one queue or one region.
func QueueAlertGroup(id int64) string       { return "queue:" + strconv.FormatInt(id, 10) }
func RegionAlertGroup(region string) string { return "region:" + region }

// AlertRecord turns an alert into what the store keeps.
func AlertRecord(a Alert) (store.Alert, error) {
	body, err := json.Marshal(a)
	if err != nil {
		return store.Alert{}, fmt.Errorf("views: alert: %w", err)
	}
	return store.Alert{At: a.At, Kind: string(a.Kind), GroupKey: a.Group, Body: string(body)}, nil
}

// alertOf reads a stored alert back.
func alertOf(r store.Alert) (Alert, error) {
	var a Alert
	if err := json.Unmarshal([]byte(r.Body), &a); err != nil {
		return Alert{}, fmt.Errorf("views: alert %d: %w", r.ID, err)
	}
	a.ID, a.Group = r.ID, r.GroupKey
	return a, nil
}

// alertsOf reads stored alerts back.
func alertsOf(rows []store.Alert) ([]Alert, error) {
	out := make([]Alert, 0, len(rows))
	for _, r := range rows {
		a, err := alertOf(r)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// MaxAlertPage bounds AlertsAfter.
const MaxAlertPage = 500

// AlertsAfter returns the alerts after an id (the event stream's Last-Event-ID), oldest first,
// at most limit (1 to MaxAlertPage).
func (s *Service) AlertsAfter(ctx context.Context, afterID int64, limit int) ([]Alert, error) {
	rows, err := s.store.AlertsAfter(ctx, afterID, min(max(limit, 1), MaxAlertPage))
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	return alertsOf(rows)
}

// AlertsByID returns the alerts with these ids, oldest first.
func (s *Service) AlertsByID(ctx context.Context, ids []int64) ([]Alert, error) {
	rows, err := s.store.AlertsByID(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("views: %w", err)
	}
	return alertsOf(rows)
}

// LatestAlertID is the newest alert's id, 0 before the first.
func (s *Service) LatestAlertID(ctx context.Context) (int64, error) {
	id, err := s.store.LatestAlertID(ctx)
	if err != nil {
		return 0, fmt.Errorf("views: %w", err)
	}
	return id, nil
}

// NotificationTarget is one configured target as the status page and the API show it.
type NotificationTarget struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`     // slack, webhook, teams or pagerduty
	Endpoint string `json:"endpoint"` // scheme and host only: a Slack webhook's URL is a secret
	Filter   string `json:"filter"`
	Sent     int    `json:"sent"`
	Failed   int    `json:"failed"`  // messages given up on
	Pending  int    `json:"pending"` // messages waiting to be sent or retried
	// LastSentAt is when a message last reached it; null before the first.
	LastSentAt  *time.Time            `json:"lastSentAt"`
	LastFailure *NotificationDelivery `json:"lastFailure"` // the newest failed attempt; null if none
}

// NotificationDelivery is one attempt to send a message to a target.
type NotificationDelivery struct {
	MessageID  int64     `json:"messageId"`
	Target     string    `json:"target"`
	At         time.Time `json:"at"`
	Attempt    int       `json:"attempt"`
	Outcome    string    `json:"outcome"` // sent, retry or failed
	HTTPStatus int       `json:"httpStatus,omitempty"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"durationMs"`
	Title      string    `json:"title"`
}

// Notifications is GET /api/v1/notifications and the status page's section.
type Notifications struct {
	Targets    []NotificationTarget   `json:"targets"`    // never nil
	Deliveries []NotificationDelivery `json:"deliveries"` // the newest attempts, newest first; never nil
}

// recentDeliveries is how many attempts Notifications lists.
const recentDeliveries = 30

// Notifications returns the targets the running dashboard was started with (those it recorded
// since startedAt) and the newest delivery attempts.
func (s *Service) Notifications(ctx context.Context, startedAt time.Time) (Notifications, error) {
	targets, err := s.store.NotifyTargets(ctx, startedAt)
	if err != nil {
		return Notifications{}, fmt.Errorf("views: %w", err)
	}
	stats, err := s.store.NotifyTargetStats(ctx)
	if err != nil {
		return Notifications{}, fmt.Errorf("views: %w", err)
	}
	out := Notifications{Targets: []NotificationTarget{}, Deliveries: []NotificationDelivery{}}
	for _, t := range targets {
		st := stats[t.Name]
		v := NotificationTarget{Name: t.Name, Kind: t.Kind, Endpoint: t.Endpoint, Filter: t.Filter,
			Sent: st.Sent, Failed: st.Failed, Pending: st.Pending, LastSentAt: timePtr(st.LastSentAt)}
		if st.LastFailure != nil {
			d := deliveryOf(*st.LastFailure)
			v.LastFailure = &d
		}
		out.Targets = append(out.Targets, v)
	}
	ds, err := s.store.RecentDeliveries(ctx, recentDeliveries)
	if err != nil {
		return Notifications{}, fmt.Errorf("views: %w", err)
	}
	for _, d := range ds {
		out.Deliveries = append(out.Deliveries, deliveryOf(d))
	}
	return out, nil
}

func deliveryOf(d store.NotifyDelivery) NotificationDelivery {
	return NotificationDelivery{MessageID: d.MessageID, Target: d.Target, At: d.At.UTC(), Attempt: d.Attempt, Outcome: d.Outcome,
		HTTPStatus: d.HTTPStatus, Error: d.Error, DurationMS: d.Duration.Milliseconds(), Title: d.Title}
}
