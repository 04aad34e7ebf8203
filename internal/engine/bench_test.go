package engine_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/engine"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/sqsim"
)

// benchLatency is what every simulated SQS call costs in real time: about a call's round trip
// from a dashboard in the queue's region.
const benchLatency = 20 * time.Millisecond

// benchWorld is a simulator holding a dead-letter queue of n tool calls, half of them fetch_url,
// sent to it directly (so they carry no DeadLetterQueueSourceArn: the job names its
// destination), the store that watches it, and an engine on the wall clock.
type benchWorld struct {
	*actionstest.World
	engine      *engine.Engine
	source, dlq string
}

func newBenchWorld(b *testing.B, n int) *benchWorld {
	b.Helper()
	w := &benchWorld{World: actionstest.New(b), source: "tool-calls", dlq: "tool-calls-dlq"}
	w.CreateQueue(b, w.dlq, "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.CreateQueue(b, w.source, w.dlq, nil)
	w.Watch(b, w.source, w.dlq)
	ctx := context.Background()
	dlqURL := w.url(b, w.dlq)
	for first := 0; first < n; first += 10 {
		in := &sqs.SendMessageBatchInput{QueueUrl: aws.String(dlqURL)}
		for i := first; i < min(first+10, n); i++ {
			tool := "fetch_url"
			if i%2 == 1 {
				tool = "web_search"
			}
			in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
				Id:          aws.String(strconv.Itoa(i - first)),
				MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":"tc_%06d","toolName":%q,"toolArgs":{"url":"https://example.com/%d"},"sessionId":"sess_%d","sequenceNumber":%d}`, i, tool, i, i%100, i)),
				MessageAttributes: map[string]types.MessageAttributeValue{
					"mcpServer": {DataType: aws.String("String"), StringValue: aws.String("crawler")},
				},
				MessageSystemAttributes: map[string]types.MessageSystemAttributeValue{
					"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(fmt.Sprintf("Root=1-5759e988-bd862e3fe1be46a9%08d", i))},
				},
			})
		}
		out, err := w.SQS.SendMessageBatch(ctx, in)
		if err != nil || len(out.Failed) > 0 {
			b.Fatalf("SendMessageBatch: %v %v", err, out)
		}
	}
	coll, err := collector.New(collector.Options{Regions: []collector.Region{{Name: actionstest.Region, SQS: w.SQS}}, Store: w.Store})
	if err != nil {
		b.Fatal(err)
	}
	// The engine runs on the wall clock, as in production: its pace and its journal's times are
	// real. The simulator's own clock stands still, so no hold ends during the run.
	w.engine = engine.New(engine.Options{
		Clients: map[string]engine.SQSAPI{actionstest.Region: w.SQS}, Store: w.Store, Read: coll.ReadMessage,
		Poll: 100 * time.Millisecond,
	})
	return w
}

