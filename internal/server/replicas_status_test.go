package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/replicas"
	"github.com/toolq/toolq/internal/store"
)

// replicaEnv makes TestMain run a replica instead of the tests: "<database URL> <id> <unix ms>",
// the replica's clock frozen at that time, until it is killed or its standard input ends.
const replicaEnv = "TOOLQ_TEST_REPLICA"

// runReplica is the replica of replicaEnv: it takes part (and leads when it can, its collector
// doing nothing) until its input ends, for a test to kill it as kill -9 does.
func runReplica(spec string) error {
	fields := strings.Fields(spec)
	if len(fields) != 3 {
		return fmt.Errorf("%s=%q: want a database URL, an id and a time", replicaEnv, spec)
	}
	at, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return fmt.Errorf("%s: time %q: %w", replicaEnv, fields[2], err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := store.Open(ctx, fields[0])
	if err != nil {
		return err
	}
	defer st.Close()
	go func() { io.Copy(io.Discard, os.Stdin); cancel() }()
	frozen := time.UnixMilli(at)
	// A check is also how long the leader waits for its lock's confirmation: a long one keeps a
	// busy machine from making it step down before it is killed.
	r := replicas.New(replicas.Options{Store: st, Local: events.NewBus(), ID: fields[1], Check: time.Second,
		Now: func() time.Time { return frozen }})
	r.Run(ctx, func(ctx context.Context) { <-ctx.Done() })
	return nil
}

// startReplicaProcess runs a replica called id on the database in a process of its own (this
// test binary again), its heartbeats stamped at the time at; the process is killed at the end.
func startReplicaProcess(t *testing.T, url, id string, at time.Time) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %d", replicaEnv, url, id, at.UnixMilli()))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd
}

// replicaRow is one replica of GET /api/v1/status.
type replicaRow struct {
	ID          string    `json:"id"`
	Alive       bool      `json:"alive"`
	Leader      bool      `json:"leader"`
	HeartbeatAt time.Time `json:"heartbeatAt"`
}

// replicasOf reads the replicas GET /api/v1/status lists, by id, and its leaders' ids.
func (h *apiHarness) replicasOf(t *testing.T) (map[string]replicaRow, []string) {
	t.Helper()
	rec := h.do(t, apiRequest{target: "/api/v1/status", header: bearer(h.viewer)})
	var st struct {
		Replicas []replicaRow `json:"replicas"`
	}
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &st) != nil {
		t.Fatalf("GET /api/v1/status: %d %.300s", rec.Code, rec.Body)
	}
	rows := map[string]replicaRow{}
	var leaders []string
	for _, r := range st.Replicas {
		rows[r.ID] = r
		if r.Leader {
			leaders = append(leaders, r.ID)
		}
	}
	return rows, leaders
}

