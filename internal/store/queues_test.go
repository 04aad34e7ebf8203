package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestUpsertQueueKeepsFirstSeenAndClearsGone(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "web-search")
		if err := s.MarkQueueGone(ctx, q.ID, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		gone, err := s.GetQueue(ctx, q.ID)
		if err != nil || !gone.Gone() {
			t.Fatalf("after MarkQueueGone: Gone()=%v, %v; want true", gone.Gone(), err)
		}

		later := t0.Add(time.Hour)
		id, err := s.UpsertQueue(ctx, Queue{Region: "us-east-1", Name: "web-search", URL: "u2", ARN: q.ARN, FirstSeen: later, LastSeen: later})
		if err != nil || id != q.ID {
			t.Fatalf("UpsertQueue again = %d, %v; want id %d", id, err, q.ID)
		}
		got, err := s.GetQueue(ctx, q.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Gone() || !got.FirstSeen.Equal(t0) || !got.LastSeen.Equal(later) || got.URL != "u2" {
			t.Errorf("after re-upsert: gone=%v firstSeen=%v lastSeen=%v url=%q", got.Gone(), got.FirstSeen, got.LastSeen, got.URL)
		}

		if _, err := s.UpsertQueue(ctx, Queue{Name: "no-arn"}); err == nil {
			t.Error("UpsertQueue without ARN succeeded")
		}
	})
}

func TestSaveQueueAttributesAndRedriveSources(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		src := addQueue(t, s, "exports")
		dlq := addQueue(t, s, "exports-dlq")
		other := addQueue(t, s, "other-source")

		attrs := map[string]string{
			"RedrivePolicy":          `{"deadLetterTargetArn":"` + dlq.ARN + `","maxReceiveCount":"3"}`,
			"MessageRetentionPeriod": "345600",
			"Odd \"name\" ✓":         "<script>",
		}
		err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: src.ID, At: t0, Attributes: attrs, DeadLetterTargetARN: dlq.ARN, MaxReceiveCount: 3, Depth: AttributeSample{Visible: 7, InFlight: 2, Delayed: 1}})
		if err != nil {
			t.Fatalf("SaveQueueAttributes: %v", err)
		}
		if err := s.SetListedSources(ctx, dlq.ID, []string{other.ARN, src.ARN}); err != nil {
			t.Fatal(err)
		}

		got, err := s.GetQueue(ctx, src.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.DeadLetterTargetARN != dlq.ARN || got.MaxReceiveCount != 3 || !got.AttributesAt.Equal(t0) {
			t.Errorf("source redrive = %q/%d at %v", got.DeadLetterTargetARN, got.MaxReceiveCount, got.AttributesAt)
		}
		if got.Attributes["Odd \"name\" ✓"] != "<script>" || len(got.Attributes) != 3 {
			t.Errorf("attributes did not round-trip: %v", got.Attributes)
		}
		if got.IsDeadLetterQueue() {
			t.Error("source queue reports itself as a DLQ")
		}

		d, err := s.GetQueueByARN(ctx, dlq.ARN)
		if err != nil {
			t.Fatal(err)
		}
		// The source named by RedrivePolicy and the listed one, each once.
		if want := []string{src.ARN, other.ARN}; !slices.Equal(d.SourceARNs, sortedCopy(want)) {
			t.Errorf("DLQ SourceARNs = %v; want %v", d.SourceARNs, sortedCopy(want))
		}
		if !d.IsDeadLetterQueue() {
			t.Error("DLQ does not report itself as a DLQ")
		}
		// A collector watching the whole account stops listing sources and forgets the listed.
		if err := s.ForgetListedSources(ctx, "us-east-1", "another-account"); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.GetQueue(ctx, dlq.ID); len(d.SourceARNs) != 2 {
			t.Errorf("after forgetting another account's listed sources: %v; want both still", d.SourceARNs)
		}
		if err := s.ForgetListedSources(ctx, "us-east-1", ""); err != nil {
			t.Fatal(err)
		}
		if d, _ := s.GetQueue(ctx, dlq.ID); !slices.Equal(d.SourceARNs, []string{src.ARN}) {
			t.Errorf("after ForgetListedSources: %v; want the redrive policy's source alone", d.SourceARNs)
		}

		latest, err := s.LatestAttributeSamples(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a := latest[src.ID]; a.Visible != 7 || a.InFlight != 2 || a.Delayed != 1 || !a.At.Equal(t0) {
			t.Errorf("latest sample = %+v", a)
		}
		if _, ok := latest[dlq.ID]; ok {
			t.Error("a queue without samples has a latest sample")
		}

		if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: 999, At: t0, Depth: AttributeSample{}}); !errors.Is(err, ErrNotFound) {
			t.Errorf("SaveQueueAttributes of a missing queue = %v; want ErrNotFound", err)
		}
	})
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func TestQueueSetters(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "tool-calls.fifo")
		if !q.FIFO || q.PeekEnabled || !q.BackfilledAt.IsZero() || q.Attributes == nil {
			t.Fatalf("new queue = %+v", q)
		}
		if err := s.SetPeekEnabled(ctx, q.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := s.SetBackfilled(ctx, q.ID, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.SetPeekPaused(ctx, q.ID, "message m1 has 2 receives of 3"); err != nil {
			t.Fatal(err)
		}
		got, _ := s.GetQueue(ctx, q.ID)
		if !got.PeekEnabled || !got.BackfilledAt.Equal(t0) || got.PeekPaused != "message m1 has 2 receives of 3" {
			t.Errorf("after setters: peek=%v backfilled=%v paused=%q", got.PeekEnabled, got.BackfilledAt, got.PeekPaused)
		}
		if err := s.MarkQueueGone(ctx, q.ID, t0); err != nil {
			t.Fatal(err)
		}
		other := addQueue(t, s, "other")
		if err := s.TouchQueues(ctx, []int64{q.ID, other.ID}, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{q.ID, other.ID} {
			if got, err := s.GetQueue(ctx, id); err != nil || got.Gone() || !got.LastSeen.Equal(t0.Add(time.Hour)) {
				t.Errorf("queue %d after TouchQueues: gone %v, last seen %v, %v; want seen again", id, got.Gone(), got.LastSeen, err)
			}
		}
		if err := s.TouchQueues(ctx, nil, t0); err != nil {
			t.Errorf("TouchQueues of none: %v", err)
		}

		tests := []struct {
			name string
			fn   func() error
		}{
			{"SetPeekEnabled", func() error { return s.SetPeekEnabled(ctx, 404, true) }},
			{"SetBackfilled", func() error { return s.SetBackfilled(ctx, 404, t0) }},
			{"SetPeekPaused", func() error { return s.SetPeekPaused(ctx, 404, "") }},
			{"MarkQueueGone", func() error { return s.MarkQueueGone(ctx, 404, t0) }},
			{"SetListedSources", func() error { return s.SetListedSources(ctx, 404, nil) }},
			{"GetQueue", func() error { _, err := s.GetQueue(ctx, 404); return err }},
			{"GetQueueByARN", func() error { _, err := s.GetQueueByARN(ctx, "arn:nope"); return err }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.fn(); !errors.Is(err, ErrNotFound) {
					t.Errorf("err = %v; want ErrNotFound", err)
				}
			})
		}
	})
}

