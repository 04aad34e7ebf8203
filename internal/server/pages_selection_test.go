package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSelectiveRedriveByClicks: the messages page offers the selection form on a dead-letter
// queue; its filters, reviewed, give a confirmation that names the selection and counts it in
// the sample by tool and destination; the confirmation starts a selective redrive (303 to the
// queue page), which the redrive panel's history shows as such. Hostile names stay text.
func TestSelectiveRedriveByClicks(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)

	page, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages?mcpServer=docs-legacy", header: cookie}, http.StatusOK)
	assertSafe(t, page)
	form := page.Find("form#selection-form")
	if form.Length() != 1 || form.Find(`input[name="sel_dim"][value="mcpServer=docs-legacy"]`).Length() != 1 {
		t.Fatalf("no selection form carrying the page's filter: %d", form.Length())
	}
	if n := page.Find(`table.messages input[type="checkbox"][name="sel_message_id"][form="selection-form"]`).Length(); n != 2 {
		t.Errorf("%d message checkboxes; want one per message shown (2)", n)
	}

	review, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive/selection", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"filters"}, "sel_dim": {"mcpServer=docs-legacy"}}}, http.StatusOK)
	assertSafe(t, review)
	text := strings.Join(strings.Fields(review.Find(".selection-confirm").Text()), " ")
	if !strings.Contains(text, "mcpServer docs-legacy") || !strings.Contains(text, "holds 2 of 3 messages") || !strings.Contains(text, "cannot be undone") {
		t.Errorf("the confirmation says %q", text)
	}
	key, _ := review.Find(`.selection-confirm input[name="idempotency_key"]`).Attr("value")
	confirm := url.Values{"_csrf": {token}, "confirm": {"1"}, "idempotency_key": {key}}
	confirm.Set("sel_dim", "mcpServer=docs-legacy")
	_, rec := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive/selection", header: cookie, form: confirm}, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); !strings.Contains(loc, "done=selection-started") {
		t.Fatalf("Location %q; want the queue page saying the selective redrive started", loc)
	}
	panel, _ := pw.page(t, request{path: "/queues/web-search-dlq/redrive", htmx: true}, http.StatusOK)
	if row := strings.Join(strings.Fields(panel.Find("table.history tbody tr").First().Text()), " "); !strings.Contains(row, "RUNNING selective mcpServer docs-legacy") {
		t.Errorf("the history's row: %q", row)
	}

	// Nothing selected: the action refuses, on the page, with its status.
	refused, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/redrive/selection", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"checked"}}}, http.StatusUnprocessableEntity)
	if refused.Find(".selection-confirm .error").Length() != 1 {
		t.Error("a refused review shows no error")
	}
}

// TestDiscardByClicks: "Discard this call" on a message's page reviews a discard that says the
// call goes to the archive and to no consumer; its confirmation starts a discard.
func TestDiscardByClicks(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	cookie, token := pw.csrf(t)
	msg, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages/m-plain", header: cookie}, http.StatusOK)
	if msg.Find(`form.selection-bar button[formaction="/queues/web-search-dlq/discard/selection"]`).Length() != 1 {
		t.Fatal("no Discard this call on the message's page")
	}
	review, _ := pw.page(t, request{method: http.MethodPost, path: "/queues/web-search-dlq/discard/selection", header: cookie,
		form: url.Values{"_csrf": {token}, "scope": {"checked"}, "sel_message_id": {"m-plain"}}}, http.StatusOK)
	text := strings.Join(strings.Fields(review.Find(".selection-confirm").Text()), " ")
	if !strings.Contains(text, "Confirm the discard") || !strings.Contains(text, "toolq's archive, not to any consumer") || !strings.Contains(text, "m-plain") {
		t.Errorf("the discard's confirmation says %q", text)
	}
	action, _ := review.Find(".selection-confirm form").Attr("action")
	key, _ := review.Find(`.selection-confirm input[name="idempotency_key"]`).Attr("value")
	_, rec := pw.page(t, request{method: http.MethodPost, path: action, header: cookie,
		form: url.Values{"_csrf": {token}, "confirm": {"1"}, "idempotency_key": {key}, "sel_message_id": {"m-plain"}}}, http.StatusSeeOther)
	if loc := rec.Header().Get("Location"); !strings.Contains(loc, "done=discard-started") {
		t.Fatalf("Location %q; want the queue page saying the discard started", loc)
	}
	panel, _ := pw.page(t, request{path: "/queues/web-search-dlq/redrive", htmx: true}, http.StatusOK)
	if row := strings.Join(strings.Fields(panel.Find("table.history tbody tr").First().Text()), " "); !strings.Contains(row, "RUNNING") || !strings.Contains(row, "message ids m-plain") {
		t.Errorf("the history's row: %q", row)
	}
}
