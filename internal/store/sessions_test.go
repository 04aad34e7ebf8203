package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"
)

func sessionHash(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func TestSessions(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		s := open(t)
		ctx := context.Background()
		alice, err := s.CreateToken(ctx, "alice", "viewer", sessionHash("tq_alice"), t0)
		if err != nil {
			t.Fatal(err)
		}
		bob, err := s.CreateToken(ctx, "bob", "operator", sessionHash("tq_bob"), t0)
		if err != nil {
			t.Fatal(err)
		}
		for _, sess := range []struct {
			name  string
			token int64
			ttl   time.Duration
		}{{"alice-1", alice.ID, time.Hour}, {"alice-2", alice.ID, time.Hour}, {"alice-short", alice.ID, time.Minute}, {"bob-1", bob.ID, time.Hour}} {
			if err := s.CreateSession(ctx, sess.token, sessionHash(sess.name), t0, t0.Add(sess.ttl)); err != nil {
				t.Fatalf("CreateSession(%s): %v", sess.name, err)
			}
		}
		if err := s.EndSession(ctx, sessionHash("alice-1"), t0.Add(time.Second)); err != nil {
			t.Fatalf("EndSession: %v", err)
		}
		if err := s.RevokeToken(ctx, "bob", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}

		tests := []struct {
			name    string
			session string
			at      time.Time
			want    string // token name; empty: ErrNotFound
		}{
			{"live", "alice-2", t0.Add(time.Minute), "alice"},
			{"ended by a sign-out", "alice-1", t0.Add(time.Minute), ""},
			{"expired", "alice-short", t0.Add(time.Minute), ""},
			{"just before its expiry", "alice-short", t0.Add(time.Minute - time.Millisecond), "alice"},
			{"of a revoked token", "bob-1", t0.Add(time.Minute), ""},
			{"unknown", "mallory", t0, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				tok, err := s.SessionToken(ctx, sessionHash(tt.session), tt.at)
				if tt.want == "" {
					if !errors.Is(err, ErrNotFound) {
						t.Errorf("SessionToken = %+v, %v; want ErrNotFound", tok, err)
					}
					return
				}
				if err != nil || tok.Name != tt.want {
					t.Errorf("SessionToken = %+v, %v; want %s", tok, err, tt.want)
				}
			})
		}

		t.Run("ending twice", func(t *testing.T) {
			if err := s.EndSession(ctx, sessionHash("alice-1"), t0.Add(time.Minute)); !errors.Is(err, ErrNotFound) {
				t.Errorf("second EndSession: %v; want ErrNotFound", err)
			}
		})
		t.Run("a session of no token", func(t *testing.T) {
			if err := s.CreateSession(ctx, 999, sessionHash("ghost"), t0, t0.Add(time.Hour)); !errors.Is(err, ErrNotFound) {
				t.Errorf("CreateSession for token 999: %v; want ErrNotFound", err)
			}
		})
		t.Run("the same id twice", func(t *testing.T) {
			if err := s.CreateSession(ctx, alice.ID, sessionHash("alice-2"), t0, t0.Add(time.Hour)); !errors.Is(err, ErrConflict) {
				t.Errorf("CreateSession with a stored hash: %v; want ErrConflict", err)
			}
		})
		t.Run("a login deletes expired sessions", func(t *testing.T) {
			later := t0.Add(2 * time.Hour)
			if err := s.CreateSession(ctx, alice.ID, sessionHash("alice-3"), later, later.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM browser_sessions").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Errorf("%d sessions kept; want only the new one", n)
			}
		})
	})
}