func TestListQueuesFilters(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		b := addQueue(t, s, "b")
		addQueue(t, s, "a")
		if _, err := s.UpsertQueue(ctx, Queue{Region: "ap-northeast-1", Name: "a", ARN: "arn:aws:sqs:ap-northeast-1:123456789012:a", LastSeen: t0}); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkQueueGone(ctx, b.ID, t0); err != nil {
			t.Fatal(err)
		}

		tests := []struct {
			name string
			f    QueueFilter
			want []string // region/name
		}{
			{"live", QueueFilter{}, []string{"ap-northeast-1/a", "us-east-1/a"}},
			{"with gone", QueueFilter{IncludeGone: true}, []string{"ap-northeast-1/a", "us-east-1/a", "us-east-1/b"}},
			{"region", QueueFilter{Region: "us-east-1", IncludeGone: true}, []string{"us-east-1/a", "us-east-1/b"}},
			{"no match", QueueFilter{Region: "eu-west-1"}, []string{}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				qs, err := s.ListQueues(ctx, tt.f)
				if err != nil {
					t.Fatal(err)
				}
				got := []string{}
				for _, q := range qs {
					got = append(got, q.Region+"/"+q.Name)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("ListQueues = %v; want %v", got, tt.want)
				}
			})
		}

		byName, err := s.GetQueuesByName(ctx, "a")
		if err != nil || len(byName) != 2 {
			t.Errorf("GetQueuesByName(a) = %d queues, %v; want 2", len(byName), err)
		}
		none, err := s.GetQueuesByName(ctx, "zzz")
		if err != nil || none == nil || len(none) != 0 {
			t.Errorf("GetQueuesByName(zzz) = %v, %v; want empty non-nil", none, err)
		}
	})
}

