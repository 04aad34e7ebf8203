package collector

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/store"
)

func storedNames(t *testing.T, e *env, includeGone bool) []string {
	t.Helper()
	qs, err := e.store.ListQueues(e.ctx, store.QueueFilter{IncludeGone: includeGone})
	must(t, err)
	var names []string
	for _, q := range qs {
		names = append(names, q.Name)
	}
	slices.Sort(names)
	return names
}

func TestDiscoverySelection(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		prefixes []string
		queues   func(urls map[string]string) []string
		want     []string
	}{
		{"everything", nil, nil, []string{"exports", "tool-calls.fifo", "web-search"}},
		{"prefix", []string{"tool-", "web-"}, nil, []string{"tool-calls.fifo", "web-search"}},
		{"by name", nil, func(map[string]string) []string { return []string{"exports", "missing"} }, []string{"exports"}},
		{"by URL", nil, func(urls map[string]string) []string { return []string{urls["web-search"]} }, []string{"web-search"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			urls := map[string]string{}
			urls["tool-calls.fifo"], _ = e.createQueue("tool-calls.fifo", map[string]string{"FifoQueue": "true"})
			urls["web-search"], _ = e.createQueue("web-search", nil)
			urls["exports"], _ = e.createQueue("exports", nil)
			c := e.collector(func(o *Options) {
				o.QueuePrefixes = tt.prefixes
				if tt.queues != nil {
					o.Queues = tt.queues(urls)
				}
			})
			must(t, c.Discover(e.ctx))
			if got := storedNames(t, e, true); !slices.Equal(got, tt.want) {
				t.Errorf("stored queues = %v, want %v", got, tt.want)
			}
			for _, name := range tt.want {
				q := e.queueNamed(name)
				if q.AttributesAt.IsZero() || q.Attributes["QueueArn"] != q.ARN || q.Region != "us-east-1" {
					t.Errorf("%s: attributes not stored on adoption: %+v", name, q)
				}
				if q.FIFO != (name == "tool-calls.fifo") {
					t.Errorf("%s: FIFO = %v", name, q.FIFO)
				}
			}
		})
	}
}

func TestDiscoveryMarksVanishedQueuesGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keepURL, _ := e.createQueue("tc-keep", nil)
	listedURL, _ := e.createQueue("tc-listed", nil)
	sampledURL, _ := e.createQueue("tc-sampled", nil)
	c := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tc-"} })
	must(t, c.Discover(e.ctx))
	must(t, c.CycleAttributes(e.ctx))
	if got := len(c.watched()); got != 3 {
		t.Fatalf("watched %d queues, want 3", got)
	}

	// One queue disappears from the listing; another is found missing by the attribute cycle
	// before the next discovery.
	for _, u := range []string{listedURL, sampledURL} {
		_, err := e.sqs.DeleteQueue(e.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(u)})
		must(t, err)
	}
	must(t, c.CycleAttributes(e.ctx))
	if q := e.queueNamed("tc-sampled"); !q.Gone() {
		t.Errorf("tc-sampled not gone after GetQueueAttributes said it does not exist")
	}
	must(t, c.Discover(e.ctx))
	if q := e.queueNamed("tc-listed"); !q.Gone() {
		t.Errorf("tc-listed not gone after it left ListQueues")
	}
	if q := e.queueNamed("tc-keep"); q.Gone() {
		t.Errorf("tc-keep marked gone")
	}
	if got := storedNames(t, e, false); !slices.Equal(got, []string{"tc-keep"}) {
		t.Errorf("live queues = %v, want [tc-keep]", got)
	}
	// History stays: the gone queues keep their samples.
	samples, err := e.store.AttributeSeries(e.ctx, e.queueNamed("tc-listed").ID, t0.Add(-1), t0.Add(1<<40))
	must(t, err)
	if len(samples) == 0 {
		t.Errorf("gone queue lost its attribute samples")
	}
	if n := e.bus.count(events.QueuesChanged, 0); n == 0 {
		t.Errorf("no QueuesChanged event")
	}
	_ = keepURL

	// A restart does not resurrect them, and watches only what exists.
	c2 := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tc-"} })
	must(t, c2.Discover(e.ctx))
	if got := len(c2.watched()); got != 1 {
		t.Errorf("after restart watched %d queues, want 1", got)
	}
}

