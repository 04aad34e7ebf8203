package actions_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/store"
)

// testSigner signs as the authenticator does: an HMAC under a key, by purpose.
type testSigner []byte

func (k testSigner) Sign(purpose string, msg []byte) []byte {
	m := hmac.New(sha256.New, k)
	m.Write([]byte(purpose))
	m.Write(msg)
	return m.Sum(nil)
}

func (k testSigner) Verify(purpose string, msg, mac []byte) bool {
	return hmac.Equal(k.Sign(purpose, msg), mac)
}

// confirmingWorld is newWorld with actions that sign confirmations.
func confirmingWorld(t *testing.T) (*actionstest.World, *actions.Service) {
	t.Helper()
	w := newWorld(t)
	return w, w.Actions(actions.Options{Confirmations: testSigner("key")})
}

func TestPreviewThenConfirmedStart(t *testing.T) {
	t.Parallel()
	w, svc := confirmingWorld(t)
	ctx := context.Background()
	req := actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "20"}
	p, err := svc.PreviewRedrive(ctx, operator, req)
	if err != nil {
		t.Fatalf("PreviewRedrive: %v", err)
	}
	if p.Queue != "orders-dlq" || p.QueueARN != w.ARN("orders-dlq") || p.MaxPerSecond != 20 || p.DestinationARN != "" ||
		len(p.SourceARNs) != 1 || p.SourceARNs[0] != w.ARN("orders") || !p.ExpiresAt.Equal(w.Now().Add(actions.ConfirmationTTL).Truncate(time.Second)) {
		t.Errorf("preview = %+v", p)
	}
	if !strings.HasPrefix(p.Token, "tqc_") {
		t.Errorf("token = %q", p.Token)
	}
	e := lastAudit(t, w)
	if e.Action != actions.ActionPreviewRedrive || e.Result != store.AuditAccepted || strings.Contains(e.Detail, p.Token) || !strings.Contains(e.Detail, "good until") {
		t.Errorf("preview's audit entry = %+v", e)
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 0 {
		t.Fatalf("a preview started a task: %v", got)
	}

	req.Confirmation = p.Token
	task, err := svc.StartRedrive(ctx, operator, req)
	if err != nil {
		t.Fatalf("StartRedrive with the confirmation: %v", err)
	}
	if task.MaxPerSecond != 20 || task.TaskHandle == "" {
		t.Errorf("task = %+v", task)
	}
	if e := lastAudit(t, w); e.Action != actions.ActionStartRedrive || e.Result != store.AuditAccepted || e.Actor != operator.Name {
		t.Errorf("start's audit entry = %+v", e)
	}

	// A second use starts nothing and says what the first did.
	_, err = svc.StartRedrive(ctx, operator, req)
	wantRefusal(t, err, "confirmation_used", actions.Conflict)
	if !strings.Contains(err.Error(), "accepted") {
		t.Errorf("the refusal does not say the first use was accepted: %v", err)
	}
	if e := lastAudit(t, w); e.Result != store.AuditRefused || e.Code != "confirmation_used" {
		t.Errorf("reuse's audit entry = %+v", e)
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 1 {
		t.Errorf("tasks after the reuse = %v, want the one", got)
	}
}

func TestConfirmedStartRefusals(t *testing.T) {
	t.Parallel()
	w, svc := confirmingWorld(t)
	ctx := context.Background()
	preview := func(t *testing.T, req actions.StartRedriveRequest) string {
		t.Helper()
		p, err := svc.PreviewRedrive(ctx, operator, req)
		if err != nil {
			t.Fatalf("PreviewRedrive: %v", err)
		}
		return p.Token
	}
	other := actions.Actor{Name: "carol", Kind: "token", Role: "operator"}
	tests := []struct {
		name  string
		actor actions.Actor
		req   func(t *testing.T) actions.StartRedriveRequest
		code  string
		kind  actions.Kind
	}{
		{"not a token", operator, func(*testing.T) actions.StartRedriveRequest {
			return actions.StartRedriveRequest{Queue: "orders-dlq", Confirmation: "ignore previous instructions"}
		}, "invalid_confirmation", actions.Invalid},
		{"a forged signature", operator, func(t *testing.T) actions.StartRedriveRequest {
			tok := preview(t, actions.StartRedriveRequest{Queue: "orders-dlq"})
			return actions.StartRedriveRequest{Queue: "orders-dlq", Confirmation: tok[:len(tok)-2] + "AA"}
		}, "invalid_confirmation", actions.Invalid},
		{"another caller's", other, func(t *testing.T) actions.StartRedriveRequest {
			return actions.StartRedriveRequest{Queue: "orders-dlq", Confirmation: preview(t, actions.StartRedriveRequest{Queue: "orders-dlq"})}
		}, "confirmation_mismatch", actions.Forbidden},
		{"another rate", operator, func(t *testing.T) actions.StartRedriveRequest {
			return actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "500", Confirmation: preview(t, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "5"})}
		}, "confirmation_mismatch", actions.Unprocessable},
		{"another queue", operator, func(t *testing.T) actions.StartRedriveRequest {
			return actions.StartRedriveRequest{Queue: "calls-dlq.fifo", Confirmation: preview(t, actions.StartRedriveRequest{Queue: "orders-dlq"})}
		}, "confirmation_mismatch", actions.Unprocessable},
		{"a viewer, whatever the token", viewer, func(t *testing.T) actions.StartRedriveRequest {
			return actions.StartRedriveRequest{Queue: "orders-dlq", Confirmation: preview(t, actions.StartRedriveRequest{Queue: "orders-dlq"})}
		}, "forbidden", actions.Forbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.StartRedrive(ctx, tt.actor, tt.req(t))
			wantRefusal(t, err, tt.code, tt.kind)
			if e := lastAudit(t, w); e.Action != actions.ActionStartRedrive || e.Result != store.AuditRefused || e.Code != tt.code {
				t.Errorf("audit entry = %+v", e)
			}
		})
	}
	if got := liveTasks(t, w, "orders-dlq"); len(got) != 0 {
		t.Errorf("a refused start started a task: %v", got)
	}
}

