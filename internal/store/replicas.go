package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// Replicas: several dashboards on one PostgreSQL database. What they share goes through here,
// so that the SQL stays in this package: the collector's lead (a session advisory lock), the
// change notices (LISTEN/NOTIFY), and each replica's row for the status page. On SQLite there
// is one dashboard: it always leads, and notices have no one to reach.

// leadLockKey is the advisory lock of the collector's lead: any int64 works, as long as every
// replica uses the same one ("toolq" in ASCII, collector 1).
const leadLockKey int64 = 0x746f6f6c71_01

// noticeChannel is the LISTEN/NOTIFY channel of change notices.
const noticeChannel = "toolq_changes"

// MaxNoticeBytes is the largest payload Notify sends: PostgreSQL's limit is 8,000 bytes.
const MaxNoticeBytes = 7900

// Lease is the collector's lead, held by this process. On PostgreSQL it is a session advisory
// lock on a connection of its own: the lock lasts exactly as long as that session, so a replica
// that dies (or whose connection the server drops) loses it at once, and another can take it.
type Lease struct {
	conn *sql.Conn // nil on SQLite
}

// TryLead takes the collector's lead if no other replica holds it: a *Lease, or nil (and no
// error) when another replica leads. On SQLite it always succeeds.
func (s *Store) TryLead(ctx context.Context) (*Lease, error) {
	if s.d != postgresDialect {
		return &Lease{}, nil
	}
	conn, err := s.db.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: try lead: %w", err)
	}
	var got bool
	err = conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", leadLockKey).Scan(&got)
	traced(&s.tracer, s.d, err)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("store: try lead: %w", err)
	}
	if !got {
		conn.Close()
		return nil, nil
	}
	return &Lease{conn: conn}, nil
}

// Confirm checks that the lease still holds: its session answers and still has the lock.
func (l *Lease) Confirm(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	var held bool
	err := l.conn.QueryRowContext(ctx, `
		SELECT count(*) > 0 FROM pg_locks
		WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
			AND classid = ($1::bigint >> 32)::oid AND objid = ($1::bigint & 4294967295)::oid AND objsubid = 1`,
		leadLockKey).Scan(&held)
	if err != nil {
		return fmt.Errorf("store: confirm lead: %w", err)
	}
	if !held {
		return errors.New("store: confirm lead: the session no longer holds the lock")
	}
	return nil
}

