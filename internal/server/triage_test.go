package server

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/views"
)

// TestMessagesAPIGroupsFiltersAndSearches asks the API what the messages page asks: grouped by a
// dimension, filtered by one (?mcpServer=), searched (?q=), with the sample's coverage.
func TestMessagesAPIGroupsFiltersAndSearches(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	tests := []struct {
		name     string
		query    string
		status   int
		code     string
		messages []string
		groups   []string
	}{
		{name: "group by server", query: "groupBy=mcpServer", status: 200, messages: []string{"m-1", "m-2"},
			groups: []string{"docs-legacy 1", "<img src=x onerror=alert(2)> 1"}},
		{name: "group by tool", query: "groupBy=toolName", status: 200, messages: []string{"m-1", "m-2"}, groups: []string{"create_document 1", " 1"}},
		{name: "filter by server", query: "mcpServer=docs-legacy", status: 200, messages: []string{"m-1"}},
		{name: "filter and search", query: "mcpServer=docs-legacy&q=SCRIPT", status: 200, messages: []string{"m-1"}},
		{name: "search the body", query: "q=not+json", status: 200, messages: []string{"m-2"}},
		{name: "search a dimension value", query: "q=refused", status: 200, messages: []string{"m-1"}},
		{name: "search a message id", query: "q=m-2", status: 200, messages: []string{"m-2"}},
		{name: "nothing found", query: "q=nowhere", status: 200, messages: []string{}},
		{name: "an unknown group", query: "groupBy=nope", status: 400, code: "unknown_dimension"},
		{name: "a search too long", query: "q=" + strings.Repeat("x", maxSearch+1), status: 400, code: "invalid_parameter"},
		{name: "a control character", query: "mcpServer=%00", status: 400, code: "invalid_parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := h.do(t, apiRequest{target: "/api/v1/queues/orders-dlq/messages?" + tt.query, header: bearer(h.viewer)})
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.code != "" {
				if !strings.Contains(rec.Body.String(), `"code":"`+tt.code+`"`) {
					t.Errorf("body %s; want code %s", rec.Body, tt.code)
				}
				return
			}
			var page views.MessagePage
			if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
				t.Fatal(err)
			}
			ids := []string{}
			for _, m := range page.Messages {
				ids = append(ids, m.MessageID)
			}
			if !slices.Equal(ids, tt.messages) || page.Matched != len(tt.messages) {
				t.Errorf("messages %v (matched %d); want %v", ids, page.Matched, tt.messages)
			}
			var groups []string
			for _, g := range page.Groups {
				groups = append(groups, g.Value+" "+itoa(int64(g.Count)))
			}
			slices.Sort(groups)
			want := slices.Sorted(slices.Values(tt.groups))
			if !slices.Equal(groups, want) {
				t.Errorf("groups %q; want %q", groups, want)
			}
			if page.Seen != 2 || page.ApproxVisible != 5 || !slices.Equal(page.Dimensions, harnessDimensions) {
				t.Errorf("coverage %d of %d, dimensions %v", page.Seen, page.ApproxVisible, page.Dimensions)
			}
		})
	}
	rec := h.do(t, apiRequest{target: "/api/v1/queues/orders-dlq/messages/m-1", header: bearer(h.viewer)})
	var m views.Message
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m.Dimensions["mcpServer"] != "docs-legacy" || m.Reason == nil || m.Reason.Code != "connection_refused" {
		t.Errorf("message m-1: dimensions %v, reason %+v, %v", m.Dimensions, m.Reason, err)
	}
}

