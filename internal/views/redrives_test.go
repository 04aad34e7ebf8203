package views

import (
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

func TestRedriveOf(t *testing.T) {
	t.Parallel()
	f64 := func(v float64) *float64 { return &v }
	tests := []struct {
		name        string
		task        store.MoveTask
		percent     float64
		rate        float64
		secondsLeft *float64
	}{
		{"running", store.MoveTask{Status: store.MoveTaskRunning, Moved: 50, ToMove: 150, StartedAt: now.Add(-10 * time.Second), UpdatedAt: now.Add(-8 * time.Second)},
			33.3, 5, f64(20)},
		{"running, nothing moved yet", store.MoveTask{Status: store.MoveTaskRunning, ToMove: 150, StartedAt: now.Add(-time.Second)},
			0, 0, nil},
		{"completed: the rate runs to the last update", store.MoveTask{Status: store.MoveTaskCompleted, Moved: 100, ToMove: 100, StartedAt: now.Add(-time.Hour), UpdatedAt: now.Add(-time.Hour + 20*time.Second)},
			100, 5, nil},
		{"completed with nothing to move", store.MoveTask{Status: store.MoveTaskCompleted, StartedAt: now.Add(-time.Minute), UpdatedAt: now.Add(-time.Minute)},
			100, 0, nil},
		{"moved more than estimated", store.MoveTask{Status: store.MoveTaskRunning, Moved: 120, ToMove: 100, StartedAt: now.Add(-60 * time.Second)},
			100, 2, nil},
		{"cancelled", store.MoveTask{Status: store.MoveTaskCancelled, Moved: 10, ToMove: 40, StartedAt: now.Add(-20 * time.Second), UpdatedAt: now.Add(-10 * time.Second)},
			25, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := redriveOf(tt.task, now)
			if r.Percent != tt.percent || r.RatePerSecond != tt.rate {
				t.Errorf("percent %v rate %v; want %v and %v", r.Percent, r.RatePerSecond, tt.percent, tt.rate)
			}
			if (r.SecondsLeft == nil) != (tt.secondsLeft == nil) || (r.SecondsLeft != nil && *r.SecondsLeft != *tt.secondsLeft) {
				t.Errorf("secondsLeft = %v; want %v", deref(r.SecondsLeft), deref(tt.secondsLeft))
			}
			if r.Running != tt.task.Running() {
				t.Errorf("running = %v", r.Running)
			}
		})
	}
}

func TestRedrives(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dlq := f.queue("web-search-dlq")
	f.queue("web-search")
	for i, status := range []store.MoveTaskStatus{store.MoveTaskCompleted, store.MoveTaskFailed, store.MoveTaskRunning} {
		_, err := f.store.UpsertMoveTask(f.ctx, store.MoveTask{QueueID: dlq, Status: status, SourceARN: account + "web-search-dlq",
			MaxPerSecond: 10 * i, Moved: 5, ToMove: 10, FailureReason: map[bool]string{true: "AccessDenied"}[status == store.MoveTaskFailed],
			StartedAt: now.Add(time.Duration(i-3) * time.Hour), UpdatedAt: now.Add(time.Duration(i-3)*time.Hour + time.Minute)})
		f.must(err)
	}
	rs, err := f.svc.Redrives(f.ctx, f.idOf("web-search-dlq"))
	if err != nil || len(rs) != 3 {
		t.Fatalf("Redrives = %d, %v; want 3", len(rs), err)
	}
	if rs[0].Status != string(store.MoveTaskRunning) || !rs[0].Running || rs[0].MaxMessagesPerSecond == nil || *rs[0].MaxMessagesPerSecond != 20 {
		t.Errorf("newest = %+v", rs[0])
	}
	if rs[1].FailureReason != "AccessDenied" || rs[2].MaxMessagesPerSecond != nil {
		t.Errorf("older = %+v / %+v", rs[1], rs[2])
	}
	none, err := f.svc.Redrives(f.ctx, f.idOf("web-search"))
	if err != nil || none == nil || len(none) != 0 {
		t.Errorf("redrives of a source = %v, %v; want []", none, err)
	}
}

// TestEveryMoveTaskFailureSaysWhatToDo: each reason SQS is known to give a failed move task,
// and any other, comes with a sentence saying what to do; the reason the simulator gives a
// redrive of messages sent straight to the DLQ names the fix (choose the source queue).
func TestEveryMoveTaskFailureSaysWhatToDo(t *testing.T) {
	t.Parallel()
	reasons := []string{
		"CouldNotDetermineMessageSource", "AWS.SimpleQueueService.NonExistentQueue",
		"The source and destination queues must be of the same type.", "KMS.AccessDeniedException",
		"KMS.DisabledException", "AccessDenied", "The task exceeded the maximum duration of 36 hours.",
		"RequestThrottled", "MessageTooLarge", "InternalError", "ServiceUnavailable", "", "SomethingNewFromAWS",
	}
	seen := map[string]bool{}
	for _, r := range reasons {
		advice := MoveTaskFailureAdvice(r)
		if advice == "" || !strings.HasSuffix(advice, ".") {
			t.Errorf("%q: advice %q, want a sentence", r, advice)
		}
		seen[advice] = true
	}
	if len(seen) < 9 {
		t.Errorf("%d different sentences for %d reasons: the known reasons should each say their own fix", len(seen), len(reasons))
	}
	if a := MoveTaskFailureAdvice("CouldNotDetermineMessageSource"); !strings.Contains(a, "source queue chosen as its destination") {
		t.Errorf("CouldNotDetermineMessageSource: %q, want it to say to choose the source queue", a)
	}
	failed := redriveOf(store.MoveTask{Status: store.MoveTaskFailed, FailureReason: "CouldNotDetermineMessageSource"}, time.Now())
	done := redriveOf(store.MoveTask{Status: store.MoveTaskCompleted}, time.Now())
	if failed.FailureAdvice == "" || done.FailureAdvice != "" {
		t.Errorf("advice of a failed task %q, of a completed one %q: want it on the failed one alone", failed.FailureAdvice, done.FailureAdvice)
	}
}