// waitFor polls cond until it holds, or fails after a deadline far above what it needs: the
// replicas act every second of real time at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// TestStatusAfterTheLeaderIsKilled: of two replicas on PostgreSQL, the leader is killed (SIGKILL:
// no hand-over, no last heartbeat); /api/v1/status on the survivor, read each second of its
// clock, never shows two leaders, and within 10 s shows exactly one, the survivor, and the
// killed replica as gone. The clock is the test's: each second, the survivor's heartbeat for
// that second is awaited (it beats every 200 ms of real time, and tries to lead before each beat
// while it follows), then the status is read.
func TestStatusAfterTheLeaderIsKilled(t *testing.T) {
	t.Parallel()
	url := pgtest.DB(t)
	h := newAPIHarness(t, harnessConfig{db: url})
	killed := startReplicaProcess(t, url, "killed", h.w.Now())
	waitFor(t, "the database naming the first replica leader", func() bool {
		_, leaders := h.replicasOf(t)
		return len(leaders) == 1 && leaders[0] == "killed"
	})

	survivor := replicas.New(replicas.Options{Store: h.w.Store, Local: events.NewBus(), ID: "survivor",
		Check: 200 * time.Millisecond, Now: h.w.Now})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); survivor.Run(ctx, func(ctx context.Context) { <-ctx.Done() }) }()
	t.Cleanup(func() { stop(); <-done })
	heartbeat := func() bool {
		rows, _ := h.replicasOf(t)
		return !rows["survivor"].HeartbeatAt.Before(h.w.Now())
	}
	waitFor(t, "the survivor's first heartbeat", heartbeat)
	if rows, leaders := h.replicasOf(t); len(leaders) != 1 || leaders[0] != "killed" || !rows["survivor"].Alive {
		t.Fatalf("before the kill: %+v, leaders %v; want the first leading and the survivor alive", rows, leaders)
	}

	if err := killed.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	oneLeader := func(second int) (map[string]replicaRow, []string) {
		t.Helper()
		rows, leaders := h.replicasOf(t)
		if len(leaders) > 1 {
			t.Fatalf("second %d after the kill: leaders %v; never two", second, leaders)
		}
		return rows, leaders
	}
	for second := 1; second < 10; second++ {
		h.w.Advance(time.Second)
		waitFor(t, fmt.Sprintf("the survivor's heartbeat of second %d", second), heartbeat)
		oneLeader(second)
	}
	// At 10 s the killed replica's last heartbeat is 10 s old. The clock stays there while the
	// status is read again: a survivor that a slow confirmation of its lock made step down for a
	// moment takes the lead again within a check.
	h.w.Advance(time.Second)
	waitFor(t, "10 s after the kill, the survivor alone leading and the killed replica gone", func() bool {
		rows, leaders := oneLeader(10)
		return len(leaders) == 1 && leaders[0] == "survivor" && !rows["killed"].Alive && !rows["killed"].Leader
	})
}

// TestStatusReplicaRows: a replica is alive while its last heartbeat is younger than 10 s. On
// SQLite the leader is the row that says so while it is alive (a killed process's row leads no
// more); on PostgreSQL it is the replica whose session holds the lock, shown leading even when
// its heartbeats stopped (a hung process), and the status page says so.
func TestStatusReplicaRows(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			cfg := harnessConfig{}
			if engine == "postgres" {
				cfg.db = pgtest.DB(t)
			}
			h := newAPIHarness(t, cfg)
			ctx := context.Background()
			now := h.w.Now()
			for _, r := range []store.Replica{
				{ID: "fresh", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-9999 * time.Millisecond), Leader: engine == "sqlite", LeaderSince: now.Add(-time.Hour)},
				{ID: "stopped", StartedAt: now.Add(-time.Hour), HeartbeatAt: now.Add(-10 * time.Second), Leader: true, LeaderSince: now.Add(-2 * time.Hour)},
			} {
				if err := h.w.Store.SaveReplica(ctx, r); err != nil {
					t.Fatal(err)
				}
			}
			wantLeader, badge := "fresh", "leader"
			if engine == "postgres" {
				// The stopped replica's session still holds the lock: it leads, unheard of.
				lease, err := h.w.Store.TryLead(ctx, "stopped")
				if err != nil || lease == nil {
					t.Fatalf("TryLead = %v, %v", lease, err)
				}
				t.Cleanup(func() { lease.Release(context.Background()) })
				wantLeader, badge = "stopped", "leader, not heard from"
			}
			rows, leaders := h.replicasOf(t)
			if !rows["fresh"].Alive || rows["stopped"].Alive || len(leaders) != 1 || leaders[0] != wantLeader {
				t.Errorf("replicas %+v, leaders %v; want fresh alive, stopped gone, %s alone leading", rows, leaders, wantLeader)
			}
			rec := h.do(t, apiRequest{target: "/status", header: bearer(h.viewer)})
			doc, err := goquery.NewDocumentFromReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			doc.Find("table.replicas tbody tr").Each(func(_ int, s *goquery.Selection) {
				got[strings.TrimSpace(s.Find("th").Text())] = strings.TrimSpace(s.Find("td .badge").First().Text())
			})
			if got[wantLeader] != badge {
				t.Errorf("the status page's replicas %q; want %s as %q", got, wantLeader, badge)
			}
		})
	}
}
