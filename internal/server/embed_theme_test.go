package server

import (
	"net/http"
	"strings"
	"testing"
)

// TestEmbedTheme: an embedded page takes the portal's theme and colours (the colours as a
// stylesheet of this origin, the CSP allowing no inline style), keeps them on its links, and
// names the origins it may post its height to; a page that is not embedded ignores them.
func TestEmbedTheme(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	doc, _ := pw.page(t, request{path: "/?embed=1&theme=dark&colors=bg:ffffff,fg:112233"}, http.StatusOK)
	html := doc.Find("html")
	if got := html.AttrOr("data-theme", ""); got != "dark" {
		t.Errorf("data-theme = %q, want dark", got)
	}
	if got := html.AttrOr("data-embed-origins", ""); got != "self" {
		t.Errorf("data-embed-origins = %q, want self (the default frame ancestors)", got)
	}
	href := doc.Find(`link[href^="/embed-theme.css"]`).AttrOr("href", "")
	if !strings.Contains(href, "bg%3Affffff") {
		t.Errorf("theme stylesheet link = %q", href)
	}
	if link := doc.Find("table.queues thead a").First().AttrOr("href", ""); !strings.Contains(link, "theme=dark") || !strings.Contains(link, "colors=") {
		t.Errorf("a sort link drops the theme: %q", link)
	}

	rec := pw.do(t, request{path: "/embed-theme.css?colors=bg:ffffff,fg:112233"})
	if rec.Code != http.StatusOK || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css") ||
		!strings.Contains(rec.Body.String(), "--bg: #ffffff;") {
		t.Errorf("GET /embed-theme.css = %d %q %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	if rec := pw.do(t, request{path: "/embed-theme.css?colors=bg:red"}); rec.Code != http.StatusBadRequest {
		t.Errorf("GET /embed-theme.css with a named colour = %d, want 400", rec.Code)
	}

	for _, path := range []string{"/?theme=dark", "/?embed=1&theme=sepia&colors=bg:url(x)"} {
		doc, _ := pw.page(t, request{path: path}, http.StatusOK)
		if doc.Find("html[data-theme]").Length() != 0 || doc.Find(`link[href^="/embed-theme.css"]`).Length() != 0 {
			t.Errorf("%s: theme or colours applied", path)
		}
	}
}
