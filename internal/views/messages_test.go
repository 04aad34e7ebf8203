package views

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolq/toolq/internal/store"
)

func TestGroups(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	g, err := f.svc.Groups(f.ctx, f.idOf("tool-calls.fifo"))
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Groups) != 2 || g.Groups[0].GroupID != "sess_42" || !g.Groups[0].Blocked || g.Groups[0].OldestAgeSeconds != 3600 {
		t.Errorf("groups = %+v; want sess_42 (blocked, 1 h old) first", g.Groups)
	}
	if g.Seen != 4 || g.ApproxVisible != 10 || g.Coverage != 0.4 || g.SampledAt == nil {
		t.Errorf("group page = %+v", g)
	}
	if g.DeadLetterQueue || g.Groups[0].State != GroupBlocked || g.Groups[1].State != GroupWaiting {
		t.Errorf("a source's groups: dead-letter queue %v, states %s, %s; want blocked, waiting", g.DeadLetterQueue, g.Groups[0].State, g.Groups[1].State)
	}
	empty, err := f.svc.Groups(f.ctx, f.idOf("web-search"))
	if err != nil || empty.SampledAt != nil || empty.Groups == nil || len(empty.Groups) != 0 {
		t.Errorf("groups of an unsampled queue = %+v, %v", empty, err)
	}

	// Nothing retries or blocks a group in a dead-letter queue, whatever its head went through in
	// its source: every group there is dead-lettered.
	_, err = f.store.SaveSample(f.ctx, store.Sample{QueueID: f.ids["tool-calls-dlq.fifo"], Kind: store.SampleDeadLetter,
		At: now.Add(-10 * time.Second), Seen: 3, ApproxVisible: 3, Receives: 1, MessagesTaken: 3},
		[]store.SampledMessage{
			{MessageID: "d-1", GroupID: "sess_42", ReceiveCount: 5, SentAt: now.Add(-time.Hour)},
			{MessageID: "d-2", GroupID: "sess_42", SentAt: now.Add(-50 * time.Minute)},
			{MessageID: "d-3", GroupID: "sess_7", ReceiveCount: 1, SentAt: now.Add(-time.Minute)},
		},
		[]store.GroupBacklog{
			{GroupID: "sess_42", Messages: 2, OldestSentAt: now.Add(-time.Hour), HeadMessageID: "d-1", HeadReceiveCount: 5},
			{GroupID: "sess_7", Messages: 1, OldestSentAt: now.Add(-time.Minute), HeadMessageID: "d-3", HeadReceiveCount: 1},
		})
	f.must(err)
	dlq, err := f.svc.Groups(f.ctx, f.idOf("tool-calls-dlq.fifo"))
	f.must(err)
	if !dlq.DeadLetterQueue || len(dlq.Groups) != 2 {
		t.Fatalf("a DLQ's groups = %+v", dlq)
	}
	for _, gr := range dlq.Groups {
		if gr.State != GroupDeadLettered {
			t.Errorf("DLQ group %s is %s; want %s", gr.GroupID, gr.State, GroupDeadLettered)
		}
	}
}

func TestMessagesPagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("calls.fifo")
	dlq := f.queue("calls-dlq.fifo")
	_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: dlq, At: now.Add(-time.Minute), Seen: 120, ApproxVisible: 240},
		toolMessages(120, "calls.fifo"), nil)
	f.must(err)

	// Walk every page of 50: 120 messages in three pages, each once, in order.
	var ids []string
	cursor := ""
	for page := 0; ; page++ {
		p, err := f.svc.Messages(f.ctx, f.idOf("calls-dlq.fifo"), MessageQuery{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if p.Coverage != 0.5 || p.Seen != 120 || len(p.Tools) != 2 || p.Tools[0].Count != 60 {
			t.Errorf("page header = %+v", p)
		}
		for _, m := range p.Messages {
			ids = append(ids, m.MessageID)
		}
		if p.NextCursor == "" {
			if page != 2 {
				t.Errorf("ended after page %d; want 3 pages", page+1)
			}
			break
		}
		cursor = p.NextCursor
		// A newer sample arriving between pages does not change the pages already started.
		if page == 0 {
			_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: dlq, At: now}, toolMessages(1, "calls.fifo"), nil)
			f.must(err)
		}
	}
	if len(ids) != 120 || ids[0] != "msg-000" || ids[119] != "msg-119" {
		t.Errorf("paged %d messages from %s to %s", len(ids), ids[0], ids[len(ids)-1])
	}

	// Without a cursor, the newest sample.
	p, err := f.svc.Messages(f.ctx, f.idOf("calls-dlq.fifo"), MessageQuery{})
	if err != nil || len(p.Messages) != 1 || p.NextCursor != "" {
		t.Errorf("newest sample page = %d messages, next %q, %v; want 1", len(p.Messages), p.NextCursor, err)
	}
}

