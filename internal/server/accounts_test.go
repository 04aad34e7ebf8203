package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/store"
)

// TestOverviewFiltersByAccount: with queues of two accounts (the page world's, unnamed, and a
// tools-prod account's, one of them named like one of the page world's), the overview and
// the queue list keep one account's queues by its name or its id and one region's; each row
// says its account, the shared name links by ARN, and the scope list links each account.
func TestOverviewFiltersByAccount(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := t.Context()
	now := pw.Now()
	for _, name := range []string{"web-search", "prod-only"} {
		if _, err := pw.Store.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Account: "tools-prod", Name: name,
			URL: "https://sqs.us-east-1.amazonaws.com/111111111111/" + name, ARN: "arn:aws:sqs:us-east-1:111111111111:" + name,
			FirstSeen: now, LastSeen: now}); err != nil {
			t.Fatal(err)
		}
	}
	rowLabels := func(doc *goquery.Document) []string {
		var out []string
		doc.Find(`table.queues tbody tr[id^="queue-row-"] th`).Each(func(_ int, s *goquery.Selection) {
			out = append(out, s.Find("a").First().Text()+" @ "+strings.TrimSpace(s.Find(".region").Text()))
		})
		slices.Sort(out)
		return out
	}
	prodRows := []string{"prod-only @ tools-prod · us-east-1", "web-search @ tools-prod · us-east-1"}
	tests := []struct {
		name, path string
		want       []string
	}{
		{"by name", "/?account=tools-prod", prodRows},
		{"by id", "/?account=111111111111", prodRows},
		{"by name and region", "/?account=tools-prod&region=us-east-1", prodRows},
		{"another region", "/?account=tools-prod&region=eu-west-1", nil},
		{"the unnamed account's region", "/?account=default&region=us-east-1", []string{
			"notifications @ us-east-1", "tool-calls-dlq.fifo @ us-east-1", "tool-calls.fifo @ us-east-1",
			"web-search @ us-east-1", "web-search-dlq @ us-east-1"}},
		{"the name filter within an account", "/?account=tools-prod&q=prod", prodRows[:1]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, _ := pw.page(t, request{path: tt.path}, http.StatusOK)
			if got := rowLabels(doc); !slices.Equal(got, tt.want) {
				t.Errorf("rows = %q, want %q", got, tt.want)
			}
			// The websocket subscribes with the same filter, so pushes keep it.
			if ws, _ := doc.Find("[ws-connect]").Attr("ws-connect"); !strings.Contains(ws, "account=") {
				t.Errorf("ws-connect %q lacks the account filter", ws)
			}
		})
	}

	doc, _ := pw.page(t, request{path: "/"}, http.StatusOK)
	var scopes []string
	doc.Find(`nav.scopes a`).Each(func(_ int, s *goquery.Selection) {
		href, _ := s.Attr("href")
		scopes = append(scopes, href)
	})
	if want := []string{"/", "/?account=default&region=eu-west-1", "/?account=default&region=us-east-1", "/?account=tools-prod&region=us-east-1"}; !slices.Equal(scopes, want) {
		t.Errorf("scope links = %q, want %q", scopes, want)
	}
	doc.Find(`table.queues tbody th a[id^="queue-link-"]`).Each(func(_ int, s *goquery.Selection) {
		if href, _ := s.Attr("href"); s.Text() == "web-search" && !strings.Contains(href, "arn") {
			t.Errorf("web-search, a name in two accounts, links to %q; want its ARN", href)
		}
	})

	// The websocket of a filtered overview pushes its rows in the same filter.
	srv := httptest.NewServer(pw.handler)
	defer srv.Close()
	page, _ := pw.page(t, request{path: "/?account=tools-prod", htmx: true}, http.StatusOK)
	ws, _ := page.Find("#overview-table").Attr("ws-connect")
	conn, _, err := dial(t, srv, strings.TrimPrefix(ws, "/ws?"), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pushed := rowNames(nextWith(t, conn, "#overview-rows"))
	if want := rowNames(page); len(want) != 2 || !slices.Equal(pushed, want) {
		t.Errorf("pushed rows %q, the filtered page shows %q", pushed, want)
	}

	rec := pw.do(t, request{path: "/api/v1/queues?account=tools-prod"})
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /api/v1/queues?account=tools-prod: %d %s", rec.Code, rec.Body.String())
	}
	var list struct {
		Queues []struct {
			Name, Account, AccountID string
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Queues) != 2 {
		t.Fatalf("queues = %+v, want tools-prod's two", list.Queues)
	}
	for _, q := range list.Queues {
		if q.Account != "tools-prod" || q.AccountID != "111111111111" {
			t.Errorf("queue %+v, want account tools-prod 111111111111", q)
		}
	}
	if rec := pw.do(t, request{path: "/api/v1/queues?account=" + strings.Repeat("x", 65)}); rec.Code != http.StatusBadRequest {
		t.Errorf("an overlong account filter: %d, want 400", rec.Code)
	}
}
