package store

import (
	"context"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/pgtest"
)

// TestReplicasReadOneAnothersWrites: replicas on PostgreSQL share the database, so what one
// writes (queues, depth samples, message samples, datapoints) is what the other reads next, with
// no memory of its own in between: the reads a snapshot makes, each read once before the write
// (which is what a cache would keep) and once after.
func TestReplicasReadOneAnothersWrites(t *testing.T) {
	t.Parallel()
	url := pgtest.DB(t)
	ctx := context.Background()
	open := func() *Store {
		s, err := Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return traceStore(s)
	}
	writer, reader := open(), open()
	q := addQueue(t, writer, "a")
	read := func() (queues []Queue, latest map[int64]AttributeSample, depths map[int64][]AttributeSample, samples map[int64]Sample, points map[int64]MetricPoint) {
		t.Helper()
		var err error
		if queues, err = reader.ListQueues(ctx, QueueFilter{}); err != nil {
			t.Fatal(err)
		}
		if latest, err = reader.LatestAttributeSamples(ctx); err != nil {
			t.Fatal(err)
		}
		if depths, err = reader.DepthSamplesSince(ctx, t0.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
		if samples, err = reader.LatestSamples(ctx); err != nil {
			t.Fatal(err)
		}
		if points, err = reader.LatestMetricPoints(ctx, "ApproximateAgeOfOldestMessage"); err != nil {
			t.Fatal(err)
		}
		return queues, latest, depths, samples, points
	}
	queues, latest, depths, samples, points := read()
	if len(queues) != 1 || len(latest) != 0 || len(depths) != 0 || len(samples) != 0 || len(points) != 0 {
		t.Fatalf("before the writes: %d queues, %v, %v, %v, %v", len(queues), latest, depths, samples, points)
	}
	b := addQueue(t, writer, "b")
	if err := writer.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: t0, Depth: AttributeSample{Visible: 7}}); err != nil {
		t.Fatal(err)
	}
	if err := writer.SaveQueueAttributes(ctx, QueueAttributes{QueueID: b.ID, At: t0, Depth: AttributeSample{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := writer.SaveSample(ctx, Sample{QueueID: q.ID, At: t0, Seen: 1}, []SampledMessage{{MessageID: "m", SentAt: t0}}, nil); err != nil {
		t.Fatal(err)
	}
	if err := writer.UpsertMetricPoints(ctx, []MetricPoint{{QueueID: q.ID, Metric: "ApproximateAgeOfOldestMessage", At: t0, Period: 60, Value: 42}}); err != nil {
		t.Fatal(err)
	}
	queues, latest, depths, samples, points = read()
	if len(queues) != 2 {
		t.Errorf("the reader lists %d queues; want 2", len(queues))
	}
	if latest[q.ID].Visible != 7 {
		t.Errorf("the reader's newest depth of a: %+v; want 7 visible", latest[q.ID])
	}
	if len(depths[q.ID]) != 1 || depths[q.ID][0].Visible != 7 {
		t.Errorf("the reader's depth samples of a: %+v; want one of 7", depths[q.ID])
	}
	if samples[q.ID].Seen != 1 {
		t.Errorf("the reader's newest sample of a: %+v; want one seen", samples[q.ID])
	}
	if points[q.ID].Value != 42 {
		t.Errorf("the reader's newest age of a: %+v; want 42", points[q.ID])
	}
}
