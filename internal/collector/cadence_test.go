package collector

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// readsByQueue is the real SQS client, counting each queue's GetQueueAttributes and
// ReceiveMessage calls.
type readsByQueue struct {
	SQSAPI
	mu       sync.Mutex
	reads    map[string]int
	receives map[string]int
}

func (r *readsByQueue) GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, o ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error) {
	r.mu.Lock()
	r.reads[queueNameFromURL(aws.ToString(in.QueueUrl))]++
	r.mu.Unlock()
	return r.SQSAPI.GetQueueAttributes(ctx, in, o...)
}

func (r *readsByQueue) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, o ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	r.mu.Lock()
	r.receives[queueNameFromURL(aws.ToString(in.QueueUrl))]++
	r.mu.Unlock()
	return r.SQSAPI.ReceiveMessage(ctx, in, o...)
}

func (r *readsByQueue) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reads, r.receives = map[string]int{}, map[string]int{}
}

// TestQuietDeadLetterQueuesAreReadAtTheirOwnCadence runs every loop for an hour at the default
// cadences and counts each queue's reads: a dead-letter queue whose depth stands still is read
// every 30 s, empty or not, and its samples read nothing of their own (the attribute loop's
// depth serves them); an empty, quiet source every minute; a source holding messages every 15 s,
// and an opted-in one with a RedrivePolicy once more per sample, since the receive guard needs
// its depth fresh.
func TestQuietDeadLetterQueuesAreReadAtTheirOwnCadence(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createQueue("idle", nil)
	busyURL, _ := e.createPair("busy", "busy-dlq", 1000) // room for an hour of samples' receives
	e.send(busyURL, toolCallBody("search", 1, "s"))
	_, fullDLQ := e.createPair("failing", "failing-dlq", 5)
	for i := range 3 {
		e.send(fullDLQ, toolCallBody("search", i, "s"))
	}
	counted := &readsByQueue{SQSAPI: e.sqs}
	counted.reset()
	c := e.collector(func(o *Options) {
		o.Regions[0].SQS = counted
		o.MoveTasksInterval = 0
		o.Peek.Sources = []string{"busy"}
	})
	must(t, c.Discover(e.ctx))
	runLoops(t, e, c, 5*time.Minute)
	counted.reset()
	runLoops(t, e, c, time.Hour)
	want := []struct {
		queue           string
		reads, receives int
	}{
		{"idle", 60, 0},
		{"busy", 240 + 12, 12}, // and a read before each of its 12 samples
		{"busy-dlq", 120, 0},
		{"failing", 60, 0},
		{"failing-dlq", 120, 60}, // 3 messages: one receive a sample
	}
	counted.mu.Lock()
	defer counted.mu.Unlock()
	for _, w := range want {
		if got := counted.reads[w.queue]; got < w.reads-1 || got > w.reads+1 {
			t.Errorf("%s: %d GetQueueAttributes in an hour; want %d", w.queue, got, w.reads)
		}
		if got := counted.receives[w.queue]; got != w.receives {
			t.Errorf("%s: %d ReceiveMessage in an hour; want %d", w.queue, got, w.receives)
		}
	}
	if t.Failed() {
		t.Logf("reads %v, receives %v", counted.reads, counted.receives)
	}
}

// TestQueueSampledAsSoonAsItFillsAfterAnEmptySample: an opted-in source whose sample found it
// empty is sampled again at the peek loop's next check once the attribute loop sees messages in
// it, not a whole PeekSourceInterval later; and the sample after that comes at the interval.
func TestQueueSampledAsSoonAsItFillsAfterAnEmptySample(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("exports", "exports-dlq", 5)
	c := e.collector(func(o *Options) { o.Peek.Sources = []string{"exports"} })
	must(t, c.Discover(e.ctx))
	must(t, c.PeekDue(e.ctx))
	first, _ := e.latestMessages("exports")
	if first.Seen != 0 || first.Kind != "source" {
		t.Fatalf("first sample = %+v; want an empty source sample", first)
	}
	e.advance(time.Minute)
	for i := range 3 {
		e.send(srcURL, toolCallBody("export_csv", i, "s"))
	}
	must(t, c.CycleAttributes(e.ctx))
	e.advance(peekDueCheck)
	must(t, c.PeekDue(e.ctx))
	filled, _ := e.latestMessages("exports")
	if filled.Seen != 3 || filled.ID == first.ID {
		t.Fatalf("after it filled: %+v; want a sample of the 3 messages", filled)
	}
	if since := e.clock.Now().Sub(first.At); since >= DefaultPeekSourceInterval {
		t.Fatalf("%v of clock since the first sample: not a check of early sampling", since)
	}
	e.advance(peekDueCheck)
	must(t, c.CycleAttributes(e.ctx))
	must(t, c.PeekDue(e.ctx))
	if again, _ := e.latestMessages("exports"); again.ID != filled.ID {
		t.Errorf("sampled again %v after the sample that found messages; want the interval", again.At.Sub(filled.At))
	}
}