// TestMessagesPageTriage is the DLQ's pages as an engineer uses them: the queue page names the
// failing MCP server, the messages page groups by it, filters by it, finds a message by a word of
// its body, shows the reason column, and says why there is no selective redrive.
func TestMessagesPageTriage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	queue, _ := pw.page(t, request{path: "/queues/web-search-dlq"}, http.StatusOK)
	assertSafe(t, queue)
	top := queue.Find(`#messages .dimension-top[data-dimension="mcpServer"] li a`)
	if top.First().Text() != "docs-legacy" {
		t.Errorf("the DLQ's top server is %q; want docs-legacy", top.First().Text())
	}
	if href, _ := top.First().Attr("href"); href != "/queues/web-search-dlq/messages?mcpServer=docs-legacy" {
		t.Errorf("its link is %q", href)
	}
	if queue.Find(`#messages form.search input[name="q"]`).Length() != 1 || queue.Find("#messages .selective-redrive-note a").Length() != 1 {
		t.Error("the DLQ's section has no search box, or does not say where to redrive chosen calls")
	}

	grouped, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages?groupBy=mcpServer"}, http.StatusOK)
	assertSafe(t, grouped)
	var rows []string
	grouped.Find("table.groups-by tbody tr").Each(func(_ int, s *goquery.Selection) {
		rows = append(rows, strings.Join(strings.Fields(s.Find("th").Text()+" "+s.Find("td.num").Text()), " "))
	})
	if len(rows) != 2 || rows[0] != "docs-legacy 2" {
		t.Errorf("grouped by mcpServer: %q; want docs-legacy 2 first", rows)
	}
	if href, _ := grouped.Find("table.groups-by tbody tr th a").First().Attr("href"); href != "/queues/web-search-dlq/messages?mcpServer=docs-legacy" {
		t.Errorf("the group's link filters with %q", href)
	}
	if grouped.Find(`select[name="groupBy"] option[selected]`).AttrOr("value", "") != "mcpServer" {
		t.Error("the group-by select does not show the grouping")
	}

	filtered, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages?mcpServer=docs-legacy&groupBy=error"}, http.StatusOK)
	ids := filtered.Find("table.messages tbody th a code").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	if !slices.Equal(ids, []string{"m-formula", "m-plain"}) {
		t.Errorf("filtered by docs-legacy: %v", ids)
	}
	if reason := filtered.Find("table.messages tbody tr").First().Find("td.reason").Text(); strings.TrimSpace(reason) != "connection_refused" {
		t.Errorf("reason column = %q", reason)
	}
	if hits := strings.Join(strings.Fields(filtered.Find(".hits").Text()), " "); !strings.HasPrefix(hits, "2 of the 3 sampled messages match") {
		t.Errorf("hits line = %q", hits)
	}
	if filtered.Find(`form input[type="hidden"][name="mcpServer"][value="docs-legacy"]`).Length() != 1 {
		t.Error("the filter form drops the dimension filter")
	}

	found, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages?q=GOLANG", htmx: true}, http.StatusOK)
	ids = found.Find("table.messages tbody th a code").Map(func(_ int, s *goquery.Selection) string { return s.Text() })
	if !slices.Equal(ids, []string{"m-plain"}) {
		t.Errorf("search for a word of the body found %v", ids)
	}
	if found.Find(".coverage").Length() != 1 {
		t.Error("the hits are shown without the sample's coverage")
	}

	msg, _ := pw.page(t, request{path: "/queues/web-search-dlq/messages/m-xss"}, http.StatusOK)
	assertSafe(t, msg)
	redriveThis := msg.Find(`form.selection-bar input[name="sel_message_id"][value="m-xss"]`).Length() + msg.Find(`form.selection-bar .disabled-reason`).Length()
	if redriveThis != 1 || msg.Find("div.reason dd code").Text() != xssGroup {
		t.Errorf("message page: reason %q, redrive of this call %d", msg.Find("div.reason dd code").Text(), redriveThis)
	}

	rec := pw.do(t, request{path: "/queues/web-search-dlq/messages?groupBy=nope"})
	if rec.Code != http.StatusBadRequest {
		t.Errorf("an unknown grouping: %d, want 400", rec.Code)
	}
}
