package store

import (
	"context"
	"testing"
)

// TestAlertIDsAreNeverGivenTwice: alert ids (the event stream's Last-Event-ID) keep growing
// after the newest alerts are deleted, and LatestAlertID says the highest ever given, on both
// engines.
func TestAlertIDsAreNeverGivenTwice(t *testing.T) {
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
