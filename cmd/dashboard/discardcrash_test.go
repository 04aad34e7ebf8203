package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/store"
)

// TestKillDuringDiscard kills `dashboard serve` (SIGKILL) during a discard when its first
// DeleteMessageBatch arrives: before SQS took it (the calls are archived, journaled sent, and
// still in the DLQ) or after (archived, and gone from the DLQ: the answer was lost). A new
// process on the same database resumes the job from its journal. When it has ended, each
// selected call is in exactly one place, the DLQ or the archive, and archived at most once;
// every call the selection left is in the DLQ alone and visible; and the audit log holds the
// discard's intent and its outcome.
func TestKillDuringDiscard(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs the dashboard as a process")
	}
	tests := []struct {
		name    string
		fifo    bool
		reached bool
	}{
		{"standard, delete not reached", false, false},
		{"standard, delete answer lost", false, true},
		{"fifo, delete not reached", true, false},
		{"fifo, delete answer lost", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			w := actionstest.New(t)
			// The simulator's clock stands where the child's wall clock is and does not move,
			// so that what the killed process held stays held.
			w.Advance(time.Since(w.Now()))
			source, dlq := "calls", "calls-dlq"
			if tt.fifo {
				source, dlq = "calls.fifo", "calls-dlq.fifo"
			}
			w.CreateQueue(t, dlq, "", map[string]string{"MessageRetentionPeriod": "1209600"})
			w.CreateQueue(t, source, dlq, nil)
			calls := jobCalls()
			deadLetterCalls(t, w, source, calls)
			want := selected(calls, tt.fifo)

			front := newKillingFront(t, w.Sim, "AmazonSQS.DeleteMessageBatch", tt.reached)
			db := filepath.Join(t.TempDir(), "toolq.db")
			args := []string{"--endpoint-url", front.URL, "--region", actionstest.Region, "--db", db, "--peek", "none"}
			first := startDashboard(t, args...)
			front.serve(first)
			code, body := postJSON(t, first.base+"/api/v1/queues/"+dlq+"/discards", `{"selection":{"tools":["fetch_url"]}}`)
			if code != http.StatusAccepted {
				t.Fatalf("discard: %d %s; want 202", code, body)
			}
			var started struct {
				ID   int64  `json:"id"`
				Kind string `json:"kind"`
			}
			if err := json.Unmarshal([]byte(body), &started); err != nil || started.Kind != "discard" {
				t.Fatalf("discard answered %s (%v); want a redrive of kind discard", body, err)
			}
			select {
			case <-front.killed:
			case <-time.After(60 * time.Second):
				t.Fatal("no DeleteMessageBatch within 60 s")
			}

			// What the killed process left: the job RUNNING, the killed batch archived and
			// journaled sent.
			st, err := store.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			job, err := st.GetSelectionJob(ctx, started.ID)
			if err != nil || job.Status != store.MoveTaskRunning {
				t.Fatalf("after the kill: job %+v, %v; want it RUNNING", job, err)
			}
			dlqIDs := map[string]string{}
			for id, ms := range place(t, w, dlq) {
				for _, m := range ms {
					dlqIDs[m.MessageID] = id
				}
			}
			journal := journalByCall(t, st, started.ID, dlqIDs)
			st.Close()
			t.Logf("journal after the kill: %v", journal)
			sent := 0
			for _, state := range journal {
				if state == store.JournalSent {
					sent++
				}
			}
			if sent == 0 {
				t.Errorf("after the kill: no journal entry sent; want the killed batch's")
			}

			front.reopen()
			second := startDashboard(t, args...)
			front.serve(second)
			ended := waitJobEnded(t, second.base, dlq, started.ID)
			t.Logf("ended: %+v", ended)
			if ended.Status != string(store.MoveTaskCompleted) {
				t.Errorf("the resumed discard ended %s (%q); want COMPLETED", ended.Status, ended.FailureReason)
			}

			archived := archivedCalls(t, second.base, dlq, started.ID)
			inDLQ := place(t, w, dlq)
			var gone int64
			for _, c := range calls {
				a, d := archived[c.id], inDLQ[c.id]
				switch {
				case a > 1:
					t.Errorf("%s: archived %d times by one discard; want once", c.id, a)
				case !want[c.id] && (a != 0 || len(d) != 1):
					t.Errorf("%s (%s, not selected): archived %d times, %d in %s; want it in the DLQ alone", c.id, c.tool, a, len(d), dlq)
				case want[c.id] && a > 0 && len(d) > 0:
					t.Errorf("%s (%s, selected): archived and %d in %s (in flight: %v); want it in one of them", c.id, c.tool, len(d), dlq, d)
				case want[c.id] && a+len(d) == 0:
					t.Errorf("%s (%s, selected): lost, neither archived nor in %s", c.id, c.tool, dlq)
				case want[c.id] && len(d) > 1:
					t.Errorf("%s: %d copies in %s", c.id, len(d), dlq)
				}
				if want[c.id] && len(d) == 0 {
					gone++
				}
				// A call the dead process received and had not journaled yet is held until
				// its hold ends: nothing knows its receipt handle. Every other is visible.
				for _, m := range d {
					if _, journaled := journal[c.id]; m.InFlight && journaled {
						t.Errorf("%s (journaled %s by the killed process): still in flight in %s after the job ended; want it visible", c.id, journal[c.id], dlq)
					}
				}
			}
			// Moved counts what the discard took out of the DLQ; once it has ended, what it
			// matched is what it moved and what it could not.
			if ended.Moved != gone || ended.Selection.Matched != ended.Moved+ended.Selection.Failed {
				t.Errorf("the discard counts %d moved, %d matched, %d failed; want %d moved (the selected calls gone from %s), matched = moved + failed",
					ended.Moved, ended.Selection.Matched, ended.Selection.Failed, gone, dlq)
			}
			checkSelectionAudited(t, second.base, dlq, actions.ActionStartDiscard)
		})
	}
}

// archivedCalls reads the DLQ's archive through the API and counts, by tool call id, the
// messages the discard jobID archived.
func archivedCalls(t *testing.T, base, dlq string, jobID int64) map[string]int {
	t.Helper()
	var page struct {
		Messages []struct {
			ToolCallID   string `json:"toolCallId"`
			DiscardJobID int64  `json:"discardJobId"`
		} `json:"messages"`
		NextCursor string `json:"nextCursor"`
	}
	url := fmt.Sprintf("%s/api/v1/queues/%s/archive?limit=500", base, dlq)
	if code, body := getJSON(t, url, &page); code != http.StatusOK || page.NextCursor != "" {
		t.Fatalf("GET %s: %d (next cursor %q) %s; want one page", url, code, page.NextCursor, body)
	}
	out := map[string]int{}
	for _, m := range page.Messages {
		if m.DiscardJobID != jobID {
			t.Errorf("the archive holds %s from job %d; want job %d only", m.ToolCallID, m.DiscardJobID, jobID)
		}
		out[m.ToolCallID]++
	}
	return out
}