func TestAttributeSeries(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		q := addQueue(t, s, "q")
		for i := range 10 {
			at := t0.Add(time.Duration(i) * 15 * time.Second)
			if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: at, Depth: AttributeSample{Visible: int64(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.AttributeSeries(ctx, q.ID, t0.Add(30*time.Second), t0.Add(90*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		var vis []int64
		for _, a := range got {
			vis = append(vis, a.Visible)
		}
		if !slices.Equal(vis, []int64{2, 3, 4, 5}) {
			t.Errorf("series visible = %v; want [2 3 4 5] ([since, until))", vis)
		}
		latest, _ := s.LatestAttributeSamples(ctx)
		if latest[q.ID].Visible != 9 {
			t.Errorf("latest visible = %d; want 9", latest[q.ID].Visible)
		}
	})
}

// TestQueuesOfTwoAccounts: a name in two accounts of one region is two queues, each with its
// account's name and id; the account filter keeps one account's; the name alone is ambiguous,
// each ARN is not; a queue seen again under another name moves to it.
func TestQueuesOfTwoAccounts(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		ids := map[string]int64{}
		for _, q := range []Queue{
			{Region: "us-east-1", Account: "agents", Name: "tool-calls", ARN: "arn:aws:sqs:us-east-1:000000000000:tool-calls", LastSeen: t0},
			{Region: "us-east-1", Account: "tools-prod", Name: "tool-calls", ARN: "arn:aws:sqs:us-east-1:111111111111:tool-calls", LastSeen: t0},
			{Region: "us-east-1", Account: "tools-prod", Name: "prod-only", ARN: "arn:aws:sqs:us-east-1:111111111111:prod-only", LastSeen: t0},
		} {
			id, err := s.UpsertQueue(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			ids[q.ARN] = id
		}
		prod, err := s.ListQueues(ctx, QueueFilter{Region: "us-east-1", Account: "tools-prod"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, q := range prod {
			got = append(got, q.Account+"/"+q.AccountID+"/"+q.Name+"/"+q.Scope())
		}
		if want := []string{"tools-prod/111111111111/prod-only/tools-prod/us-east-1", "tools-prod/111111111111/tool-calls/tools-prod/us-east-1"}; !slices.Equal(got, want) {
			t.Errorf("tools-prod's queues = %v; want %v", got, want)
		}
		if _, err := s.ResolveQueue(ctx, "tool-calls"); !errors.Is(err, ErrAmbiguous) {
			t.Errorf("ResolveQueue(tool-calls) error = %v; want ErrAmbiguous", err)
		}
		q, err := s.ResolveQueue(ctx, "arn:aws:sqs:us-east-1:111111111111:tool-calls")
		if err != nil || q.ID != ids["arn:aws:sqs:us-east-1:111111111111:tool-calls"] || q.Account != "tools-prod" || q.AccountID != "111111111111" {
			t.Errorf("ResolveQueue(prod's ARN) = %+v, %v", q, err)
		}
		// Renamed in the configuration: the next discovery files it under the new name.
		if _, err := s.UpsertQueue(ctx, Queue{Region: "us-east-1", Account: "prod", Name: "prod-only", ARN: "arn:aws:sqs:us-east-1:111111111111:prod-only", LastSeen: t0}); err != nil {
			t.Fatal(err)
		}
		if q, err := s.GetQueue(ctx, ids["arn:aws:sqs:us-east-1:111111111111:prod-only"]); err != nil || q.Account != "prod" {
			t.Errorf("renamed account: %+v, %v", q, err)
		}
		if Scope("", "us-east-1") != "us-east-1" || Scope("prod", "us-east-1") != "prod/us-east-1" {
			t.Errorf("Scope = %q, %q", Scope("", "us-east-1"), Scope("prod", "us-east-1"))
		}
	})
}

// TestQueueListsTakeWrittenAttributes: the queue lists answer what the database holds as
// attributes are written again and again (each queue's decoded attributes kept while they stay),
// as a redrive policy changes (which changes another queue's sources), and for a filtered list
// too.
func TestQueueListsTakeWrittenAttributes(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		src, dlq, other := addQueue(t, s, "calls"), addQueue(t, s, "calls-dlq"), addQueue(t, s, "other-dlq")
		save := func(at time.Time, visible int, target Queue) {
			t.Helper()
			policy := `{"deadLetterTargetArn":"` + target.ARN + `","maxReceiveCount":3}`
			err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: src.ID, At: at, DeadLetterTargetARN: target.ARN, MaxReceiveCount: 3,
				Attributes: map[string]string{"RedrivePolicy": policy, "ApproximateNumberOfMessages": strconv.Itoa(visible)},
				Depth:      AttributeSample{Visible: int64(visible)}})
			if err != nil {
				t.Fatal(err)
			}
		}
		check := func(step string) {
			t.Helper()
			for _, f := range []QueueFilter{{IncludeGone: true}, {Region: src.Region}} {
				listed, err := s.ListQueues(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if len(listed) != 3 {
					t.Fatalf("%s: %d queues listed", step, len(listed))
				}
				for _, q := range listed {
					want, err := s.GetQueue(ctx, q.ID)
					if err != nil {
						t.Fatal(err)
					}
					if !maps.Equal(q.Attributes, want.Attributes) || !q.AttributesAt.Equal(want.AttributesAt) ||
						q.DeadLetterTargetARN != want.DeadLetterTargetARN || !slices.Equal(q.SourceARNs, want.SourceARNs) {
						t.Errorf("%s, %+v: listed %s %v at %v, DLQ %q, sources %v; the database %v at %v, DLQ %q, sources %v", step, f,
							q.Name, q.Attributes, q.AttributesAt, q.DeadLetterTargetARN, q.SourceARNs,
							want.Attributes, want.AttributesAt, want.DeadLetterTargetARN, want.SourceARNs)
					}
				}
			}
		}
		check("before any attributes")
		save(t0, 1, dlq)
		check("the first attributes")
		for i := range 5 {
			save(t0.Add(time.Duration(i+1)*15*time.Second), 2+i, dlq)
			check(fmt.Sprintf("attributes written again, %d", i))
		}
		save(t0.Add(2*time.Minute), 9, other) // another DLQ: both DLQs' sources change
		check("a new redrive policy")
		save(t0.Add(90*time.Second), 3, other) // written late, with an older time
		check("attributes written late")
	})
}

// TestLookupsSeek: a lookup of one queue (GetQueue, GetQueueByARN, GetQueuesByName and so
// ResolveQueue) reads that queue's row and the rows that name it by index, never every queue or
// every redrive pair: before, each lookup read all the pairs, 3 million rows a minute at 1,000
// queues. On PostgreSQL over enough analysed rows for its planner to choose as in a fleet.
func TestLookupsSeek(t *testing.T) {
	t.Parallel()
	queries := map[string]struct {
		query string
		arg   any
	}{
		"by id":                             {"SELECT " + queueColumns + " FROM queues WHERE id = ?", int64(7)},
		"by ARN":                            {"SELECT " + queueColumns + " FROM queues WHERE arn = ?", "arn:aws:sqs:us-east-1:123456789012:q-0007"},
		"by name":                           {"SELECT " + queueColumns + " FROM queues WHERE name = ? ORDER BY region, arn", "q-0007"},
		"sources of a dead-letter queue":    {sourcesOfQuery, "arn:aws:sqs:us-east-1:123456789012:q-0007"},
		"EventBridge rules naming it a DLQ": {rulesOfQuery, "arn:aws:sqs:us-east-1:123456789012:q-0007"},
	}
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		const n = 2000
		var targets []EventBridgeTarget
		for i := range n {
			q := addQueue(t, s, fmt.Sprintf("q-%04d", i))
			if i%2 == 1 {
				dlq := fmt.Sprintf("arn:aws:sqs:us-east-1:123456789012:q-%04d", i-1)
				if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: t0, DeadLetterTargetARN: dlq, MaxReceiveCount: 3}); err != nil {
					t.Fatal(err)
				}
				targets = append(targets, EventBridgeTarget{RuleARN: fmt.Sprintf("arn:rule/%d", i), TargetID: "t", TargetARN: q.ARN, DeadLetterARN: dlq, ReadAt: t0})
			}
		}
		if err := s.ReplaceEventBridgeTargets(ctx, "us-east-1", targets); err != nil {
			t.Fatal(err)
		}
		explain, scans := "EXPLAIN QUERY PLAN ", []string{"SCAN queues", "SCAN eventbridge_targets"}
		if s.d == postgresDialect {
			if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
				t.Fatal(err)
			}
			explain, scans = "EXPLAIN ", []string{"Seq Scan"}
		}
		for name, tt := range queries {
			t.Run(name, func(t *testing.T) {
				rows, err := s.db.QueryContext(ctx, explain+tt.query, tt.arg)
				if err != nil {
					t.Fatal(err)
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				var plan []string
				for rows.Next() {
					dest := make([]any, len(cols))
					var detail string
					for i := range dest {
						dest[i] = new(any)
					}
					dest[len(dest)-1] = &detail
					if err := rows.Scan(dest...); err != nil {
						t.Fatal(err)
					}
					plan = append(plan, detail)
				}
				for _, step := range plan {
					for _, scan := range scans {
						if strings.Contains(step, scan) {
							t.Errorf("plan reads a table whole (%q):\n%s", step, strings.Join(plan, "\n"))
						}
					}
				}
			})
		}
		dlq, err := s.GetQueueByARN(ctx, "arn:aws:sqs:us-east-1:123456789012:q-0006")
		if err != nil || !slices.Equal(dlq.SourceARNs, []string{"arn:aws:sqs:us-east-1:123456789012:q-0007"}) || !slices.Equal(dlq.EventBridgeRuleARNs, []string{"arn:rule/7"}) {
			t.Errorf("GetQueueByARN(q-0006): sources %v, rules %v, %v; want q-0007 and its rule", dlq.SourceARNs, dlq.EventBridgeRuleARNs, err)
		}
	})
}