func TestConfirmationExpires(t *testing.T) {
	t.Parallel()
	w, svc := confirmingWorld(t)
	ctx := context.Background()
	p, err := svc.PreviewRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	if err != nil {
		t.Fatalf("PreviewRedrive: %v", err)
	}
	w.Advance(actions.ConfirmationTTL)
	_, err = svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Confirmation: p.Token})
	wantRefusal(t, err, "confirmation_expired", actions.Conflict)
	if e := lastAudit(t, w); e.Result != store.AuditRefused || e.Code != "confirmation_expired" {
		t.Errorf("audit entry = %+v", e)
	}
}

func TestPreviewRefusals(t *testing.T) {
	t.Parallel()
	w, svc := confirmingWorld(t)
	ctx := context.Background()
	unsigned := w.Actions(actions.Options{})
	tests := []struct {
		name  string
		svc   *actions.Service
		actor actions.Actor
		req   actions.StartRedriveRequest
		code  string
	}{
		{"viewer", svc, viewer, actions.StartRedriveRequest{Queue: "orders-dlq"}, "forbidden"},
		{"bad rate", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "fast"}, "invalid_rate"},
		{"not a DLQ", svc, operator, actions.StartRedriveRequest{Queue: "orders"}, "not_dead_letter_queue"},
		{"denied by policy", svc, operator, actions.StartRedriveRequest{Queue: "denied-dlq"}, "redrive_not_allowed"},
		{"wrong destination type", svc, operator, actions.StartRedriveRequest{Queue: "orders-dlq", Destination: "calls.fifo"}, "destination_type_mismatch"},
		{"no key", unsigned, operator, actions.StartRedriveRequest{Queue: "orders-dlq"}, "confirmation_unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.svc.PreviewRedrive(ctx, tt.actor, tt.req)
			var ae *actions.Error
			if !errors.As(err, &ae) || ae.Code != tt.code {
				t.Fatalf("err = %v, want %s", err, tt.code)
			}
			if e := lastAudit(t, w); e.Action != actions.ActionPreviewRedrive || e.Result != store.AuditRefused || e.Code != tt.code {
				t.Errorf("audit entry = %+v", e)
			}
		})
	}

	// While a task runs, the preview says so.
	if _, err := svc.StartRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq", MaxPerSecond: "1"}); err != nil {
		t.Fatalf("StartRedrive: %v", err)
	}
	_, err := svc.PreviewRedrive(ctx, operator, actions.StartRedriveRequest{Queue: "orders-dlq"})
	wantRefusal(t, err, "task_running", actions.Conflict)
}
