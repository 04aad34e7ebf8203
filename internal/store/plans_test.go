package store

import (
	"context"
	"strings"
	"testing"
)

// TestHotQueriesSeek checks that the queries every page runs read the big tables by key: a plan
// that scans attribute_samples or metric_points would read every row of every queue. SQLite
// without statistics once chose exactly that, hence the CROSS JOINs.
func TestHotQueriesSeek(t *testing.T) {
	s := openTest(t)
	tests := map[string]struct {
		query string
		args  []any
	}{
		"LatestAttributeSamples":                           {latestAttributeSamplesQuery, nil},
		"LatestMetricPoints":                               {latestMetricPointsQuery, []any{"x"}},
		"DepthSamplesSince (the snapshot's depth history)": {depthSamplesSinceQuery, []any{0}},
		"NearMaxCounts":                                    {nearMaxCountsQuery(sqliteDialect), []any{"[1,2]"}},
		"GroupsOfSamples":                                  {groupsOfSamplesQuery(sqliteDialect), []any{"[1,2]"}},
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