func TestDeadLetterPairing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, dlqARN := e.createQueue("tool-calls-dlq.fifo", map[string]string{"FifoQueue": "true"})
	_, srcARN := e.createQueue("tool-calls.fifo", map[string]string{
		"FifoQueue":     "true",
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":"4"}`,
	})
	_, outsideARN := e.createQueue("zz-web-dlq", nil)
	_, webARN := e.createQueue("web-search", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + outsideARN + `","maxReceiveCount":5}`,
	})
	// Only tool-* and web-* are selected: the web DLQ is watched because web-search uses it.
	c := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tool-", "web-"} })
	must(t, c.Discover(e.ctx))

	tests := []struct {
		queue      string
		wantTarget string
		wantMax    int
		wantSource string
	}{
		{"tool-calls.fifo", dlqARN, 4, ""},
		{"tool-calls-dlq.fifo", "", 0, srcARN},
		{"web-search", outsideARN, 5, ""},
		{"zz-web-dlq", "", 0, webARN},
	}
	for _, tt := range tests {
		t.Run(tt.queue, func(t *testing.T) {
			q := e.queueNamed(tt.queue)
			if q.DeadLetterTargetARN != tt.wantTarget || q.MaxReceiveCount != tt.wantMax {
				t.Errorf("redrive = %q/%d, want %q/%d", q.DeadLetterTargetARN, q.MaxReceiveCount, tt.wantTarget, tt.wantMax)
			}
			if tt.wantSource == "" {
				if q.IsDeadLetterQueue() {
					t.Errorf("SourceARNs = %v, want none", q.SourceARNs)
				}
				return
			}
			if !slices.Contains(q.SourceARNs, tt.wantSource) {
				t.Errorf("SourceARNs = %v, want %s", q.SourceARNs, tt.wantSource)
			}
		})
	}
	if n := e.sim.CallCount("ListDeadLetterSourceQueues"); n != 4 {
		t.Errorf("ListDeadLetterSourceQueues calls = %d, want one per queue", n)
	}
}

func TestParseRedrivePolicy(t *testing.T) {
	t.Parallel()
	const arn = "arn:aws:sqs:us-east-1:000000000000:dlq"
	tests := []struct {
		name   string
		policy string
		want   redrivePolicy
	}{
		{"empty", "", redrivePolicy{}},
		{"number", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":3}`, redrivePolicy{arn, 3}},
		{"string", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"5"}`, redrivePolicy{arn, 5}},
		{"padded string", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":" 2 "}`, redrivePolicy{arn, 2}},
		{"garbage count", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":"many"}`, redrivePolicy{arn, 0}},
		{"negative", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":-1}`, redrivePolicy{arn, 0}},
		{"float", `{"deadLetterTargetArn":"` + arn + `","maxReceiveCount":2.5}`, redrivePolicy{arn, 0}},
		{"not json", `{{{`, redrivePolicy{}},
		{"wrong types", `{"deadLetterTargetArn":7}`, redrivePolicy{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseRedrivePolicy(tt.policy); got != tt.want {
				t.Errorf("parseRedrivePolicy(%q) = %+v, want %+v", tt.policy, got, tt.want)
			}
		})
	}
}

func TestSourceARNFromURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		dlq, url, want string
	}{
		{"arn:aws:sqs:eu-west-1:111122223333:dlq", "https://sqs.eu-west-1.amazonaws.com/111122223333/src", "arn:aws:sqs:eu-west-1:111122223333:src"},
		{"arn:aws-cn:sqs:cn-north-1:111122223333:dlq", "https://sqs.cn-north-1.amazonaws.com.cn/111122223333/src.fifo", "arn:aws-cn:sqs:cn-north-1:111122223333:src.fifo"},
		{"arn:aws:sqs:us-east-1:000000000000:dlq", "http://127.0.0.1:4566/000000000000/src", "arn:aws:sqs:us-east-1:000000000000:src"},
		{"not-an-arn", "http://x/1/src", ""},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if got := sourceARNFromURL(tt.dlq, tt.url); got != tt.want {
				t.Errorf("sourceARNFromURL = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiscoveryPaginates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 1001 {
		// CreateQueue alone: createQueue's GetQueueAttributes for the ARN would double the set-up.
		if _, err := e.sqs.CreateQueue(e.ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q-%04d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	c := e.collector(nil)
	e.sim.ResetCallCounts()
	must(t, c.Discover(e.ctx))
	if n := e.sim.CallCount("ListQueues"); n != 2 {
		t.Errorf("ListQueues calls = %d, want 2 pages", n)
	}
	if n := len(c.watched()); n != 1001 {
		t.Errorf("watched %d queues, want 1001", n)
	}
}

// TestDiscoveryAdoptsEveryTier: a source's dead-letter queue and that queue's own dead-letter
// queue (a tier), both outside the selection, are watched after one discovery; after a restart
// they are resumed from the store without a call, like the listed queues.
func TestDiscoveryAdoptsEveryTier(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, last := e.createQueue("zz-tier2", nil)
	_, tier := e.createQueue("zz-tier1", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, last),
	})
	e.createQueue("tc-source", map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, tier),
	})
	selection := func(o *Options) { o.QueuePrefixes = []string{"tc-"} }
	must(t, e.collector(selection).Discover(e.ctx))
	if got, want := storedNames(t, e, false), []string{"tc-source", "zz-tier1", "zz-tier2"}; !slices.Equal(got, want) {
		t.Fatalf("after one discovery the store holds %v; want %v", got, want)
	}

	e.sim.ResetCallCounts()
	c := e.collector(selection)
	must(t, c.Discover(e.ctx))
	if n := len(c.watched()); n != 3 {
		t.Errorf("after a restart %d queues are watched; want 3", n)
	}
	for _, op := range []string{"GetQueueUrl", "GetQueueAttributes"} {
		if n := e.sim.CallCount(op); n != 0 {
			t.Errorf("a restart's discovery made %d %s calls; want none (the store knows every queue)", n, op)
		}
	}
	must(t, c.CycleAttributes(e.ctx))
	if n := e.sim.CallCount("GetQueueAttributes"); n != 3 {
		t.Errorf("the first attribute cycle after a restart made %d GetQueueAttributes; want 3", n)
	}
}