func (w *benchWorld) url(b *testing.B, name string) string {
	b.Helper()
	out, err := w.SQS.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		b.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// create makes a job that moves the fetch_url calls to the source queue, at most perSecond a
// second (0: as fast as the engine goes).
func (w *benchWorld) create(b *testing.B, perSecond int) store.SelectionJob {
	b.Helper()
	ctx := context.Background()
	q, err := w.Store.ResolveQueue(ctx, w.dlq)
	if err != nil {
		b.Fatal(err)
	}
	job, err := w.Store.CreateSelectionJob(ctx, store.SelectionJob{
		MoveTask: store.MoveTask{QueueID: q.ID, SourceARN: q.ARN, DestinationARN: w.ARN(w.source), MaxPerSecond: perSecond,
			StartedAt: time.Now()},
		Selection: engine.Selection{Tools: []string{"fetch_url"}}.JSON(), Actor: "bench",
	})
	if err != nil {
		b.Fatal(err)
	}
	return job
}

// runJob runs the engine until the job ends and returns it with how long it ran and how long
// its scan took: until its first release (ChangeMessageVisibilityBatch, which a job calls only
// to release what it held once its scan is over, its holds being far from their end here).
func (w *benchWorld) runJob(b *testing.B, id int64) (j store.SelectionJob, elapsed, scan time.Duration) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { defer close(done); _ = w.engine.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for {
		j, err := w.Store.GetSelectionJob(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if scan == 0 && w.Sim.CallCount("ChangeMessageVisibilityBatch") > 0 {
			scan = time.Since(start)
		}
		if !j.Running() {
			return j, time.Since(start), scan
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("the job is still %s after 10 minutes: %+v", j.Status, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// heapSampler records the peak of the heap's live and not yet swept objects while a job runs,
// from runtime/metrics (which, unlike ReadMemStats, does not stop the world).
type heapSampler struct {
	stop chan struct{}
	done sync.WaitGroup
	peak uint64
}

const heapObjects = "/memory/classes/heap/objects:bytes"

func heapNow() uint64 {
	s := []metrics.Sample{{Name: heapObjects}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func sampleHeap() *heapSampler {
	h := &heapSampler{stop: make(chan struct{})}
	h.done.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			h.peak = max(h.peak, heapNow())
			select {
			case <-h.stop:
				return
			case <-tick.C:
			}
		}
	})
	return h
}

func (h *heapSampler) Stop() uint64 {
	close(h.stop)
	h.done.Wait()
	return h.peak
}

// BenchmarkSelectionJob runs one selection job over a dead-letter queue of 2,000 and of 20,000
// tool calls on the simulator, every call costing benchLatency, and selects half of them (the
// fetch_url calls). It reports the job's time against the floor that its AWS calls set at the
// engine's default four workers, the calls against their floor (a receive per ten messages, a
// send and a delete batch per ten selected, a release batch per ten held), and the heap: its
// peak during the job and its growth over the heap before the job, which holds the
// simulator's queue.
//
//	go test -run '^$' -bench BenchmarkSelectionJob -benchtime 1x ./internal/engine/
func BenchmarkSelectionJob(b *testing.B) {
	for _, n := range []int{2_000, 20_000} {
		b.Run("messages="+strconv.Itoa(n), func(b *testing.B) {
			const workers = 4 // engine.Options.Workers' default
			selected := n / 2
			floorCalls := n/10 + 2*selected/10 + (n-selected)/10
			floor := time.Duration(floorCalls) * benchLatency / workers
			var elapsed, scan time.Duration
			var calls map[string]int
			var peak, growth uint64
			for range b.N {
				b.StopTimer()
				w := newBenchWorld(b, n)
				job := w.create(b, 0)
				w.Sim.ResetCallCounts()
				w.Sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
				runtime.GC()
				before := heapNow()
				heap := sampleHeap()
				b.StartTimer()
				j, d, s := w.runJob(b, job.ID)
				b.StopTimer()
				p := heap.Stop()
				if j.Status != store.MoveTaskCompleted || j.Moved != int64(selected) || j.Released != int64(n-selected) {
					b.Fatalf("job = %s %q, moved %d released %d; want COMPLETED, %d moved, %d released", j.Status, j.FailureReason, j.Moved, j.Released, selected, n-selected)
				}
				elapsed, scan = elapsed+d, scan+s
				calls = w.Sim.CallCounts()
				peak, growth = max(peak, p), max(growth, p-min(p, before))
			}
			total := 0
			for _, c := range calls {
				total += c
			}
			perJob := elapsed.Seconds() / float64(b.N)
			b.ReportMetric(perJob, "s/job")
			b.ReportMetric(scan.Seconds()/float64(b.N), "scan-s/job")
			b.ReportMetric(floor.Seconds(), "floor-s/job")
			b.ReportMetric(perJob/floor.Seconds(), "x-floor")
			b.ReportMetric(float64(total), "calls/job")
			b.ReportMetric(float64(floorCalls), "floor-calls/job")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(growth)/(1<<20), "heap-growth-MB")
			b.Logf("calls of the last job by operation: %v", calls)
		})
	}
}

// BenchmarkSelectionJobRate runs a job limited to 50 messages a second over 500 matching
// calls (1,000 in the queue): it should take 10 s. It reports the rate achieved, and fails
// when the job went faster than its limit allows (10% over), which would break an operator's
// promise to a downstream; slower is reported, not failed, as a loaded machine is slower.
func BenchmarkSelectionJobRate(b *testing.B) {
	const (
		perSecond = 50
		n         = 1_000
		selected  = n / 2
	)
	var elapsed time.Duration
	for range b.N {
		b.StopTimer()
		w := newBenchWorld(b, n)
		job := w.create(b, perSecond)
		w.Sim.SetFault("*", sqsim.Fault{Latency: benchLatency})
		b.StartTimer()
		j, d, _ := w.runJob(b, job.ID)
		b.StopTimer()
		if j.Status != store.MoveTaskCompleted || j.Moved != selected {
			b.Fatalf("job = %s %q, moved %d; want COMPLETED, %d moved", j.Status, j.FailureReason, j.Moved, selected)
		}
		elapsed += d
	}
	perJob := elapsed.Seconds() / float64(b.N)
	rate := selected / perJob
	b.ReportMetric(perJob, "s/job")
	b.ReportMetric(rate, "msg/s")
	want := float64(selected) / perSecond
	switch {
	case rate > perSecond*1.1:
		b.Errorf("the job moved %.1f messages a second; its limit is %d", rate, perSecond)
	case perJob > want*1.1:
		b.Logf("the job took %.1f s, more than 10%% over the %.0f s its rate sets", perJob, want)
	}
}