// Release gives the lead up (unlocking, then closing its connection). A lease whose connection
// already failed is released by the server; Release then only closes it.
func (l *Lease) Release(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	_, err := l.conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", leadLockKey)
	// Raw lets the connection be thrown away rather than returned to the pool: a session that
	// failed mid-unlock might still hold the lock.
	if err != nil {
		l.conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	return errors.Join(err, l.conn.Close())
}

// Notify sends a change notice to every replica listening (itself included); a no-op on SQLite.
func (s *Store) Notify(ctx context.Context, payload string) error {
	if s.d != postgresDialect {
		return nil
	}
	if len(payload) > MaxNoticeBytes {
		return fmt.Errorf("store: notify: payload of %d bytes is over %d", len(payload), MaxNoticeBytes)
	}
	if _, err := s.wdb.ExecContext(ctx, "SELECT pg_notify(?, ?)", noticeChannel, payload); err != nil {
		return fmt.Errorf("store: notify: %w", err)
	}
	return nil
}

// Listen receives change notices on a connection of its own and calls fn with each payload,
// in order, until ctx ends (nil) or the connection fails (the error). listening is called once
// LISTEN is in effect: a notice sent after that is received. On SQLite it only waits for ctx.
func (s *Store) Listen(ctx context.Context, listening func(), fn func(payload string)) error {
	if s.d != postgresDialect {
		listening()
		<-ctx.Done()
		return nil
	}
	conn, err := s.db.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: listen: %w", err)
	}
	defer conn.Close()
	// The connection never goes back to the pool: it is LISTENing, or broken, or was cut
	// mid-wait when ctx ended. Joining driver.ErrBadConn to what Raw returns discards it.
	err = conn.Raw(func(dc any) error {
		pc := dc.(*stdlib.Conn).Conn()
		_, err := pc.Exec(ctx, "LISTEN "+noticeChannel)
		traced(&s.tracer, s.d, err)
		if err != nil {
			return errors.Join(err, driver.ErrBadConn)
		}
		listening()
		for {
			n, err := pc.WaitForNotification(ctx)
			if err != nil {
				return errors.Join(err, driver.ErrBadConn)
			}
			fn(n.Payload)
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return fmt.Errorf("store: listen: %w", err)
}

// Replica is one dashboard process sharing the database, as its last heartbeat left it.
type Replica struct {
	ID          string
	Host        string
	Version     string
	StartedAt   time.Time
	HeartbeatAt time.Time
	// Leader: it held the collector's lead at its heartbeat, since LeaderSince.
	Leader      bool
	LeaderSince time.Time
}

// SaveReplica records a replica's heartbeat.
func (s *Store) SaveReplica(ctx context.Context, r Replica) error {
	_, err := s.wdb.ExecContext(ctx, `
		INSERT INTO replicas (id, host, version, started_at, heartbeat_at, is_leader, leader_since)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET host = excluded.host, version = excluded.version,
			heartbeat_at = excluded.heartbeat_at, is_leader = excluded.is_leader, leader_since = excluded.leader_since`,
		r.ID, r.Host, r.Version, ms(r.StartedAt), ms(r.HeartbeatAt), r.Leader, ms(r.LeaderSince))
	if err != nil {
		return fmt.Errorf("store: save replica %q: %w", r.ID, err)
	}
	return nil
}

// Replicas returns the replicas heard from since a time, leader first, then by start.
func (s *Store) Replicas(ctx context.Context, since time.Time) ([]Replica, error) {
	rows, err := s.db.QueryContext(ctx, `
		SELECT id, host, version, started_at, heartbeat_at, is_leader, leader_since FROM replicas
		WHERE heartbeat_at >= ? ORDER BY is_leader DESC, started_at, id`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("store: replicas: %w", err)
	}
	defer rows.Close()
	out := []Replica{}
	for rows.Next() {
		var r Replica
		var started, beat, since int64
		if err := rows.Scan(&r.ID, &r.Host, &r.Version, &started, &beat, &r.Leader, &since); err != nil {
			return nil, fmt.Errorf("store: replicas: %w", err)
		}
		r.StartedAt, r.HeartbeatAt, r.LeaderSince = fromMS(started), fromMS(beat), fromMS(since)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: replicas: %w", err)
	}
	return out, nil
}

// DeleteReplicasBefore drops the rows of replicas not heard from since a time, and the row of
// a replica that stops (id, when not ""), and returns how many it dropped.
func (s *Store) DeleteReplicasBefore(ctx context.Context, before time.Time, id string) (int64, error) {
	res, err := s.wdb.ExecContext(ctx, "DELETE FROM replicas WHERE heartbeat_at < ? OR id = ?", ms(before), id)
	if err != nil {
		return 0, fmt.Errorf("store: delete replicas: %w", err)
	}
	return res.RowsAffected()
}

// LockQueue serialises the actions on one queue across replicas: on PostgreSQL it waits for a
// session advisory lock on the queue's ARN, held on a connection of its own until unlock is
// called (or the session ends); on SQLite, with one process, it returns at once, the actions'
// own lock being enough. It gives up when ctx ends.
func (s *Store) LockQueue(ctx context.Context, arn string) (unlock func(), err error) {
	if s.d != postgresDialect {
		return func() {}, nil
	}
	conn, err := s.db.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: lock queue %s: %w", arn, err)
	}
	// The two-key form keeps queue locks apart from the lead's one-key lock: 1 is "a queue".
	_, err = conn.ExecContext(ctx, "SELECT pg_advisory_lock(1, hashtext($1))", arn)
	traced(&s.tracer, s.d, err)
	if err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn }) // a cancelled wait may still get the lock
		conn.Close()
		return nil, fmt.Errorf("store: lock queue %s: %w", arn, err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_unlock(1, hashtext($1))", arn); err != nil {
			conn.Raw(func(any) error { return driver.ErrBadConn }) // closing the session frees the lock
		}
		conn.Close()
	}, nil
}
