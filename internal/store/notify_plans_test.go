package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// notifyReads are the notifier's reads, with arguments for the fixture of
// TestNotifierReadsSeekOnPostgres (targets oncall and bot, groups queue:0 to queue:999): each
// must find its rows by an index, so that what the notifier costs follows what waits and what
// was sent lately, not the outbox's and the deliveries' history. NotifyTargetStats's sums are
// left out: they count every message kept (a week), once a status page or a metrics scrape,
// and an index would not change that.
func notifyReads(now time.Time) map[string]notifyRead {
	return map[string]notifyRead{
		"ToldAfter":                       {toldAfterQuery, []any{"oncall", "queue:7", ms(now.Add(-5 * time.Minute))}, "notify_outbox_message"},
		"MessageAlertIDs":                 {messageAlertIDsQuery, []any{1234}, "notify_outbox_message"},
		"WaitingOutbox":                   {waitingOutboxQuery, nil, "notify_outbox_message"},
		"DueMessages":                     {dueMessagesQuery, []any{MessagePending, ms(now), 50}, "notify_messages_due"},
		"NotifyTargetStats' last failure": {lastFailureQuery, []any{"oncall"}, "notify_deliveries_failures"},
	}
}

// notifyRead is one read of the notifier's and the index that must serve it.
type notifyRead struct {
	query string
	args  []any
	index string
}

// TestNotifierReadsSeek checks SQLite's plans of the notifier's reads: each uses its index, and
// none scans a table of the notifier's nor builds an automatic index (a scan too, on every
// call).
func TestNotifierReadsSeek(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for name, tt := range notifyReads(t0) {
		t.Run(name, func(t *testing.T) {
			rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN") || strings.Contains(step, "AUTOMATIC") {
					t.Errorf("plan reads a table whole: %q\n%s", step, strings.Join(plan, "\n"))
				}
			}
			if text := strings.Join(plan, "\n"); !strings.Contains(text, " "+tt.index+" ") {
				t.Errorf("plan does not use %s:\n%s", tt.index, text)
			}
		})
	}
}

// TestNotifierReadsSeekOnPostgres is TestNotifierReadsSeek on PostgreSQL, over a day's worth of
// messages, outbox rows and deliveries and fresh statistics, for its planner to choose as it
// would after a day at 1,000 queues: no read is a sequential scan of the outbox, the messages or
// the deliveries, and each uses its index.
func TestNotifierReadsSeekOnPostgres(t *testing.T) {
	t.Parallel()
	s := openPostgresTest(t)
	ctx := context.Background()
	now := t0.Add(48000 * time.Second)
	for _, stmt := range []string{
		// Message g went to target oncall or bot about queue:(g/2 mod 1000), at t0 + g s, and took
		// alert g; a few are pending, and 2,000 alerts wait.
		`INSERT INTO notify_messages (id, target, group_key, created_at, alerts, title, payload, status, attempts, next_attempt_at, sent_at)
			SELECT g, CASE WHEN g % 2 = 0 THEN 'oncall' ELSE 'bot' END, 'queue:' || (g / 2 % 1000), ?1::bigint + g * 1000, 1, 'title',
				repeat('x', 600), CASE WHEN g % 5000 = 0 THEN 'pending' ELSE 'sent' END, 1, ?1::bigint + g * 1000, ?1::bigint + g * 1000
			FROM generate_series(1, 48000) g`,
		`INSERT INTO notify_outbox (alert_id, target, group_key, created_at, message_id)
			SELECT id, target, group_key, created_at, id FROM notify_messages`,
		`INSERT INTO notify_outbox (alert_id, target, group_key, created_at, message_id)
			SELECT 100000 + g, CASE WHEN g % 2 = 0 THEN 'oncall' ELSE 'bot' END, 'queue:' || (g / 2 % 1000), ?1::bigint, 0
			FROM generate_series(1, 2000) g`,
		`INSERT INTO notify_deliveries (message_id, target, at, attempt, outcome, http_status)
			SELECT id, target, created_at, 1, CASE WHEN id % 1000 = 0 THEN 'retry' ELSE 'sent' END, 200 FROM notify_messages`,
		"ANALYZE",
	} {
		var args []any
		if strings.Contains(stmt, "?1") {
			args = []any{ms(t0)}
		}
		if _, err := s.db.ExecContext(ctx, stmt, args...); err != nil {
			t.Fatalf("%v\n%s", err, stmt)
		}
	}
	for name, tt := range notifyReads(now) {
		t.Run(name, func(t *testing.T) {
			rows, err := s.db.QueryContext(ctx, "EXPLAIN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			text := strings.Join(plan, "\n")
			for _, table := range []string{"notify_outbox", "notify_messages", "notify_deliveries"} {
				if strings.Contains(text, "Seq Scan on "+table) {
					t.Errorf("plan reads %s whole:\n%s", table, text)
				}
			}
			if !strings.Contains(text, " "+tt.index+" ") {
				t.Errorf("plan does not use %s:\n%s", tt.index, text)
			}
		})
	}
}
