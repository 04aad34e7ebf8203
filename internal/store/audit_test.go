package store

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"
)

func TestAudit(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		var ids []int64
		for i := range 7 {
			queue := "a-dlq"
			if i%2 == 1 {
				queue = "b-dlq"
			}
			id, err := s.AppendAudit(ctx, AuditEntry{
				At: t0.Add(time.Duration(i) * time.Minute), Actor: "bot", ActorKind: "token", Role: "operator",
				Action: "redrive.start", QueueName: queue, Params: `{"maxPerSecond":10,"note":"<x>"}`,
				Result: AuditAccepted, RemoteAddr: "127.0.0.1",
			})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if _, err := s.AppendAudit(ctx, AuditEntry{At: t0, Actor: "x", Action: "token.create", Result: AuditRefused}); err != nil {
			t.Errorf("AppendAudit with empty params: %v", err)
		}
		if _, err := s.AppendAudit(ctx, AuditEntry{At: t0, Actor: "x", Action: "a", Result: AuditFailed, Params: "not json"}); err == nil {
			t.Error("AppendAudit accepted params that are not JSON")
		}

		all, err := s.ListAudit(ctx, AuditFilter{})
		if err != nil || len(all) != 8 || all[0].Action != "token.create" || all[0].Params != "{}" {
			t.Fatalf("ListAudit = %d entries, %v; want 8, newest first with params {}", len(all), err)
		}

		// Page through a-dlq's entries two at a time.
		var got []int64
		before := int64(0)
		for range 5 {
			page, err := s.ListAudit(ctx, AuditFilter{QueueName: "a-dlq", BeforeID: before, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, e := range page {
				got = append(got, e.ID)
			}
			before = page[len(page)-1].ID
		}
		if want := []int64{ids[6], ids[4], ids[2], ids[0]}; !slices.Equal(got, want) {
			t.Errorf("a-dlq pages = %v; want %v", got, want)
		}
		if e := all[1]; e.Params != `{"maxPerSecond":10,"note":"<x>"}` || e.RemoteAddr != "127.0.0.1" || !e.At.Equal(t0.Add(6*time.Minute)) {
			t.Errorf("entry round trip = %+v", e)
		}
	})
}

// TestAuditIntents: an action records its intent before calling AWS and its outcome after; the
// intents no outcome names are pending, an idempotency key finds its intent again under the
// credential that carried it (not another credential of the same name), and an accepted outcome
// is found by the move task it started.
func TestAuditIntents(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		intent := func(actor, credential, key string) int64 {
			t.Helper()
			id, err := s.AppendAudit(ctx, AuditEntry{At: t0, Actor: actor, Credential: credential, TokenID: 7, Action: "redrive.start",
				QueueName: "a-dlq", Result: AuditIntent, IdempotencyKey: key})
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		done, open1, other := intent("bot", "token:7", "k1"), intent("bot", "token:7", "k2"), intent("ops", "proxy:ops", "k1")
		if _, err := s.OutcomeOf(ctx, done); !errors.Is(err, ErrNotFound) {
			t.Errorf("OutcomeOf before the outcome = %v; want ErrNotFound", err)
		}
		outcome, err := s.AppendAudit(ctx, AuditEntry{At: t0.Add(time.Second), Actor: "bot", Action: "redrive.start", QueueName: "a-dlq",
			Result: AuditAccepted, IntentID: done, MoveTaskID: 42, Detail: "handle"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.AppendAudit(ctx, AuditEntry{At: t0, Actor: "ops", Action: "redrive.start", Result: AuditFailed, IntentID: other, Code: "aws", Kind: "aws"}); err != nil {
			t.Fatal(err)
		}

		pending, err := s.PendingIntents(ctx)
		if err != nil || len(pending) != 1 || pending[0].ID != open1 {
			t.Errorf("PendingIntents = %+v, %v; want the one without an outcome", pending, err)
		}
		if e, err := s.IntentByKey(ctx, "token:7", "k1"); err != nil || e.ID != done || e.TokenID != 7 || e.Credential != "token:7" {
			t.Errorf("IntentByKey(token:7, k1) = %+v, %v; want %d with its token id", e, err, done)
		}
		if e, err := s.IntentByKey(ctx, "proxy:ops", "k1"); err != nil || e.ID != other {
			t.Errorf("IntentByKey(proxy:ops, k1) = %+v, %v; want %d", e, err, other)
		}
		for _, credential := range []string{"token:8", "proxy:bot", "bot"} {
			if _, err := s.IntentByKey(ctx, credential, "k1"); !errors.Is(err, ErrNotFound) {
				t.Errorf("IntentByKey(%s, k1), another credential = %v; want ErrNotFound", credential, err)
			}
		}
		if _, err := s.IntentByKey(ctx, "token:7", "k3"); !errors.Is(err, ErrNotFound) {
			t.Errorf("IntentByKey of an unknown key = %v; want ErrNotFound", err)
		}
		if e, err := s.OutcomeOf(ctx, done); err != nil || e.ID != outcome || e.Result != AuditAccepted {
			t.Errorf("OutcomeOf = %+v, %v; want the accepted outcome", e, err)
		}
		if e, err := s.AcceptedFor(ctx, "redrive.start", 42); err != nil || e.ID != outcome || e.Detail != "handle" {
			t.Errorf("AcceptedFor(42) = %+v, %v; want the accepted outcome", e, err)
		}
		if _, err := s.AcceptedFor(ctx, "redrive.cancel", 42); !errors.Is(err, ErrNotFound) {
			t.Errorf("AcceptedFor another action = %v; want ErrNotFound", err)
		}
	})
}

func TestTokens(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		hash := []byte("0123456789abcdef0123456789abcdef")
		tok, err := s.CreateToken(ctx, "chatbot", "viewer", hash, t0)
		if err != nil {
			t.Fatal(err)
		}
		if tok.ID == 0 || tok.Name != "chatbot" || tok.Role != "viewer" || !tok.CreatedAt.Equal(t0) {
			t.Errorf("CreateToken = %+v", tok)
		}
		if _, err := s.CreateToken(ctx, "chatbot", "operator", []byte("other"), t0); !errors.Is(err, ErrConflict) {
			t.Errorf("second live token of a name = %v; want ErrConflict", err)
		}
		got, err := s.TokenByHash(ctx, hash)
		if err != nil || got.ID != tok.ID {
			t.Errorf("TokenByHash = %+v, %v", got, err)
		}
		if err := s.TouchToken(ctx, tok.ID, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.TouchToken(ctx, 404, t0); !errors.Is(err, ErrNotFound) {
			t.Errorf("TouchToken(404) = %v; want ErrNotFound", err)
		}

		if err := s.RevokeToken(ctx, "chatbot", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.RevokeToken(ctx, "chatbot", t0.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
			t.Errorf("revoking twice = %v; want ErrNotFound", err)
		}
		if _, err := s.TokenByHash(ctx, hash); !errors.Is(err, ErrNotFound) {
			t.Errorf("TokenByHash of a revoked token = %v; want ErrNotFound", err)
		}
		// The name is free again once revoked.
		if _, err := s.CreateToken(ctx, "chatbot", "operator", []byte("new-hash"), t0.Add(2*time.Hour)); err != nil {
			t.Errorf("reusing a revoked name: %v", err)
		}
		list, err := s.ListTokens(ctx)
		if err != nil || len(list) != 2 {
			t.Fatalf("ListTokens = %d, %v; want 2", len(list), err)
		}
		if !list[0].LastUsedAt.Equal(t0.Add(time.Minute)) || !list[0].RevokedAt.Equal(t0.Add(time.Hour)) || !list[1].RevokedAt.IsZero() {
			t.Errorf("ListTokens = %+v", list)
		}
	})
}
