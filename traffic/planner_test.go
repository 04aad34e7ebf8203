package traffic

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// planFor returns the steps the planner takes for seed until virtual time until.
func planFor(seed int64, until time.Duration) (steps []step, at []time.Duration) {
	p := newPlanner(seed, planConfig{})
	var now time.Duration
	for now < until {
		st := p.next()
		now += st.Wait
		steps = append(steps, st)
		at = append(at, now)
	}
	return steps, at
}

func TestPlannerIsDeterministic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		a, b      int64
		wantEqual bool
	}{
		{name: "same seed", a: 42, b: 42, wantEqual: true},
		{name: "same seed zero", a: 0, b: 0, wantEqual: true},
		{name: "other seed", a: 42, b: 43, wantEqual: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, _ := planFor(tt.a, 10*time.Minute)
			b, _ := planFor(tt.b, 10*time.Minute)
			if got := reflect.DeepEqual(a, b); got != tt.wantEqual {
				t.Errorf("plans equal = %v, want %v (%d and %d steps)", got, tt.wantEqual, len(a), len(b))
			}
		})
	}
}

func TestSimulateAttemptIsDeterministic(t *testing.T) {
	t.Parallel()
	steps, _ := planFor(7, 5*time.Minute)
	for _, st := range steps {
		for _, s := range st.Sends {
			for rc := 1; rc <= 3; rc++ {
				a := simulateAttempt(7, s.MCPServer, s.Call, rc)
				b := simulateAttempt(7, s.MCPServer, s.Call, rc)
				if a.Duration != b.Duration || (a.Err == nil) != (b.Err == nil) {
					t.Fatalf("attempt %d of %s: %+v then %+v", rc, s.Call.ToolCallID, a, b)
				}
			}
		}
	}
}

// TestOpeningShowsEverySituation checks the promise to newcomers: within the first minute
// the traffic has put a poison pill on every source queue with a DLQ, blocked a FIFO session,
// and sent hostile text, a hostile session id and a long body.
func TestOpeningShowsEverySituation(t *testing.T) {
	t.Parallel()
	steps, at := planFor(1, time.Minute)
	poisoned := map[string]bool{}
	blocked := map[string]int{}
	var hostile, hostileSession, long bool
	for i, st := range steps {
		for _, s := range st.Sends {
			if s.Poison && at[i] < 5*time.Second {
				poisoned[s.Queue] = true
			}
			if s.MCPServer == serverDocsLegacy && s.Queue == QueueToolCalls {
				blocked[s.Call.SessionID]++
			}
			body, err := json.Marshal(s.Call)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hostileText {
				enc, _ := json.Marshal(h)
				if strings.Contains(string(body), strings.Trim(string(enc), `"`)) {
					hostile = true
				}
			}
			if strings.ContainsAny(s.Call.SessionID, `<>"`) {
				hostileSession = true
			}
			if len(body) > 32<<10 {
				long = true
			}
		}
	}
	for _, q := range []string{QueueToolCalls, QueueWebSearch, QueueExports, QueueNotifications} {
		if !poisoned[q] {
			t.Errorf("no poison pill on %s in the first seconds", q)
		}
	}
	if len(blocked) != 1 {
		t.Errorf("blocked sessions in the first minute = %v, want one", blocked)
	}
	for id, n := range blocked {
		if n < 4 {
			t.Errorf("blocked session %s sent %d calls in the first minute, want a pile of at least 4", id, n)
		}
	}
	if !hostile || !hostileSession || !long {
		t.Errorf("hostile text %v, hostile session id %v, long body %v: want all", hostile, hostileSession, long)
	}
}

