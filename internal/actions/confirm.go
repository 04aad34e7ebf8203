package actions

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
)

// A start in two steps, for callers that must show a person what a redrive will do before it is
// done (an AI agent's tool call): PreviewRedrive checks the start as StartRedrive would, short of
// acting, and gives a confirmation token; StartRedrive with that token (StartRedriveRequest
// .Confirmation) then starts exactly the start that was previewed, once. The token is signed
// with the server's key, names its caller, the dead-letter queue, the destination and the rate,
// and lasts ConfirmationTTL: replicas that share the key accept each other's tokens, and nothing
// is stored until the start. The caller is its credential (a token's id, a browser session, a
// proxy user), not its name: a new token given a revoked one's name redeems none of its previews.

// ActionPreviewRedrive is the audit action of a preview: no AWS call, no intent, one entry with
// its outcome (the confirmation given, or why not).
const ActionPreviewRedrive = "redrive.preview"

// ConfirmationTTL is how long a preview's confirmation token is good for.
const ConfirmationTTL = 2 * time.Minute

// confirmationPurpose separates the tokens' signatures from the key's other uses.
const confirmationPurpose = "redrive-confirmation"

// confirmationPrefix starts every token, so that a caller who pastes another credential in its
// place is told what it is not.
const confirmationPrefix = "tqc_"

// Signer signs and checks confirmation tokens: the authenticator, with the server's key.
type Signer interface {
	Sign(purpose string, msg []byte) []byte
	Verify(purpose string, msg, mac []byte) bool
}

// RedrivePreview is what a start would do, checked as StartRedrive checks it: the dead-letter
// queue, where its messages go (DestinationARN empty: each to its original source), at what rate
// (0: SQS chooses), and the token that confirms exactly this start until ExpiresAt.
type RedrivePreview struct {
	QueueID        int64
	Queue          string
	QueueARN       string
	FIFO           bool
	SourceARNs     []string
	DestinationARN string
	MaxPerSecond   int
	Token          string
	ExpiresAt      time.Time
	// Selection is the selective redrive's selection, nil for a move task; InSample what it holds
	// in the queue's newest sample.
	Selection *engine.Selection
	InSample  SelectionInSample
}

// confirmation is what a token says, signed.
type confirmation struct {
	Actor       string `json:"a"` // the actor's credential (Actor.Credential)
	QueueARN    string `json:"q"`
	Destination string `json:"d,omitempty"` // as the caller wrote it
	Rate        int    `json:"r,omitempty"`
	Selection   string `json:"s,omitempty"` // selectionDigest of a selective redrive
	Expires     int64  `json:"e"`           // unix seconds
	Nonce       string `json:"n"`
}

// idempotencyKey is the key a confirmed start carries: a token confirms one start, so a second
// use finds the first in the audit log.
func (c confirmation) idempotencyKey() string { return "confirm:" + c.Nonce }

// seal signs c into a token.
func (c confirmation) seal(signer Signer) string {
	payload, _ := json.Marshal(c)
	enc := base64.RawURLEncoding
	return confirmationPrefix + enc.EncodeToString(payload) + "." + enc.EncodeToString(signer.Sign(confirmationPurpose, payload))
}

// openConfirmation checks a token's signature and reads it.
func openConfirmation(signer Signer, token string) (confirmation, error) {
	invalid := refuse(Invalid, "invalid_confirmation", "the confirmation token is not one toolq gave: preview the redrive to get one")
	rest, ok := strings.CutPrefix(token, confirmationPrefix)
	if !ok || len(token) > 2048 {
		return confirmation{}, invalid
	}
	p, m, ok := strings.Cut(rest, ".")
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p)
	mac, err2 := enc.DecodeString(m)
	if !ok || err1 != nil || err2 != nil || !signer.Verify(confirmationPurpose, payload, mac) {
		return confirmation{}, invalid
	}
	var c confirmation
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return confirmation{}, invalid
	}
	return c, nil
}

