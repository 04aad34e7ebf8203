package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestHotQueriesSeek checks that the queries every page runs read the big tables by key: a plan
// that scans attribute_samples or metric_points would read every row of every queue. SQLite
// without statistics once chose exactly that, hence the CROSS JOINs.
func TestHotQueriesSeek(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	tests := map[string]struct {
		query string
		args  []any
	}{
		"LatestAttributeSamples":                             {latestAttributeSamplesQuery(sqliteDialect), nil},
		"LatestMetricPoints":                                 {latestMetricPointsQuery(sqliteDialect), []any{"x"}},
		"DepthSamplesSince (the snapshot's depth history)":   {depthSamplesSinceQuery(sqliteDialect), []any{0}},
		"NearMaxCounts":                                      {nearMaxCountsQuery(sqliteDialect), []any{"[1,2]"}},
		"GroupsOfSamples":                                    {groupsOfSamplesQuery(sqliteDialect), []any{"[1,2]"}},
		"RedrivenArrivals (the snapshot's bounce-backs)":     {arrivalsQuery(sqliteDialect), []any{"[1,2]", 0}},
		"RedriveMemories":                                    {redriveMessagesQuery(sqliteDialect), []any{"[1,2]"}},
		"MetricSeriesOfQueues (the advice's empty receives)": {metricSeriesOfQueuesQuery(sqliteDialect), []any{"[1,2]", "NumberOfEmptyReceives", 0, 1}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			// A co-routine's rows are a subquery's result, already read by key: scanning them is
			// fine.
			coroutines := map[string]bool{}
			for _, step := range plan {
				if name, ok := strings.CutPrefix(step, "CO-ROUTINE "); ok {
					coroutines["SCAN "+name] = true
				}
			}
			// "SCAN j" reads the list of ids given (json_each), which then seek one by one.
			for _, step := range plan {
				if strings.HasPrefix(step, "SCAN") && !strings.HasPrefix(step, "SCAN q") && !strings.HasPrefix(step, "SCAN j VIRTUAL TABLE") && !strings.Contains(step, "metric_names") && !coroutines[step] {
					t.Errorf("plan scans a big table: %q\n%s", step, strings.Join(plan, "\n"))
				}
			}
		})
	}
}

// TestHotQueriesSeekOnPostgres is TestHotQueriesSeek on PostgreSQL, over enough rows and fresh
// statistics for its planner to choose as it would in a fleet: the per-queue reads of a
// snapshot's build seek each queue's rows by its key (an index scan per queue) rather than
// read the big tables whole.
func TestHotQueriesSeekOnPostgres(t *testing.T) {
	t.Parallel()
	s := openPostgresTest(t)
	ctx := context.Background()
	var samples []AttributeSample
	var points []MetricPoint
	for i := range 200 {
		q := addQueue(t, s, fmt.Sprintf("q-%03d", i))
		for k := range 120 {
			at := t0.Add(time.Duration(k) * 15 * time.Second)
			samples = append(samples, AttributeSample{QueueID: q.ID, At: at, Visible: int64(k)})
			if k%4 == 0 {
				points = append(points, MetricPoint{QueueID: q.ID, Metric: "ApproximateAgeOfOldestMessage", At: at, Period: 60, Value: 1})
			}
		}
	}
	if err := s.SaveAttributeSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertMetricPoints(ctx, points); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for name, tt := range map[string]struct {
		query string
		args  []any
	}{
		"LatestAttributeSamples": {latestAttributeSamplesQuery(postgresDialect), nil},
		"LatestMetricPoints":     {latestMetricPointsQuery(postgresDialect), []any{"ApproximateAgeOfOldestMessage"}},
		"DepthSamplesSince":      {depthSamplesSinceQuery(postgresDialect), []any{ms(t0.Add(29 * time.Minute))}},
		"MetricSeriesOfQueues": {metricSeriesOfQueuesQuery(postgresDialect),
			[]any{"[1,2,3]", "ApproximateAgeOfOldestMessage", ms(t0.Add(20 * time.Minute)), ms(t0.Add(30 * time.Minute))}},
	} {
		t.Run(name, func(t *testing.T) {
			rows, err := s.db.QueryContext(ctx, "EXPLAIN "+tt.query, tt.args...)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, line)
			}
			for _, line := range plan {
				if strings.Contains(line, "Seq Scan on attribute_samples") || strings.Contains(line, "Seq Scan on metric_points") {
					t.Errorf("plan reads a big table whole:\n%s", strings.Join(plan, "\n"))
					break
				}
			}
		})
	}
}
