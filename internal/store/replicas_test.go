package store

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestLeadIsHeldByOneReplica: of two stores on one PostgreSQL database, one leads; when its
// session ends, on purpose or not, the other can lead.
func TestLeadIsHeldByOneReplica(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.DB(t)
	a, b := openURL(t, url), openURL(t, url)

	la, err := a.TryLead(ctx, "a")
	if err != nil || la == nil {
		t.Fatalf("first TryLead = %v, %v; want a lease", la, err)
	}
	if err := la.Confirm(ctx); err != nil {
		t.Fatalf("Confirm of a held lease: %v", err)
	}
	if lb, err := b.TryLead(ctx, "b"); err != nil || lb != nil {
		t.Fatalf("second TryLead while the first holds = %v, %v; want nil, nil", lb, err)
	}
	if err := la.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	lb, err := b.TryLead(ctx, "b")
	if err != nil || lb == nil {
		t.Fatalf("TryLead after a release = %v, %v; want a lease", lb, err)
	}

	// The server ends the leader's session (a crash, a failover): the lease no longer
	// confirms, and the other replica can lead (the 5-s timeout waits for the session to end).
	var pid int
	if err := lb.conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := a.wdb.ExecContext(ctx, "SELECT pg_terminate_backend(?, 5000)", pid); err != nil {
		t.Fatal(err)
	}
	if err := lb.Confirm(ctx); err == nil {
		t.Fatal("Confirm of a lease whose session was terminated succeeded")
	}
	lb.Release(ctx)
	la, err = a.TryLead(ctx, "a")
	if err != nil || la == nil {
		t.Fatalf("TryLead after the leader's session ended = %v, %v; want a lease", la, err)
	}
	la.Release(ctx)
}

func TestSQLiteAlwaysLeads(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for range 2 {
		l, err := s.TryLead(t.Context(), "solo")
		if err != nil || l == nil || l.Confirm(t.Context()) != nil {
			t.Fatalf("TryLead on SQLite = %v, %v; want a lease that confirms", l, err)
		}
	}
}

// TestNoticesReachEveryListener: a notice sent through one store reaches a listener on another.
func TestNoticesReachEveryListener(t *testing.T) {
	t.Parallel()
	url := pgtest.DB(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan string, 10)
	listening := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- b.Listen(ctx, func() { close(listening) }, func(p string) { got <- p }) }()
	<-listening
	for _, p := range []string{`{"k":"queues"}`, `{"k":"audit"}`} {
		if err := a.Notify(ctx, p); err != nil {
			t.Fatalf("Notify: %v", err)
		}
	}
	for _, want := range []string{`{"k":"queues"}`, `{"k":"audit"}`} {
		select {
		case p := <-got:
			if p != want {
				t.Errorf("notice = %q; want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("notice %q never arrived", want)
		}
	}
	if err := a.Notify(ctx, string(make([]byte, MaxNoticeBytes+1))); err == nil {
		t.Error("Notify of an oversized payload succeeded")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Listen after ctx ended = %v; want nil", err)
	}
}

// TestReplicaRows: heartbeat rows are listed leader first. The leader is, on SQLite, the row
// that says so; on PostgreSQL the replica whose session holds the lead's lock, whatever the rows
// say: none before a lease is taken, the lease's holder while it is held (a row that says it
// leads without the lock is no leader), none again once it is released.
func TestReplicaRows(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		rs := []Replica{
			{ID: "a", Host: "pod-a", Version: "1.2", StartedAt: t0, HeartbeatAt: t0.Add(time.Minute)},
			{ID: "b", Host: "pod-b", Version: "1.2", StartedAt: t0.Add(time.Second), HeartbeatAt: t0.Add(time.Minute),
				Leader: true, LeaderSince: t0.Add(2 * time.Second)},
			{ID: "old", StartedAt: t0.Add(-time.Hour), HeartbeatAt: t0.Add(-time.Hour)},
		}
		for _, r := range rs {
			if err := s.SaveReplica(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		leaders := func() []string {
			t.Helper()
			got, err := s.Replicas(ctx, t0)
			if err != nil || len(got) != 2 {
				t.Fatalf("Replicas = %+v, %v; want a and b", got, err)
			}
			var out []string
			for _, r := range got {
				if r.Leader {
					out = append(out, r.ID)
				}
			}
			if len(out) == 1 && got[0].ID != out[0] {
				t.Errorf("Replicas = %+v; want the leader first", got)
			}
			return out
		}
		if s.Dialect() == "sqlite" {
			if got := leaders(); !slices.Equal(got, []string{"b"}) {
				t.Errorf("leaders on SQLite = %v; want b, as its row says", got)
			}
		} else {
			if got := leaders(); len(got) != 0 {
				t.Errorf("leaders with no lock held = %v; want none, whatever the rows say", got)
			}
			lease, err := s.TryLead(ctx, "a")
			if err != nil || lease == nil {
				t.Fatalf("TryLead = %v, %v", lease, err)
			}
			if got := leaders(); !slices.Equal(got, []string{"a"}) {
				t.Errorf("leaders while a's session holds the lock = %v; want a alone", got)
			}
			if err := lease.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if got := leaders(); len(got) != 0 {
				t.Errorf("leaders after the release = %v; want none", got)
			}
		}
		n, err := s.DeleteReplicasBefore(ctx, t0, "a")
		if err != nil || n != 2 {
			t.Fatalf("DeleteReplicasBefore = %d, %v; want 2 (old and a)", n, err)
		}
	})
}

// TestLeadHolderName: a holder's name must fit the lead session's name, in printable ASCII.
func TestLeadHolderName(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, holder := range []string{"", strings.Repeat("x", MaxLeadHolder+1), "a\nb", "é"} {
		if _, err := s.TryLead(t.Context(), holder); err == nil {
			t.Errorf("TryLead(%q) took the lead; want an error", holder)
		}
	}
	if l, err := s.TryLead(t.Context(), strings.Repeat("x", MaxLeadHolder)); err != nil || l == nil {
		t.Errorf("TryLead of the longest name = %v, %v; want a lease", l, err)
	}
}

// openURL opens a store on a database URL and closes it when the test ends.
func openURL(t *testing.T, url string) *Store {
	t.Helper()
	s, err := Open(context.Background(), url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return traceStore(s)
}

// TestLockQueueAcrossStores: a queue's lock taken through one store makes another store on the
// same database wait until it is released; other queues are not held up.
func TestLockQueueAcrossStores(t *testing.T) {
	t.Parallel()
	url := pgtest.DB(t)
	a, b := openURL(t, url), openURL(t, url)
	ctx := context.Background()
	unlock, err := a.LockQueue(ctx, "arn:q1")
	if err != nil {
		t.Fatal(err)
	}
	if u, err := b.LockQueue(ctx, "arn:q2"); err != nil {
		t.Fatalf("lock of another queue: %v", err)
	} else {
		u()
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := b.LockQueue(short, "arn:q1"); err == nil {
		t.Fatal("a second lock of a held queue was granted")
	}
	unlock()
	u, err := b.LockQueue(ctx, "arn:q1")
	if err != nil {
		t.Fatalf("lock after the release: %v", err)
	}
	u()
}