// TestDiscoveryStoreReadsDoNotGrowWithTheFleet counts the store's statements per method in a
// discovery of a fresh fleet and after a restart, at two sizes: each method that reads all the
// queues (ListQueues, the newest depths and samples) runs the same number of times whatever the
// fleet, and no single-queue lookup runs at all. Before, every adoption looked its queue up,
// and each lookup read every redrive pair.
func TestDiscoveryStoreReadsDoNotGrowWithTheFleet(t *testing.T) {
	t.Parallel()
	type counts map[string]int
	discoveries := func(t *testing.T, pairs int) (fresh, restart counts) {
		e := newEnv(t)
		for i := range pairs {
			e.createPair(fmt.Sprintf("fleet-%03d", i), fmt.Sprintf("fleet-%03d-dlq", i), 3)
		}
		var mu sync.Mutex
		got := counts{}
		e.store.Trace(func(st store.Statement) {
			if len(st.Methods) > 0 {
				mu.Lock()
				got[st.Methods[0]]++
				mu.Unlock()
			}
		})
		must(t, e.collector(nil).Discover(e.ctx))
		fresh, got = got, counts{}
		must(t, e.collector(nil).Discover(e.ctx))
		e.store.Trace(nil)
		return fresh, got
	}
	small, smallRestart := discoveries(t, 5)
	large, largeRestart := discoveries(t, 20)
	for _, tt := range []struct {
		name         string
		small, large counts
	}{{"fresh", small, large}, {"restart", smallRestart, largeRestart}} {
		for _, lookup := range []string{"GetQueue", "GetQueueByARN", "GetQueuesByName", "ResolveQueue", "LatestSample"} {
			if n := tt.large[lookup]; n != 0 {
				t.Errorf("%s discovery: %d statements of %s; want none", tt.name, n, lookup)
			}
		}
		for _, whole := range []string{"ListQueues", "LatestAttributeSamples", "LatestSamples"} {
			if tt.small[whole] != tt.large[whole] {
				t.Errorf("%s discovery: %s ran %d statements for 10 queues, %d for 40; want the same", tt.name, whole, tt.small[whole], tt.large[whole])
			}
		}
	}
	if n := large["ListQueues"]; n == 0 || n > 3 {
		t.Errorf("fresh discovery: ListQueues ran %d statements; want its queues and two pair reads", n)
	}
	if n := largeRestart["UpsertQueue"] + largeRestart["SaveQueueAttributes"]; n != 0 {
		t.Errorf("restart: %d statements writing queues; want none (the store knows them all)", n)
	}
}

// TestDiscoveryKeepsAQueueAtANewURL: a queue stored at another URL (an earlier run reached the
// endpoint by another address) is adopted again by its ARN, never marked gone.
func TestDiscoveryKeepsAQueueAtANewURL(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	u, _ := e.createQueue("tc-moved", nil)
	c := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tc-"} })
	must(t, c.Discover(e.ctx))
	q := e.queueNamed("tc-moved")
	q.URL = strings.Replace(u, "127.0.0.1", "localhost", 1)
	if q.URL == u {
		q.URL = u + "-elsewhere"
	}
	_, err := e.store.UpsertQueue(e.ctx, q)
	must(t, err)
	c2 := e.collector(func(o *Options) { o.QueuePrefixes = []string{"tc-"} })
	must(t, c2.Discover(e.ctx))
	if got := e.queueNamed("tc-moved"); got.Gone() {
		t.Errorf("the queue stored at %s was marked gone when listed at %s", q.URL, u)
	}
}
