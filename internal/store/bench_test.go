package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The write benchmarks run on both engines, as sub-benchmarks engine=sqlite and engine=postgres
// (the latter skipped where no PostgreSQL server can be started): the collector's writes are the
// same on both, and their rates say how far one leader can go.

// forEachEngineB runs a benchmark on a fresh store of each engine.
func forEachEngineB(b *testing.B, bench func(b *testing.B, s *Store)) {
	b.Run("engine=sqlite", func(b *testing.B) { bench(b, openTest(b)) })
	b.Run("engine=postgres", func(b *testing.B) { bench(b, openPostgresTest(b)) })
}

// BenchmarkSaveQueueAttributes measures one attribute cycle of 1,000 queues: one op is 1,000
// SaveQueueAttributes calls, each its own transaction, as the collector makes them.
func BenchmarkSaveQueueAttributes(b *testing.B) { forEachEngineB(b, benchSaveQueueAttributes) }

func benchSaveQueueAttributes(b *testing.B, s *Store) {
	ctx := context.Background()
	const queues = 1000
	ids := make([]int64, queues)
	for i := range ids {
		ids[i] = addQueue(b, s, fmt.Sprintf("queue-%04d", i)).ID
	}
	attrs := map[string]string{
		"ApproximateNumberOfMessages": "12", "ApproximateNumberOfMessagesNotVisible": "3",
		"ApproximateNumberOfMessagesDelayed": "0", "MessageRetentionPeriod": "345600", "VisibilityTimeout": "30",
		"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:123456789012:queue-dlq","maxReceiveCount":5}`,
		"QueueArn":      "arn:aws:sqs:us-east-1:123456789012:queue", "DelaySeconds": "0", "MaximumMessageSize": "262144",
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		at := t0.Add(time.Duration(n) * 15 * time.Second)
		for _, id := range ids {
			if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: id, At: at, Attributes: attrs, DeadLetterTargetARN: "arn:dlq", MaxReceiveCount: 5, Depth: AttributeSample{Visible: 12, InFlight: 3}}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N*queues)/b.Elapsed().Seconds(), "queues/s")
}

// BenchmarkSaveSample measures storing one peek pass of 500 messages of ~600-byte bodies, half of
// them seen by the previous pass (a DLQ changes slowly).
func BenchmarkSaveSample(b *testing.B) { forEachEngineB(b, benchSaveSample) }

func benchSaveSample(b *testing.B, s *Store) {
	ctx := context.Background()
	q := addQueue(b, s, "tool-calls-dlq.fifo")
	msgs := dlqMessages(500)
	pad := fmt.Sprintf("%0560d", 0)
	for i := range msgs {
		msgs[i].Body = fmt.Sprintf(`{"toolName":"create_document","toolArgs":{"pad":%q},"n":%d}`, pad, i)
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		for i := range msgs {
			msgs[i].MessageID = fmt.Sprintf("m-%d", (n*250)+i) // half new each pass
		}
		if _, err := s.SaveSample(ctx, Sample{QueueID: q.ID, At: t0.Add(time.Duration(n) * time.Minute), Seen: 500}, msgs, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "messages/s")
}

// BenchmarkUpsertMetricPoints measures one GetMetricData answer's worth of datapoints: 8 metrics
// of 100 queues, 800 points in one transaction.
func BenchmarkUpsertMetricPoints(b *testing.B) { forEachEngineB(b, benchUpsertMetricPoints) }

func benchUpsertMetricPoints(b *testing.B, s *Store) {
	ctx := context.Background()
	metrics := []string{"ApproximateAgeOfOldestMessage", "ApproximateNumberOfMessagesVisible", "ApproximateNumberOfMessagesNotVisible",
		"ApproximateNumberOfMessagesDelayed", "NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted", "NumberOfEmptyReceives"}
	var pts []MetricPoint
	for i := range 100 {
		q := addQueue(b, s, fmt.Sprintf("queue-%03d", i))
		for _, m := range metrics {
			pts = append(pts, MetricPoint{QueueID: q.ID, Metric: m, Period: 60, Value: float64(i)})
		}
	}
	b.ResetTimer()
	for n := 0; b.Loop(); n++ {
		at := t0.Add(time.Duration(n) * time.Minute)
		for i := range pts {
			pts[i].At = at
		}
		if err := s.UpsertMetricPoints(ctx, pts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(pts))/b.Elapsed().Seconds(), "points/s")
}

// BenchmarkMonthOfOneQueue writes 30 days of one queue's data at the collector's default
// cadences, pruning every hour with the default retention, then reports the database file's
// size and logs it by table: "dlq" is a FIFO dead-letter queue that holds ~50 messages (a depth
// sample every 15 s, no CloudWatch, a peek pass a minute over the messages, of which one changes
// each minute); "source" a FIFO source queue holding messages (a depth sample every 15 s, its 8
// CloudWatch metrics as one-minute datapoints, not sampled). It takes minutes, so
// `make bench` skips it unless TOOLQ_BENCH_LONG is set; run it once:
//
//	TOOLQ_BENCH_LONG=1 go test -run '^$' -bench MonthOfOneQueue -benchtime 1x -v ./internal/store
func BenchmarkMonthOfOneQueue(b *testing.B) {
	if os.Getenv("TOOLQ_BENCH_LONG") == "" {
		b.Skip("writes a month of data in minutes: set TOOLQ_BENCH_LONG=1 to run it")
	}
	for _, kind := range []string{"dlq", "source"} {
		b.Run(kind, func(b *testing.B) {
			for b.Loop() {
				size, byTable := writeQueueHistory(b, 30*24*time.Hour, kind == "dlq")
				b.ReportMetric(float64(size)/(1<<20), "MiB/queue-month")
				for _, t := range byTable {
					b.Logf("%-32s %8.2f MiB", t.name, float64(t.bytes)/(1<<20))
				}
			}
		})
	}
}

type tableSize struct {
	name  string
	bytes int64
}

// writeQueueHistory writes span of one dead-letter queue's data (dlq) or one source queue's (see
// BenchmarkMonthOfOneQueue) into a fresh database and returns the file's size and the pages each
// table and index holds.
func writeQueueHistory(tb testing.TB, span time.Duration, dlq bool) (int64, []tableSize) {
	ctx := context.Background()
	path := filepath.Join(tb.TempDir(), "history.db")
	s, err := Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	src := addQueue(tb, s, "tool-calls.fifo")
	q := addQueue(tb, s, "tool-calls-dlq.fifo")
	attrs := map[string]string{
		"ApproximateNumberOfMessages": "50", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
		"CreatedTimestamp": "1764460000", "LastModifiedTimestamp": "1764460000", "DelaySeconds": "0", "MaximumMessageSize": "262144",
		"MessageRetentionPeriod": "1209600", "ReceiveMessageWaitTimeSeconds": "0", "VisibilityTimeout": "30",
		"QueueArn": q.ARN, "FifoQueue": "true", "ContentBasedDeduplication": "false", "SqsManagedSseEnabled": "true",
		"RedriveAllowPolicy": `{"redrivePermission":"byQueue","sourceQueueArns":["` + src.ARN + `"]}`,
	}
	metrics := []string{"ApproximateAgeOfOldestMessage", "NumberOfMessagesSent", "NumberOfMessagesReceived", "NumberOfMessagesDeleted",
		"NumberOfEmptyReceives", "SentMessageSize", "NumberOfDeduplicatedSentMessages", "ApproximateNumberOfGroupsWithInflightMessages"}
	if dlq {
		metrics = nil // a dead-letter queue's depth comes from its attributes, its age from its samples
	}
	message := func(n int) SampledMessage {
		body := fmt.Sprintf(`{"toolCallId":"tc_01j8%022d","toolName":"create_document","toolArgs":{"title":"Quarterly report %d","sections":["intro","numbers","outlook"],"format":"markdown"},"sessionId":"sess_%012d","sequenceNumber":%d,"sentAt":1764460000000}`, n, n, n%40, n%9)
		return SampledMessage{
			MessageID: fmt.Sprintf("%08d-1b2c-4d5e-8f90-a1b2c3d4e5f6", n), GroupID: fmt.Sprintf("sess_%012d", n%40),
			DeduplicationID: fmt.Sprintf("tc_01j8%022d", n), SequenceNumber: fmt.Sprintf("1886%016d", n),
			ReceiveCount: 1, SentAt: t0, FirstReceivedAt: t0, DeadLetterSourceARN: src.ARN,
			Attributes: []MessageAttribute{{Name: "traceparent", DataType: "String", Value: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
			Body:       body, BodySize: len(body), ToolName: "create_document", ToolCallID: fmt.Sprintf("tc_01j8%022d", n),
			SessionID: fmt.Sprintf("sess_%012d", n%40),
		}
	}
	for minute := 0; minute < int(span/time.Minute); minute++ {
		at := t0.Add(time.Duration(minute) * time.Minute)
		for k := range 4 {
			if err := s.SaveQueueAttributes(ctx, QueueAttributes{QueueID: q.ID, At: at.Add(time.Duration(k) * 15 * time.Second), Attributes: attrs, Depth: AttributeSample{Visible: 50, InFlight: int64(k)}}); err != nil {
				tb.Fatal(err)
			}
		}
		pts := make([]MetricPoint, len(metrics))
		for i, m := range metrics {
			pts[i] = MetricPoint{QueueID: q.ID, Metric: m, At: at, Period: 60, Value: float64(minute % 97)}
		}
		if err := s.UpsertMetricPoints(ctx, pts); err != nil {
			tb.Fatal(err)
		}
		if !dlq {
			if minute%60 == 59 {
				if _, err := s.Prune(ctx, at, Retention{}); err != nil {
					tb.Fatal(err)
				}
			}
			continue
		}
		msgs := make([]SampledMessage, 50)
		for i := range msgs {
			msgs[i] = message(minute + i)
		}
		if _, err := s.SaveSample(ctx, Sample{QueueID: q.ID, Kind: SampleDeadLetter, At: at, Seen: 50, ApproxVisible: 50, Receives: 5, MessagesTaken: 50}, msgs, nil); err != nil {
			tb.Fatal(err)
		}
		if minute%60 == 59 {
			if _, err := s.Prune(ctx, at, Retention{}); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if _, err := s.wdb.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		tb.Fatal(err)
	}
	var byTable []tableSize
	rows, err := s.db.QueryContext(ctx, "SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var t tableSize
		if err := rows.Scan(&t.name, &t.bytes); err != nil {
			tb.Fatal(err)
		}
		byTable = append(byTable, t)
	}
	var free, pageSize int64
	if err := s.db.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		tb.Fatal(err)
	}
	if err := s.db.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		tb.Fatal(err)
	}
	byTable = append(byTable, tableSize{"(free pages)", free * pageSize})
	fi, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size(), byTable
}
