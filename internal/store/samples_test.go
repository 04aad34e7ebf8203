package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// dlqMessages returns n messages of three tools; every third is near its max receive count.
func dlqMessages(n int) []SampledMessage {
	tools := []string{"create_document", "web_search", "send_email"}
	out := make([]SampledMessage, n)
	for i := range out {
		out[i] = SampledMessage{
			MessageID:       fmt.Sprintf("m-%04d", i),
			GroupID:         fmt.Sprintf("sess_%d", i%4),
			DeduplicationID: fmt.Sprintf("tc_%d", i),
			SequenceNumber:  fmt.Sprint(1000 + i),
			ReceiveCount:    1 + i%5,
			SentAt:          t0.Add(-time.Duration(n-i) * time.Minute),
			FirstReceivedAt: t0.Add(-time.Duration(n-i) * time.Minute).Add(time.Second),
			Attributes:      []MessageAttribute{{Name: "traceparent", DataType: "String", Value: "00-ab-cd-01"}},
			Body:            fmt.Sprintf(`{"toolName":%q,"n":%d}`, tools[i%3], i),
			BodySize:        30,
			ToolName:        tools[i%3],
			ToolCallID:      fmt.Sprintf("tc_%d", i),
			SessionID:       fmt.Sprintf("sess_%d", i%4),
			NearMaxReceive:  i%3 == 0,
		}
	}
	return out
}

func TestSaveSampleRoundTrip(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "tool-calls-dlq.fifo")
		msgs := dlqMessages(10)
		msgs[1].Attributes = nil
		msgs[2].Body = "not json \x00 <b>ü</b>"
		msgs[2].BodyTruncated = true
		msgs[0].OwnReceives = 2
		msgs[3].TraceHeader = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		groups := []GroupBacklog{
			{GroupID: "sess_b", Messages: 2, OldestSentAt: t0.Add(-time.Minute), HeadMessageID: "m-0001", HeadReceiveCount: 1},
			{GroupID: "sess_a", Messages: 3, OldestSentAt: t0.Add(-time.Hour), HeadMessageID: "m-0000", HeadReceiveCount: 5, Blocked: true},
		}
		sample := Sample{QueueID: q.ID, Kind: SampleDeadLetter, At: t0, Seen: 10, ApproxVisible: 12, Receives: 3, MessagesTaken: 10, Capped: true}
		id, err := s.SaveSample(ctx, sample, msgs, groups)
		if err != nil {
			t.Fatalf("SaveSample: %v", err)
		}

		latest, err := s.LatestSample(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		sample.ID = id
		// SaveSample fills in the oldest SentAt from the messages: the first of dlqMessages(10).
		sample.OldestSentAt = t0.Add(-10 * time.Minute)
		if latest != sample {
			t.Errorf("LatestSample = %+v; want %+v", latest, sample)
		}

		got, err := s.SampleMessages(ctx, id, MessageFilter{})
		if err != nil || len(got) != 10 {
			t.Fatalf("SampleMessages = %d, %v; want 10", len(got), err)
		}
		for i, m := range got {
			want := msgs[i]
			want.ID, want.SampleID, want.QueueID = m.ID, id, q.ID
			if want.Attributes == nil {
				want.Attributes = []MessageAttribute{}
			}
			// No text in the store holds NUL (PostgreSQL's cannot): it comes back as U+FFFD.
			want.Body = strings.ReplaceAll(want.Body, "\x00", "\uFFFD")
			if fmt.Sprint(m) != fmt.Sprint(want) {
				t.Errorf("message %d round trip:\n got %+v\nwant %+v", i, m, want)
			}
		}

		newest, err := s.NewestSampleMessages(ctx, id, 2)
		if err != nil || len(newest) != 2 || newest[0].MessageID != "m-0009" || newest[1].MessageID != "m-0008" {
			t.Errorf("NewestSampleMessages = %+v, %v; want m-0009 and m-0008", newest, err)
		}

		gs, err := s.SampleGroups(ctx, id)
		if err != nil || len(gs) != 2 || gs[0].GroupID != "sess_a" || !gs[0].Blocked || gs[0].QueueID != q.ID {
			t.Errorf("SampleGroups = %+v, %v; want sess_a (oldest, blocked) first", gs, err)
		}
		if len(gs) == 2 && (gs[0].HeadOwnReceives != 2 || gs[1].HeadOwnReceives != msgs[1].OwnReceives) {
			t.Errorf("heads' own receives = %d, %d; want %d, %d (the heads' rows in the sample)",
				gs[0].HeadOwnReceives, gs[1].HeadOwnReceives, 2, msgs[1].OwnReceives)
		}

		counts, err := s.SampleValueCounts(ctx, id, Field{Kind: FieldTool}, MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var tools []string
		for _, c := range counts {
			tools = append(tools, fmt.Sprintf("%s:%d", c.Value, c.Count))
		}
		if want := []string{"create_document:4", "send_email:3", "web_search:3"}; !slices.Equal(tools, want) {
			t.Errorf("SampleValueCounts by tool = %v; want %v", tools, want)
		}

		if _, err := s.SaveSample(ctx, Sample{QueueID: 404, At: t0}, nil, nil); !errors.Is(err, ErrNotFound) {
			t.Errorf("SaveSample of a missing queue = %v; want ErrNotFound", err)
		}
		if _, err := s.LatestSample(ctx, 404); !errors.Is(err, ErrNotFound) {
			t.Errorf("LatestSample without samples = %v; want ErrNotFound", err)
		}
	})
}

