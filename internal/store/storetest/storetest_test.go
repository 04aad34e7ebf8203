package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
)

// TestPathsAreEmptyAndApart: each Path is a database of its own that store.Open takes as it is
// (every table there, nothing written): a row written to one is not in the next.
func TestPathsAreEmptyAndApart(t *testing.T) {
	ctx := context.Background()
	first := Open(t)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if _, err := first.UpsertQueue(ctx, store.Queue{Region: "us-east-1", Name: "orders",
		ARN: "arn:aws:sqs:us-east-1:000000000000:orders", URL: "https://sqs/orders", FirstSeen: now, LastSeen: now}); err != nil {
		t.Fatal(err)
	}
	if qs, err := first.ListQueues(ctx, store.QueueFilter{}); err != nil || len(qs) != 1 {
		t.Fatalf("the first store lists %d queues (%v); want the one written", len(qs), err)
	}
	second := Open(t)
	if err := second.Ping(ctx); err != nil {
		t.Fatalf("a second store does not answer as store.Open left it: %v", err)
	}
	if qs, err := second.ListQueues(ctx, store.QueueFilter{}); err != nil || len(qs) != 0 {
		t.Fatalf("a second store lists %d queues (%v); want none", len(qs), err)
	}
}
