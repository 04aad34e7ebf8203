package templates

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/views"
)

// TestGroupsSectionWordsADeadLetterQueue: a FIFO dead-letter queue's groups say what they are
// there (failed in their source, waiting for a redrive), never that they retry or block, which
// only a source's groups do; a source's legend keeps the blocked threshold.
func TestGroupsSectionWordsADeadLetterQueue(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	group := func(id string, receives int, state views.GroupState) views.Group {
		return views.Group{GroupID: id, Messages: 2, HeadMessageID: "m-" + id, HeadReceiveCount: receives, State: state,
			HeadReceives: views.Receives{Consumers: receives}}
	}
	tests := []struct {
		name        string
		groups      views.Groups
		want, never []string
	}{
		{"a dead-letter queue", views.Groups{Queue: "calls-dlq.fifo", DeadLetterQueue: true, SampledAt: &at, Seen: 4, ApproxVisible: 4, Coverage: 1,
			Groups: []views.Group{group("sess_1", 5, views.GroupDeadLettered), group("sess_2", 0, views.GroupDeadLettered)}},
			[]string{"dead-lettered", "head failed 5 times before it moved here; waits for a redrive", "nothing retries them in a dead-letter queue",
				"keep their order until a redrive"},
			[]string{"retrying", "next try", "visibility timeout", "blocked", "Order holds within a group"}},
		{"a source", views.Groups{Queue: "calls.fifo", SampledAt: &at, Seen: 4, ApproxVisible: 4, Coverage: 1,
			Groups: []views.Group{group("sess_1", 5, views.GroupBlocked), group("sess_2", 1, views.GroupRetrying)}},
			[]string{"blocked", "retrying", "head failed 1 time; next try after its visibility timeout", "failed 2 times or more"},
			[]string{"dead-lettered", "redrive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := GroupsSection(tt.groups.Queue, tt.groups, Nav{}, at, false).Render(context.Background(), &b); err != nil {
				t.Fatal(err)
			}
			for _, s := range tt.want {
				if !strings.Contains(b.String(), s) {
					t.Errorf("the section lacks %q:\n%s", s, b.String())
				}
			}
			for _, s := range tt.never {
				if strings.Contains(b.String(), s) {
					t.Errorf("the section says %q", s)
				}
			}
		})
	}
}