func TestSampleMessagesFiltersAndCursor(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "web-search-dlq")
		id, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0, Seen: 25}, dlqMessages(25), nil)
		if err != nil {
			t.Fatal(err)
		}

		// Walk pages of 4 with the cursor: every message once, in order.
		var seen []string
		after := int64(0)
		for pages := 0; ; pages++ {
			page, err := s.SampleMessages(ctx, id, MessageFilter{AfterID: after, Limit: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				break
			}
			for _, m := range page {
				seen = append(seen, m.MessageID)
			}
			after = page[len(page)-1].ID
			if pages > 10 {
				t.Fatal("pagination does not end")
			}
		}
		if len(seen) != 25 || !slices.IsSorted(seen) || len(slices.Compact(slices.Clone(seen))) != 25 {
			t.Errorf("paged through %d messages: %v", len(seen), seen)
		}

		tests := []struct {
			name string
			f    MessageFilter
			want int
		}{
			{"tool", MessageFilter{ToolName: "web_search"}, 8},
			{"near max", MessageFilter{NearMaxOnly: true}, 9},
			{"tool and near max", MessageFilter{ToolName: "create_document", NearMaxOnly: true}, 9},
			{"unknown tool", MessageFilter{ToolName: "nope"}, 0},
			{"limit", MessageFilter{Limit: 3}, 3},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got, err := s.SampleMessages(ctx, id, tt.f)
				if err != nil || len(got) != tt.want || got == nil {
					t.Errorf("SampleMessages(%+v) = %d, %v; want %d", tt.f, len(got), err, tt.want)
				}
			})
		}
	})
}

func TestSampledMessageByIDAndDedup(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "exports-dlq")
		big := strings.Repeat("é", 100_000)
		msgs := dlqMessages(3)
		msgs[0].Body = big
		first, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0}, msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs[0].ReceiveCount = 9
		second, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0.Add(time.Minute)}, msgs, nil)
		if err != nil {
			t.Fatal(err)
		}

		m, err := s.SampledMessageByID(ctx, q.ID, "m-0000")
		if err != nil {
			t.Fatal(err)
		}
		if m.SampleID != second || m.ReceiveCount != 9 || m.Body != big {
			t.Errorf("SampledMessageByID = sample %d, receive count %d, body %d bytes; want sample %d, 9, %d bytes", m.SampleID, m.ReceiveCount, len(m.Body), second, len(big))
		}
		if first == second {
			t.Fatal("two samples share an id")
		}
		// The message's content is stored once, however many samples saw it.
		var n int
		if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM messages").Scan(&n); err != nil || n != 3 {
			t.Errorf("messages rows = %d, %v; want 3", n, err)
		}
		if _, err := s.SampledMessageByID(ctx, q.ID, "nope"); !errors.Is(err, ErrNotFound) {
			t.Errorf("SampledMessageByID(nope) = %v; want ErrNotFound", err)
		}
	})
}

