package notify

import (
	"testing"

	"github.com/toolq/toolq/internal/views"
)

// TestNews: what a group's messages of the last interval told decides whether waiting alerts go
// out at once.
func TestNews(t *testing.T) {
	t.Parallel()
	alert := func(kind views.AlertKind, sev views.AlertSeverity) views.Alert {
		return views.Alert{Kind: kind, Severity: sev}
	}
	health := func(sev views.AlertSeverity, configuration, resolved bool) views.Alert {
		a := alert(views.AlertHealthChanged, sev)
		a.Resolved, a.Health = resolved, &views.AlertHealth{Configuration: configuration}
		return a
	}
	arrival := alert(views.AlertDLQArrival, views.SeverityWarning)
	critical := alert(views.AlertDLQArrival, views.SeverityCritical)
	advice := health(views.SeverityWarning, true, false)
	warning := health(views.SeverityWarning, false, false)
	tests := []struct {
		name          string
		waiting, told []views.Alert
		want          bool
	}{
		{"nothing told", []views.Alert{arrival}, nil, true},
		{"the same again", []views.Alert{arrival}, []views.Alert{arrival}, false},
		{"more severe", []views.Alert{critical}, []views.Alert{arrival, warning}, true},
		{"less severe than told", []views.Alert{arrival}, []views.Alert{critical}, false},
		{"a kind not told", []views.Alert{arrival}, []views.Alert{warning}, true},
		{"a redrive's end after its start", []views.Alert{alert(views.AlertRedriveCompleted, views.SeverityInfo)},
			[]views.Alert{alert(views.AlertRedriveStarted, views.SeverityInfo)}, true},
		{"a health change after advice", []views.Alert{warning}, []views.Alert{advice}, true},
		{"advice after a health change", []views.Alert{advice}, []views.Alert{warning}, true},
		{"advice again", []views.Alert{health(views.SeverityWarning, true, true)}, []views.Alert{advice}, false},
		{"a flapping health", []views.Alert{health(views.SeverityWarning, false, true), warning}, []views.Alert{warning}, false},
		{"news among repeats", []views.Alert{arrival, alert(views.AlertSessionBlocked, views.SeverityWarning)}, []views.Alert{arrival}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := news(tt.waiting, tt.told); got != tt.want {
				t.Errorf("news = %v; want %v", got, tt.want)
			}
		})
	}
}
