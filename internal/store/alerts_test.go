package store

import (
	"context"
	"testing"
)

// TestAlertsAfterAndByID: the event stream resumes after an id, in order, at most a page at a
// time; the notifier reads the alerts of a message by id, those pruned left out.
func TestAlertsAfterAndByID(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		var in []Alert
		for _, kind := range []string{"dlq_arrival", "health", "blocked", "redrive"} {
			in = append(in, Alert{At: t0, Kind: kind, GroupKey: "queue:1", Body: `{"kind":"` + kind + `"}`})
		}
		alerts, err := s.AppendAlerts(ctx, in, AlertDetectorKey, "m")
		if err != nil {
			t.Fatal(err)
		}
		page, err := s.AlertsAfter(ctx, alerts[0].ID, 2)
		if err != nil || len(page) != 2 || page[0].ID != alerts[1].ID || page[1].Kind != "blocked" || page[0].Body != `{"kind":"health"}` || !page[0].At.Equal(t0) {
			t.Errorf("AlertsAfter(first, 2) = %+v, %v; want the second and third", page, err)
		}
		if rest, err := s.AlertsAfter(ctx, alerts[3].ID, 10); err != nil || len(rest) != 0 {
			t.Errorf("AlertsAfter(newest) = %+v, %v; want none", rest, err)
		}
		if _, err := s.wdb.ExecContext(ctx, "DELETE FROM alerts WHERE id = ?", alerts[2].ID); err != nil {
			t.Fatal(err)
		}
		byID, err := s.AlertsByID(ctx, []int64{alerts[3].ID, alerts[2].ID, alerts[0].ID})
		if err != nil || len(byID) != 2 || byID[0].ID != alerts[0].ID || byID[1].ID != alerts[3].ID {
			t.Errorf("AlertsByID = %+v, %v; want the first and the fourth, oldest first", byID, err)
		}
		if none, err := s.AlertsByID(ctx, nil); err != nil || len(none) != 0 {
			t.Errorf("AlertsByID(none) = %+v, %v", none, err)
		}
	})
}

// TestAlertIDsAreNeverGivenTwice: alert ids (the event stream's Last-Event-ID) keep growing
// after the newest alerts are deleted, and LatestAlertID says the highest ever given, on both
// engines.
func TestAlertIDsAreNeverGivenTwice(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, open func(testing.TB) *Store) {
		ctx := context.Background()
		s := open(t)
		if id, err := s.LatestAlertID(ctx); err != nil || id != 0 {
			t.Fatalf("LatestAlertID of a new store = %d, %v; want 0", id, err)
		}
		first, err := s.AppendAlerts(ctx, []Alert{{At: t0, Kind: "dlq_arrival", GroupKey: "queue:1", Body: "{}"},
			{At: t0, Kind: "dlq_arrival", GroupKey: "queue:1", Body: "{}"}}, AlertDetectorKey, "m1")
		if err != nil {
			t.Fatal(err)
		}
		if id, err := s.LatestAlertID(ctx); err != nil || id != first[1].ID {
			t.Fatalf("LatestAlertID = %d, %v; want %d", id, err, first[1].ID)
		}
		if _, err := s.wdb.ExecContext(ctx, "DELETE FROM alerts"); err != nil {
			t.Fatal(err)
		}
		next, err := s.AppendAlerts(ctx, []Alert{{At: t0, Kind: "health", GroupKey: "queue:1", Body: "{}"}}, AlertDetectorKey, "m2")
		if err != nil {
			t.Fatal(err)
		}
		if next[0].ID <= first[1].ID {
			t.Errorf("an alert after a delete got id %d; want above %d", next[0].ID, first[1].ID)
		}
		if memory, err := s.KV(ctx, AlertDetectorKey); err != nil || memory != "m2" {
			t.Errorf("detector memory = %q, %v; want m2", memory, err)
		}
	})
}