// TestSampleDeliveredTwiceAndLarge: a standard queue can deliver one message twice in a pass;
// it is stored once, as its first delivery, with its last delivery's dimensions and the higher
// counts. A pass larger than one statement's batch keeps every message.
func TestSampleDeliveredTwiceAndLarge(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "exports-dlq")
		msgs := dlqMessages(sampleBatch*2 + 50)
		twice := msgs[1]
		msgs[1].ReceiveCount, msgs[1].OwnReceives, msgs[1].Body = 2, 1, "first delivery"
		msgs[1].Dimensions = map[string]string{"mcpServer": "old"}
		twice.ReceiveCount, twice.OwnReceives, twice.NearMaxReceive, twice.Body = 4, 0, true, "second delivery"
		twice.Dimensions = map[string]string{"mcpServer": "new"}
		msgs = append(msgs, twice)
		id, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0, Seen: len(msgs)}, msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.SampleMessages(ctx, id, MessageFilter{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != sampleBatch*2+50 {
			t.Fatalf("%d messages stored; want %d", len(got), sampleBatch*2+50)
		}
		if n, err := s.MostOwnReceives(ctx, id); err != nil || n != 1 {
			t.Errorf("MostOwnReceives = %d, %v; want 1", n, err)
		}
		m, err := s.SampledMessageByID(ctx, q.ID, twice.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if m.Body != "first delivery" || m.ReceiveCount != 4 || m.OwnReceives != 1 || !m.NearMaxReceive || m.Dimensions["mcpServer"] != "new" {
			t.Errorf("the message delivered twice: body %q, receive count %d, own receives %d, near max %v, dimensions %v; want the first body, 4, 1, true, new",
				m.Body, m.ReceiveCount, m.OwnReceives, m.NearMaxReceive, m.Dimensions)
		}
	})
}

func TestReceiveBudgetSince(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "notifications")
		for i := range 4 {
			at := t0.Add(time.Duration(i) * 30 * time.Minute)
			if _, err := s.SaveSample(ctx, Sample{QueueID: q.ID, Kind: SampleSource, At: at, Receives: 2, MessagesTaken: 5}, nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		b, err := s.ReceiveBudgetSince(ctx, q.ID, t0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if b != (ReceiveBudget{Receives: 4, MessagesTaken: 10, Samples: 2}) {
			t.Errorf("ReceiveBudgetSince = %+v", b)
		}
		if b, err := s.ReceiveBudgetSince(ctx, 404, t0); err != nil || b != (ReceiveBudget{}) {
			t.Errorf("budget of a queue without samples = %+v, %v", b, err)
		}
	})
}

func TestLatestSamplesAndNearMax(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		a := addQueue(t, s, "a-dlq")
		b := addQueue(t, s, "b-dlq")
		addQueue(t, s, "never-sampled")
		var newest int64
		for i := range 3 {
			id, err := s.SaveSample(ctx, Sample{QueueID: a.ID, At: t0.Add(time.Duration(i) * time.Minute), Seen: i}, dlqMessages(6), nil)
			if err != nil {
				t.Fatal(err)
			}
			newest = id
		}
		bid, err := s.SaveSample(ctx, Sample{QueueID: b.ID, At: t0}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		latest, err := s.LatestSamples(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(latest) != 2 || latest[a.ID].ID != newest || latest[a.ID].Seen != 2 || latest[b.ID].ID != bid {
			t.Errorf("LatestSamples = %+v", latest)
		}
		if n, err := s.SampleNearMaxCount(ctx, newest); err != nil || n != 2 {
			t.Errorf("SampleNearMaxCount = %d, %v; want 2", n, err)
		}
		got, err := s.GetSample(ctx, newest)
		if err != nil || got != latest[a.ID] {
			t.Errorf("GetSample = %+v, %v", got, err)
		}
		if _, err := s.GetSample(ctx, 404); !errors.Is(err, ErrNotFound) {
			t.Errorf("GetSample(404) = %v; want ErrNotFound", err)
		}
	})
}

