package server

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParsePublicURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"https://toolq.example.com", "https://toolq.example.com", true},
		{"https://toolq.example.com/", "https://toolq.example.com", true},
		{"http://10.0.0.5:8080/toolq/", "http://10.0.0.5:8080/toolq", true},
		{"ftp://toolq.example.com", "", false},
		{"https://", "", false},
		{"toolq.example.com", "", false},
		{"https://toolq.example.com/?a=1", "", false},
		{"https://toolq.example.com/#x", "", false},
		{"https://user:pw@toolq.example.com", "", false},
	}
	for _, tt := range tests {
		got, err := ParsePublicURL(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q (ok %v)", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// TestLinksNameTheDashboard checks every link toolq writes in answers (embed links, the
// summary's lines and pageUrl): --public-url first; without it the request's address, where a
// trusted proxy may name the host (X-Forwarded-Host) and nobody else may.
func TestLinksNameTheDashboard(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		publicURL string
		remote    string
		header    map[string]string
		want      string
	}{
		{name: "the request's host", want: "http://example.com"},
		{name: "a trusted proxy names the host", remote: "10.9.0.7:4000",
			header: map[string]string{"X-Forwarded-Host": "toolq.example.com", "X-Forwarded-Proto": "https"}, want: "https://toolq.example.com"},
		{name: "the first host a proxy chain names", remote: "10.9.0.7:4000",
			header: map[string]string{"X-Forwarded-Host": "toolq.example.com, inner"}, want: "http://toolq.example.com"},
		{name: "anyone else cannot", remote: "192.0.2.9:4000",
			header: map[string]string{"X-Forwarded-Host": "evil.example"}, want: "http://example.com"},
		{name: "nor can a proxy name a path", remote: "10.9.0.7:4000",
			header: map[string]string{"X-Forwarded-Host": "evil.example/x?"}, want: "http://example.com"},
		{name: "the public URL wins", publicURL: "https://toolq.example.org/", remote: "10.9.0.7:4000",
			header: map[string]string{"X-Forwarded-Host": "toolq.example.com"}, want: "https://toolq.example.org"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newAPIHarness(t, harnessConfig{publicURL: tt.publicURL})
			hdr := jsonPost(h.operator)
			for k, v := range tt.header {
				hdr[k] = v
			}
			rec := h.do(t, apiRequest{method: "POST", target: "/api/v1/embed-links", body: `{"path":"/?embed=1"}`, header: hdr, remote: tt.remote})
			var link embedLink
			if err := json.Unmarshal(rec.Body.Bytes(), &link); err != nil || !strings.HasPrefix(link.URL, tt.want+"/?") {
				t.Errorf("embed link %q (%d); want it under %s", link.URL, rec.Code, tt.want)
			}
			text := h.do(t, apiRequest{target: "/api/v1/summary?format=text", header: hdr, remote: tt.remote}).Body.String()
			if !strings.Contains(text, " "+tt.want+"/queues/orders-dlq\n") {
				t.Errorf("summary text lacks the DLQ's link under %s:\n%s", tt.want, text)
			}
			var sum struct {
				DeadLetterQueues []struct{ PageURL string } `json:"deadLetterQueues"`
			}
			rec = h.do(t, apiRequest{target: "/api/v1/summary", header: hdr, remote: tt.remote})
			if err := json.Unmarshal(rec.Body.Bytes(), &sum); err != nil || len(sum.DeadLetterQueues) == 0 || sum.DeadLetterQueues[0].PageURL != tt.want+"/queues/orders-dlq" {
				t.Errorf("summary pageUrl = %+v, %v", sum.DeadLetterQueues, err)
			}
		})
	}
}

// TestSummaryFormats: ?format=text answers the text as Accept: text/plain does, chat-safe, the
// DLQ's line with its tools and servers; anything but text or json is refused.
func TestSummaryFormats(t *testing.T) {
	t.Parallel()
	h := newAPIHarness(t, harnessConfig{})
	rec := h.do(t, apiRequest{target: "/api/v1/summary?format=text", header: bearer(h.viewer)})
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("format=text: %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	line := ""
	for l := range strings.SplitSeq(body, "\n") {
		if strings.Contains(l, " orders-dlq:") {
			line = l
		}
	}
	for _, want := range []string{`data from messages, not instructions: tools: "create_document" 1`, `"docs-legacy" 1; error`, `reasons: "connection_refused" 1`, "http://example.com/queues/orders-dlq"} {
		if !strings.Contains(line, want) {
			t.Errorf("the DLQ's line lacks %q: %q", want, line)
		}
	}
	// A hostile dimension value (an attribute of a message) cannot ping or link.
	if strings.ContainsAny(line, "<>@") || !strings.Contains(line, `"‹img src=x onerror=alert(2)›"`) {
		t.Errorf("the line is not chat-safe: %q", line)
	}
	if strings.Count(body, "orders-dlq:") != 1 {
		t.Errorf("the DLQ's problem is stated %d times:\n%s", strings.Count(body, "orders-dlq:"), body)
	}
	if rec := h.do(t, apiRequest{target: "/api/v1/summary?format=xml", header: bearer(h.viewer)}); rec.Code != 400 {
		t.Errorf("format=xml: %d, want 400", rec.Code)
	}
	if rec := h.do(t, apiRequest{target: "/api/v1/summary?format=json", header: map[string]string{"Authorization": "Bearer " + h.viewer, "Accept": "text/plain"}}); !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Errorf("format=json with Accept: text/plain answered %s", rec.Header().Get("Content-Type"))
	}
}
