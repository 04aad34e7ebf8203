package templates

import (
	"context"
	"strings"
	"testing"

	"github.com/toolq/toolq/internal/views"
)

// TestAdviceSectionCitesAWS: each piece of advice on a queue's page names its pattern and links
// the page of AWS's documentation it follows, never the project's own notes.
func TestAdviceSectionCitesAWS(t *testing.T) {
	t.Parallel()
	rule, ok := views.AdviceRuleByID("no-dlq")
	if !ok {
		t.Fatal("no rule no-dlq")
	}
	q := views.QueueDetail{}
	q.Name = "notifications"
	q.Advice = []views.Advice{{Rule: rule.ID, Severity: rule.Severity, Queue: "notifications", Finding: "no dead-letter queue",
		Why: rule.Why, Fix: "aws sqs create-queue --queue-name notifications-dlq", Source: rule.Source, SourceURL: rule.SourceURL}}
	var b strings.Builder
	if err := AdviceSection(q, false).Render(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{rule.Source + ": ", `href="` + rule.SourceURL + `"`, `rel="noopener noreferrer external"`, ">AWS documentation</a>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the advice lacks %q:\n%s", want, page)
		}
	}
	if strings.Contains(strings.ToLower(page), "seed") {
		t.Errorf("the advice speaks of the seeds:\n%s", page)
	}
}