// PreviewRedrive checks a start of a move task as StartRedrive would before it acts (the role,
// the rate, the queue, its RedriveAllowPolicy, a task already running, the destination, which
// may ask SQS whether a queue toolq does not watch exists) and returns what the start would do
// with a confirmation token for it. Nothing changes in AWS. The preview is audited, a refusal
// as a refusal and a confirmation given as accepted, the token itself never.
func (s *Service) PreviewRedrive(ctx context.Context, actor Actor, req StartRedriveRequest) (RedrivePreview, error) {
	a := attempt{actor: actor, action: ActionPreviewRedrive, ref: req.Queue, params: startParams(req)}
	p, err := s.previewRedrive(ctx, actor, req, &a, true)
	if err == nil {
		a.note = fmt.Sprintf("confirmation given, good until %s", p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if aerr := s.record(ctx, a, err); aerr != nil && err == nil {
		// A token the audit log does not hold would start a redrive whose preview nobody can
		// trace: none is given.
		return RedrivePreview{}, refuse(Unavailable, "audit_unavailable",
			"toolq cannot write its audit log (the database refused the write; the server's log says why), so it gives no confirmation for %s", p.Queue)
	}
	return p, err
}

// ReviewRedrive checks a start as PreviewRedrive does, for a page's confirmation step, which
// needs no token: its form carries an idempotency key, and the start checks everything again.
// It is audited as a preview.
func (s *Service) ReviewRedrive(ctx context.Context, actor Actor, req StartRedriveRequest) (RedrivePreview, error) {
	a := attempt{actor: actor, action: ActionPreviewRedrive, ref: req.Queue, params: startParams(req)}
	p, err := s.previewRedrive(ctx, actor, req, &a, false)
	if err == nil {
		a.note = "reviewed on a page, no confirmation token given"
	}
	s.record(ctx, a, err)
	return p, err
}

func (s *Service) previewRedrive(ctx context.Context, actor Actor, req StartRedriveRequest, a *attempt, sign bool) (RedrivePreview, error) {
	if err := s.checkActor(actor); err != nil {
		return RedrivePreview{}, err
	}
	if sign && s.signer == nil {
		return RedrivePreview{}, refuse(Unavailable, "confirmation_unavailable", "this dashboard has no key to sign confirmations with")
	}
	rate, err := parseRate(req.MaxPerSecond)
	if err != nil {
		return RedrivePreview{}, err
	}
	q, err := s.resolveDLQ(ctx, req.Queue)
	a.queue = q
	if err != nil {
		return RedrivePreview{}, err
	}
	if err := checkRedriveAllowed(q); err != nil {
		return RedrivePreview{}, err
	}
	var inSample SelectionInSample
	if err := checkDiscard(req); err != nil {
		return RedrivePreview{}, err
	}
	if req.Selection != nil {
		if inSample, err = s.checkSelection(ctx, q, *req.Selection); err != nil {
			return RedrivePreview{}, err
		}
	}
	if err := s.runningJob(ctx, q); err != nil {
		return RedrivePreview{}, err
	}
	// The store's tasks, as the collector and the actions last saw them: the start itself asks
	// SQS again.
	stored, err := s.store.ListMoveTasks(ctx, q.ID, 10)
	if err != nil {
		return RedrivePreview{}, fmt.Errorf("actions: move tasks of %s: %w", q.Name, err)
	}
	for _, t := range stored {
		if t.Running() {
			return RedrivePreview{}, errTaskRunning(q, t)
		}
	}
	destARN, err := s.destination(ctx, q, req.Destination)
	if err != nil {
		return RedrivePreview{}, err
	}
	p := RedrivePreview{
		QueueID: q.ID, Queue: q.Name, QueueARN: q.ARN, FIFO: q.FIFO, SourceARNs: q.SourceARNs,
		DestinationARN: destARN, MaxPerSecond: rate, Selection: req.Selection, InSample: inSample,
	}
	if sign {
		p.ExpiresAt = s.now().Add(ConfirmationTTL).Truncate(time.Second)
		c := confirmation{Actor: actor.credential(), QueueARN: q.ARN, Destination: req.Destination, Rate: rate,
			Selection: selectionDigest(req.Selection, req.Discard), Expires: p.ExpiresAt.Unix(), Nonce: rand.Text()}
		p.Token = c.seal(s.signer)
	}
	return p, nil
}

// checkConfirmation reads a confirmed start's token, before its queue is resolved: it must be
// toolq's, the actor's own, and not expired.
func (s *Service) checkConfirmation(actor Actor, token string) (confirmation, error) {
	if s.signer == nil {
		return confirmation{}, refuse(Unavailable, "confirmation_unavailable", "this dashboard has no key to check confirmations with")
	}
	c, err := openConfirmation(s.signer, token)
	if err != nil {
		return confirmation{}, err
	}
	if c.Actor != actor.credential() {
		return confirmation{}, refuse(Forbidden, "confirmation_mismatch", "this confirmation was given to another caller: preview the redrive yourself")
	}
	if expired := time.Unix(c.Expires, 0); !s.now().Before(expired) {
		return confirmation{}, refuse(Conflict, "confirmation_expired",
			"the confirmation expired at %s (a confirmation lasts %s): preview the redrive again", expired.UTC().Format(time.RFC3339), ConfirmationTTL)
	}
	return c, nil
}

// matches refuses a confirmed start that is not the start the token confirms.
func (c confirmation) matches(q store.Queue, destination string, rate int, sel *engine.Selection, discard bool) error {
	if c.QueueARN != q.ARN || c.Destination != destination || c.Rate != rate || c.Selection != selectionDigest(sel, discard) {
		return refuse(Unprocessable, "confirmation_mismatch",
			"this confirmation is for another redrive (its queue, destination, rate or selection differ): preview this one")
	}
	return nil
}

// usedConfirmation refuses the second use of a token, saying what the first did: a confirmation
// is of one start, and a caller that lost the first answer learns it here.
func (s *Service) usedConfirmation(ctx context.Context, intent, outcome store.AuditEntry) error {
	first := outcome.Result
	switch {
	case outcome.Result == store.AuditAccepted:
		if t, err := s.store.GetMoveTask(ctx, outcome.MoveTaskID); err == nil {
			first = fmt.Sprintf("accepted: the move task it started at %s is %s, %d of %d moved", t.StartedAt.UTC().Format(time.RFC3339), t.Status, t.Moved, t.ToMove)
		}
	case outcome.Code != "":
		first += " (" + outcome.Code + ")"
	}
	return refuse(Conflict, "confirmation_used",
		"this confirmation was used already (audit entry %d, %s): preview the redrive again to start another", intent.ID, first)
}

// errTaskRunning refuses a start while a task of q runs.
func errTaskRunning(q store.Queue, t store.MoveTask) error {
	return refuse(Conflict, "task_running",
		"a redrive of %s is already running (%d of %d moved); wait for it or cancel it", q.Name, t.Moved, t.ToMove)
}