func TestMessagesToolFilterAndLimits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("src")
	dlq := f.queue("src-dlq")
	_, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: dlq, At: now, Seen: 120}, toolMessages(120, "src"), nil)
	f.must(err)
	tests := []struct {
		name string
		q    MessageQuery
		want int
		next bool
	}{
		{"default limit", MessageQuery{}, DefaultMessageLimit, true},
		{"negative limit takes the default", MessageQuery{Limit: -3}, DefaultMessageLimit, true},
		{"limit above max is clamped", MessageQuery{Limit: 10_000}, 120, false},
		{"tool filter", MessageQuery{ToolName: "append_section", Limit: 500}, 60, false},
		{"tool filter paged", MessageQuery{ToolName: "append_section", Limit: 59}, 59, true},
		{"no such tool", MessageQuery{ToolName: "rm -rf /"}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := f.svc.Messages(f.ctx, f.idOf("src-dlq"), tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Messages) != tt.want || (p.NextCursor != "") != tt.next {
				t.Errorf("%d messages, next %q; want %d, next=%v", len(p.Messages), p.NextCursor, tt.want, tt.next)
			}
			for _, m := range p.Messages {
				if tt.q.ToolName != "" && m.ToolName != tt.q.ToolName {
					t.Errorf("message of tool %q in a %q page", m.ToolName, tt.q.ToolName)
				}
			}
		})
	}
	// The filter carries over to the next page through the query, the cursor holds the position.
	p1, _ := f.svc.Messages(f.ctx, f.idOf("src-dlq"), MessageQuery{ToolName: "append_section", Limit: 59})
	p2, err := f.svc.Messages(f.ctx, f.idOf("src-dlq"), MessageQuery{ToolName: "append_section", Limit: 59, Cursor: p1.NextCursor})
	if err != nil || len(p2.Messages) != 1 || p2.NextCursor != "" {
		t.Errorf("second filtered page = %d messages, next %q, %v; want 1 and no next", len(p2.Messages), p2.NextCursor, err)
	}
}

func TestMessagesBadCursor(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.queue("a")
	other := f.queue("b")
	dlq := f.queue("a-dlq")
	sid, err := f.store.SaveSample(f.ctx, store.Sample{QueueID: dlq, At: now}, toolMessages(3, "a"), nil)
	f.must(err)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

	tests := map[string]string{
		"not base64":            "!!!",
		"garbage":               enc("hello"),
		"wrong version":         enc("m0.1.1.1"),
		"negative":              enc("m1.-1.1.1"),
		"too many parts":        enc("m1.1.1.1.1"),
		"another queue's":       encodeCursor(cursor{queueID: other, sampleID: sid, afterID: 1}),
		"sample of other queue": encodeCursor(cursor{queueID: dlq, sampleID: sid + 100, afterID: 1}),
		"huge":                  strings.Repeat("A", 4096),
		"sql":                   "1 OR 1=1",
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := f.svc.Messages(f.ctx, f.idOf("a-dlq"), MessageQuery{Cursor: c})
			if !errors.Is(err, ErrBadCursor) {
				t.Errorf("cursor %q: err = %v; want ErrBadCursor", c, err)
			}
		})
	}
	if _, err := f.svc.Messages(f.ctx, f.idOf("nope"), MessageQuery{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("messages of a missing queue = %v; want ErrNotFound", err)
	}
	empty, err := f.svc.Messages(f.ctx, f.idOf("b"), MessageQuery{})
	if err != nil || empty.SampledAt != nil || empty.Messages == nil || empty.Tools == nil {
		t.Errorf("messages of an unsampled queue = %+v, %v", empty, err)
	}
}

func TestMessage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.scenario()
	m, err := f.svc.Message(f.ctx, f.idOf("tool-calls-dlq.fifo"), "msg-001")
	if err != nil {
		t.Fatal(err)
	}
	if m.DeadLetterSource != "tool-calls.fifo" || m.ToolName != "append_section" || m.AgeSeconds != 120 ||
		len(m.Attributes) != 1 || m.SampledAt.IsZero() || m.GroupID != "sess_1" {
		t.Errorf("message = %+v", m)
	}
	if !strings.Contains(m.PrettyBody(), "\n  \"toolName\": \"append_section\",") {
		t.Errorf("PrettyBody = %s", m.PrettyBody())
	}
	if _, err := f.svc.Message(f.ctx, f.idOf("tool-calls-dlq.fifo"), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Message(nope) = %v; want ErrNotFound", err)
	}
}

func TestPrettyBody(t *testing.T) {
	t.Parallel()
	tests := []struct{ body, want string }{
		{`{"a":1,"b":[true]}`, "{\n  \"a\": 1,\n  \"b\": [\n    true\n  ]\n}"},
		{`{"a":1`, `{"a":1`}, // truncated JSON stays as it is
		{"plain text <b>", "plain text <b>"},
		{"", ""},
		{`"just a string"`, `"just a string"`},
	}
	for _, tt := range tests {
		if got := (Message{Body: tt.body}).PrettyBody(); got != tt.want {
			t.Errorf("PrettyBody(%q) = %q; want %q", tt.body, got, tt.want)
		}
	}
}

func TestBodyPreview(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("日本語", 100)
	tests := []struct {
		name, body, want string
	}{
		{"short", `{"a": 1}`, `{"a": 1}`},
		{"newlines and tabs", "{\n\t\"a\":\r\n 1\n}", `{ "a": 1 }`},
		{"control characters", "a\x00b\x1bc\u202ed", "a b c d"},
		{"invalid UTF-8", "ok\xff\xfe", "ok\uFFFD"},
		{"long multibyte", long, string([]rune(long)[:199]) + "…"},
		{"exactly 200", strings.Repeat("x", 200), strings.Repeat("x", 200)},
		{"huge", strings.Repeat("y", 5<<20), strings.Repeat("y", 199) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := bodyPreview(tt.body)
			if got != tt.want {
				t.Errorf("bodyPreview = %q; want %q", got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > 200 || !utf8.ValidString(got) || strings.ContainsAny(got, "\n\r") {
				t.Errorf("preview has %d runes, valid=%v: %q", n, utf8.ValidString(got), got)
			}
		})
	}
}