// TestSampleFilterGroupSearch filters a sample by dimension, groups it by tool, dimension and
// attribute, and searches it, with LIKE's wildcards taken as text.
func TestSampleFilterGroupSearch(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "web-search-dlq")
		msgs := dlqMessages(9)
		for i := range msgs {
			msgs[i].Dimensions = map[string]string{"mcpServer": []string{"docs-legacy", "research", "docs-legacy"}[i%3]}
		}
		msgs[0].Dimensions["error"] = "connection_refused"
		msgs[4].Body = `{"toolName":"web_search","toolArgs":{"query":"50% of a_b"}}`
		msgs[5].Attributes = []MessageAttribute{{Name: "ERROR_CODE", DataType: "String", Value: "NO_RESOURCE"}}
		msgs[6].Dimensions = nil
		id, err := s.SaveSample(ctx, Sample{QueueID: q.ID, Kind: SampleDeadLetter, At: t0, Seen: 9, ApproxVisible: 9}, msgs, nil)
		if err != nil {
			t.Fatal(err)
		}
		ids := func(f MessageFilter) []string {
			t.Helper()
			got, err := s.SampleMessages(ctx, id, f)
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.SampleMessageCount(ctx, id, f)
			if err != nil || n != len(got) {
				t.Errorf("SampleMessageCount(%+v) = %d, %v; the list has %d", f, n, err, len(got))
			}
			var out []string
			for _, m := range got {
				out = append(out, m.MessageID)
			}
			return out
		}
		filters := []struct {
			name string
			f    MessageFilter
			want []string
		}{
			{"by dimension", MessageFilter{Dimensions: map[string]string{"mcpServer": "research"}}, []string{"m-0001", "m-0004", "m-0007"}},
			{"without the dimension", MessageFilter{Dimensions: map[string]string{"mcpServer": ""}}, []string{"m-0006"}},
			{"two dimensions", MessageFilter{Dimensions: map[string]string{"mcpServer": "docs-legacy", "error": "connection_refused"}}, []string{"m-0000"}},
			{"dimension and tool", MessageFilter{ToolName: "web_search", Dimensions: map[string]string{"mcpServer": "research"}}, []string{"m-0001", "m-0004", "m-0007"}},
			{"search the body, any case", MessageFilter{Search: "OF A_B"}, []string{"m-0004"}},
			{"a percent sign is text", MessageFilter{Search: "50%"}, []string{"m-0004"}},
			{"an underscore is text", MessageFilter{Search: "a_b"}, []string{"m-0004"}},
			{"search a message id", MessageFilter{Search: "m-0008"}, []string{"m-0008"}},
			{"search a group id", MessageFilter{Search: "sess_3"}, []string{"m-0003", "m-0007"}},
			{"search a deduplication id", MessageFilter{Search: "tc_2"}, []string{"m-0002"}},
			{"search a dimension value", MessageFilter{Search: "refused"}, []string{"m-0000"}},
			{"search and filter", MessageFilter{Search: "sess_3", Dimensions: map[string]string{"mcpServer": "docs-legacy"}}, []string{"m-0003"}},
			{"nothing", MessageFilter{Search: "nothing like it"}, nil},
		}
		for _, tt := range filters {
			t.Run(tt.name, func(t *testing.T) {
				if got := ids(tt.f); !slices.Equal(got, tt.want) {
					t.Errorf("messages = %v; want %v", got, tt.want)
				}
			})
		}

		counts := func(field Field, f MessageFilter) []string {
			t.Helper()
			got, err := s.SampleValueCounts(ctx, id, field, f)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, c := range got {
				out = append(out, fmt.Sprintf("%s:%d", c.Value, c.Count))
			}
			return out
		}
		groups := []struct {
			name  string
			field Field
			f     MessageFilter
			want  []string
		}{
			{"by dimension", Field{Kind: FieldDimension, Name: "mcpServer"}, MessageFilter{}, []string{"docs-legacy:5", "research:3", ":1"}},
			{"by dimension, filtered", Field{Kind: FieldDimension, Name: "mcpServer"}, MessageFilter{ToolName: "create_document"}, []string{"docs-legacy:2", ":1"}},
			{"by attribute", Field{Kind: FieldAttribute, Name: "ERROR_CODE"}, MessageFilter{}, []string{":8", "NO_RESOURCE:1"}},
			{"by tool, searched", Field{Kind: FieldTool}, MessageFilter{Search: "sess_1"}, []string{"send_email:1", "web_search:1"}},
		}
		for _, tt := range groups {
			t.Run("group "+tt.name, func(t *testing.T) {
				if got := counts(tt.field, tt.f); !slices.Equal(got, tt.want) {
					t.Errorf("counts = %v; want %v", got, tt.want)
				}
			})
		}
		// First and last sent: the group's oldest and newest message.
		got, err := s.SampleValueCounts(ctx, id, Field{Kind: FieldDimension, Name: "mcpServer"}, MessageFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if !got[1].FirstSentAt.Equal(msgs[1].SentAt) || !got[1].LastSentAt.Equal(msgs[7].SentAt) {
			t.Errorf("research sent from %v to %v; want %v to %v", got[1].FirstSentAt, got[1].LastSentAt, msgs[1].SentAt, msgs[7].SentAt)
		}

		// A message seen again takes the dimensions of its newest sighting.
		msgs[1].Dimensions = map[string]string{"mcpServer": "renamed"}
		if _, err := s.SaveSample(ctx, Sample{QueueID: q.ID, Kind: SampleDeadLetter, At: t0.Add(time.Minute), Seen: 1, ApproxVisible: 1}, msgs[1:2], nil); err != nil {
			t.Fatal(err)
		}
		m, err := s.SampledMessageByID(ctx, q.ID, "m-0001")
		if err != nil || m.Dimensions["mcpServer"] != "renamed" {
			t.Errorf("dimensions after a new sighting = %v, %v", m.Dimensions, err)
		}
	})
}

