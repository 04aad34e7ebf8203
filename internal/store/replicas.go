package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
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
// The session carries the holder's name (application_name), so that the database itself says
// who leads (Replicas).
type Lease struct {
	conn *sql.Conn // nil on SQLite
}

// MaxLeadHolder is the longest holder name TryLead takes: with leadNamePrefix it must fit in
// PostgreSQL's application_name (63 bytes), which the server would cut silently.
const MaxLeadHolder = 63 - len(leadNamePrefix)

// leadNamePrefix starts the application_name of a lease's session, before the holder's name.
const leadNamePrefix = "toolq lead "

// leadLockHeld is the condition on pg_locks (as l) of the lead's lock, held, in this database:
// replicas of another database on the same server (another toolq, a test) hold their own.
const leadLockHeld = `l.locktype = 'advisory' AND l.granted
	AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	AND l.classid = ($1::bigint >> 32)::oid AND l.objid = ($1::bigint & 4294967295)::oid AND l.objsubid = 1`

// TryLead takes the collector's lead for holder (the replica's id, at most MaxLeadHolder bytes
// of printable ASCII) if no other replica holds it: a *Lease, or nil (and no error) when another
// replica leads. On SQLite it always succeeds.
func (s *Store) TryLead(ctx context.Context, holder string) (*Lease, error) {
	if len(holder) == 0 || len(holder) > MaxLeadHolder || strings.ContainsFunc(holder, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return nil, fmt.Errorf("store: try lead: holder %q is not 1 to %d printable ASCII bytes", holder, MaxLeadHolder)
	}
	if s.d != postgresDialect {
		return &Lease{}, nil
	}
	conn, err := s.db.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: try lead: %w", err)
	}
	// The session is named only once it holds the lock (CASE evaluates in order), so that a
	// pooled connection that failed to take it keeps its own name.
	var named sql.NullString
	err = conn.QueryRowContext(ctx, "SELECT CASE WHEN pg_try_advisory_lock($1) THEN set_config('application_name', $2, false) END",
		leadLockKey, leadNamePrefix+holder).Scan(&named)
	traced(&s.tracer, s.d, err)
	if err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn }) // it may hold the lock unnamed
		conn.Close()
		return nil, fmt.Errorf("store: try lead: %w", err)
	}
	if !named.Valid {
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
	err := l.conn.QueryRowContext(ctx, `SELECT count(*) > 0 FROM pg_locks AS l WHERE l.pid = pg_backend_pid() AND `+leadLockHeld,
		leadLockKey).Scan(&held)
	if err != nil {
		return fmt.Errorf("store: confirm lead: %w", err)
	}
	if !held {
		return errors.New("store: confirm lead: the session no longer holds the lock")
	}
	return nil
}

// Release gives the lead up: it unlocks, and ends the lease's session rather than return it to
// the pool, so that nothing of the lead (the lock, the holder's name) outlives it.
func (l *Lease) Release(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	_, err := l.conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", leadLockKey)
	// driver.ErrBadConn from Raw closes the connection (and so ends the session) for good.
	l.conn.Raw(func(any) error { return driver.ErrBadConn })
	if err != nil {
		return fmt.Errorf("store: release lead: %w", err)
	}
	return nil
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
	// Leader: it holds the collector's lead, as the database knows it: on PostgreSQL, its
	// session holds the lead's advisory lock now (whatever its last heartbeat said, so that a
	// leader killed mid-term is no leader the moment the server frees its lock, and at most one
	// replica ever is); on SQLite, its heartbeat said so. LeaderSince is when it took the lead,
	// as its heartbeat wrote.
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

// replicasQuery lists the replicas heard from since $2 (PostgreSQL) or ? (SQLite). On PostgreSQL
// the leader is the replica whose name the session holding the lead's lock carries
// (pg_locks with pg_stat_activity, whose application_name every role may read).
const (
	replicasSQLite = `SELECT id, host, version, started_at, heartbeat_at, is_leader, leader_since FROM replicas
		WHERE heartbeat_at >= ? ORDER BY is_leader DESC, started_at, id`
	replicasPostgres = `SELECT r.id, r.host, r.version, r.started_at, r.heartbeat_at, h.name IS NOT NULL AS leader, r.leader_since
		FROM replicas AS r LEFT JOIN (
			SELECT a.application_name AS name FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
			WHERE ` + leadLockHeld + `
		) AS h ON h.name = '` + leadNamePrefix + `' || r.id
		WHERE r.heartbeat_at >= $2 ORDER BY leader DESC, r.started_at, r.id`
)

// Replicas returns the replicas heard from since a time, leader first, then by start.
func (s *Store) Replicas(ctx context.Context, since time.Time) ([]Replica, error) {
	var rows *sql.Rows
	var err error
	if s.d == postgresDialect {
		rows, err = s.db.db.QueryContext(ctx, replicasPostgres, leadLockKey, ms(since))
		traced(&s.tracer, s.d, err)
	} else {
		rows, err = s.db.QueryContext(ctx, replicasSQLite, ms(since))
	}
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
