package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestRedriveDestinations: the panel offers the DLQ's own sources (and queues its name carries),
// the rest only behind "Other queue…", whose type the action checks.
func TestRedriveDestinations(t *testing.T) {
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	var options []string
	doc.Find("#redrive-destination option").Each(func(_ int, s *goquery.Selection) { options = append(options, s.AttrOr("value", "")) })
	if want := []string{"", "web-search", "other…"}; !slices.Equal(options, want) {
		t.Errorf("destinations = %q, want %q: the source, then other queues behind Other queue…", options, want)
	}
	var others []string
	doc.Find("#redrive-others option").Each(func(_ int, s *goquery.Selection) { others = append(others, s.AttrOr("value", "")) })
	if !slices.Contains(others, "notifications") || slices.Contains(others, "tool-calls.fifo") || slices.Contains(others, "web-search") {
		t.Errorf("other queues = %q: want the standard queues that are not listed above", others)
	}

	cookie, token := pw.csrf(t)
	post := func(other string, status int) *goquery.Document {
		doc, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive", header: cookie,
			form: url.Values{"_csrf": {token}, "destination": {"other…"}, "destination_other": {other}}}, status)
		return doc
	}
	confirm := post("notifications", http.StatusOK).Find(".confirm").Text()
	if !strings.Contains(confirm, "notifications") {
		t.Errorf("the confirmation of a redrive to another queue does not name it: %q", confirm)
	}
	if doc := post("", http.StatusUnprocessableEntity); doc.Find("#redrive-panel .error").Length() == 0 {
		t.Error("Other queue… with no queue named: no error in the panel")
	}
}