func TestPlannedCallsAreWellFormed(t *testing.T) {
	t.Parallel()
	steps, _ := planFor(3, 30*time.Minute)
	lastSeq := map[string]int{}
	seenTool := map[string]bool{}
	for _, st := range steps {
		for _, s := range st.Sends {
			s.Call.SentAt = 1764460000000
			body, err := json.Marshal(s.Call)
			if err != nil {
				t.Fatal(err)
			}
			if len(body) >= 256<<10 {
				t.Errorf("%s: body of %d bytes exceeds 256 KiB", s.Call.ToolCallID, len(body))
			}
			var fields map[string]json.RawMessage
			if err := json.Unmarshal(body, &fields); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"toolCallId", "toolName", "toolArgs", "sessionId", "sequenceNumber", "sentAt"} {
				if _, ok := fields[k]; !ok {
					t.Errorf("%s: body lacks %s: %s", s.Call.ToolCallID, k, body)
				}
			}
			if !strings.HasPrefix(s.Call.ToolCallID, "tc_") || !strings.HasPrefix(s.Call.SessionID, "sess_") {
				t.Errorf("ids %q %q lack their prefixes", s.Call.ToolCallID, s.Call.SessionID)
			}
			if _, ok := profiles[s.Call.ToolName]; !ok {
				t.Errorf("tool %q has no profile", s.Call.ToolName)
			}
			seenTool[s.Call.ToolName] = true
			if s.MCPServer == "" || !strings.HasPrefix(s.Traceparent, "00-") {
				t.Errorf("%s: attributes mcpServer %q traceparent %q", s.Call.ToolCallID, s.MCPServer, s.Traceparent)
			}
			if want := lastSeq[s.Call.SessionID] + 1; s.Call.SequenceNumber != want {
				t.Errorf("session %s: sequence %d, want %d", s.Call.SessionID, s.Call.SequenceNumber, want)
			}
			lastSeq[s.Call.SessionID] = s.Call.SequenceNumber
			if s.Queue == QueueToolCalls && !validGroupID(s.Call.SessionID) {
				t.Errorf("session id %q is not a valid MessageGroupId", s.Call.SessionID)
			}
		}
	}
	for name := range profiles {
		if !seenTool[name] {
			t.Errorf("tool %s never planned in 30 minutes", name)
		}
	}
}

// validGroupID applies SQS's rule: 1 to 128 alphanumerics or punctuation.
func validGroupID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for _, c := range s {
		if c < '!' || c > '~' {
			return false
		}
	}
	return true
}

func TestAttemptsMatchPoison(t *testing.T) {
	t.Parallel()
	steps, _ := planFor(5, 20*time.Minute)
	var poison, healthy, slow int
	for _, st := range steps {
		for _, s := range st.Sends {
			succeeded := false
			for rc := 1; rc <= 5; rc++ {
				a := simulateAttempt(5, s.MCPServer, s.Call, rc)
				if a.Permanent != s.Poison {
					t.Fatalf("%s (%s, poison %v) attempt %d: permanent %v, err %v", s.Call.ToolCallID, s.Call.ToolName, s.Poison, rc, a.Permanent, a.Err)
				}
				if a.Duration <= 0 || a.Duration > slowestAttempt {
					t.Fatalf("%s attempt %d lasts %v", s.Call.ToolCallID, rc, a.Duration)
				}
				if a.Duration > 6*time.Second {
					slow++
				}
				succeeded = succeeded || a.Err == nil
			}
			if s.Poison {
				poison++
				continue
			}
			healthy++
			if !succeeded {
				t.Errorf("%s (%s) failed five attempts without being poison", s.Call.ToolCallID, s.Call.ToolName)
			}
		}
	}
	if poison == 0 || healthy == 0 || slow == 0 {
		t.Errorf("poison %d, healthy %d, slow attempts %d: want some of each", poison, healthy, slow)
	}
}

// TestPlannerRate keeps the demo light: about the configured rate over an hour, bursts and
// the blocked session included.
func TestPlannerRate(t *testing.T) {
	t.Parallel()
	steps, _ := planFor(11, time.Hour)
	n := 0
	for _, st := range steps {
		n += len(st.Sends)
	}
	perSecond := float64(n) / time.Hour.Seconds()
	if perSecond < 1 || perSecond > 3 {
		t.Errorf("%.2f calls per second over an hour, want about 1.5 plus bursts", perSecond)
	}
}

// BenchmarkPlannerStep measures one decision with its JSON encoding: the producer's CPU
// cost per step, which must stay negligible for a demo that runs for hours.
func BenchmarkPlannerStep(b *testing.B) {
	p := newPlanner(1, planConfig{})
	for b.Loop() {
		for _, s := range p.next().Sends {
			if _, err := json.Marshal(s.Call); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSimulateAttempt measures a worker's decision for one delivery.
func BenchmarkSimulateAttempt(b *testing.B) {
	call := newPlanner(1, planConfig{}).next().Sends[0].Call
	for b.Loop() {
		simulateAttempt(1, serverResearch, call, 1)
	}
}