// TestNearMaxCountsAndBlockedGroups: the counts and groups of several samples in one query are
// those of each sample alone.
func TestNearMaxCountsAndGroupsOfSamples(t *testing.T) {
	t.Parallel()
	forEachEngine(t, testNearMaxCountsAndGroupsOfSamples)
}

func testNearMaxCountsAndGroupsOfSamples(t *testing.T, open func(testing.TB) *Store) {
	s := open(t)
	ctx := context.Background()
	q1, q2 := addQueue(t, s, "a.fifo"), addQueue(t, s, "b.fifo")
	save := func(q Queue, near int, blocked ...string) int64 {
		t.Helper()
		var msgs []SampledMessage
		for i := range near + 2 {
			msgs = append(msgs, SampledMessage{MessageID: fmt.Sprintf("%s-%d", q.Name, i), NearMaxReceive: i < near, SentAt: t0})
		}
		var groups []GroupBacklog
		for i, g := range blocked {
			groups = append(groups, GroupBacklog{GroupID: g, Messages: 2, OldestSentAt: t0.Add(time.Duration(i) * time.Second), Blocked: true})
		}
		groups = append(groups, GroupBacklog{GroupID: "flowing", Messages: 1, OldestSentAt: t0})
		id, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0, Seen: len(msgs)}, msgs, groups)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	s1, s2, s3 := save(q1, 3, "g1", "g2"), save(q2, 0), save(q2, 1, "g3")
	counts, err := s.NearMaxCounts(ctx, []int64{s1, s2, s3, 999})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{s1, s2, s3} {
		one, err := s.SampleNearMaxCount(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if counts[id] != one {
			t.Errorf("sample %d: %d near max in the batch, %d alone", id, counts[id], one)
		}
	}
	for range 2 { // read twice: the same each time
		groups, err := s.GroupsOfSamples(ctx, []int64{s1, s2, s3})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{s1, s2, s3} {
			want, err := s.SampleGroups(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(groups[id]) != fmt.Sprint(want) {
				t.Errorf("sample %d: groups %v in the batch, %v alone", id, groups[id], want)
			}
		}
	}
	if none, err := s.NearMaxCounts(ctx, nil); err != nil || len(none) != 0 {
		t.Errorf("NearMaxCounts(nil) = %v, %v", none, err)
	}
}
