package server

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/web/templates"
)

// testHub is a hub whose timers the test fires, with a renderer that counts its calls.
type testHub struct {
	*hub
	timers  chan chan time.Time // each coalescing timer the hub asked for
	tick    chan time.Time
	renders atomic.Int64
	mu      sync.Mutex
	kinds   []kindSet
}

func newTestHub(t testing.TB, buffer int) *testHub {
	t.Helper()
	th := &testHub{timers: make(chan chan time.Time, 64), tick: make(chan time.Time)}
	th.hub = newHub(hubOptions{
		Render: func(ctx context.Context, sub subscription, kinds kindSet) ([]byte, error) {
			n := th.renders.Add(1)
			th.mu.Lock()
			th.kinds = append(th.kinds, kinds)
			th.mu.Unlock()
			return fmt.Appendf(nil, `<p id="x">%s render %d</p>`, sub.key(), n), nil
		},
		Freshness: func(ctx context.Context) ([]byte, error) { return []byte(`<p id="freshness">now</p>`), nil },
		After: func(time.Duration) <-chan time.Time {
			ch := make(chan time.Time, 1)
			th.timers <- ch
			return ch
		},
		Tick:       th.tick,
		SendBuffer: buffer,
	})
	t.Cleanup(func() { _ = th.close(context.Background()) })
	return th
}

// fire waits for the hub to ask for a coalescing timer and fires it.
func (th *testHub) fire(t testing.TB) {
	t.Helper()
	select {
	case ch := <-th.timers:
		ch <- time.Now()
	case <-time.After(5 * time.Second):
		t.Fatal("the hub asked for no coalescing timer")
	}
}

// subscribe attaches a client without websocket pumps.
func (th *testHub) subscribe(t testing.TB, topic string) *client {
	t.Helper()
	c := th.newClient(subscription{Topic: topic})
	if err := th.attach(c, 0); err != nil {
		t.Fatal(err)
	}
	return c
}

// receive returns the next message of a client, failing after a generous bound.
func receive(t *testing.T, c *client) []byte {
	t.Helper()
	select {
	case msg, ok := <-c.send:
		if !ok {
			t.Fatal("the client was dropped")
		}
		return msg
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
	return nil
}

// eventQueuesChanged is a collector cycle's end, about every queue.
var eventQueuesChanged = events.Event{Kind: events.QueuesChanged}

func TestHubSendsOneRenderingToEverySubscriber(t *testing.T) {
	th := newTestHub(t, 4)
	a := th.subscribe(t, topicOverview)
	b := th.subscribe(t, topicOverview)
	other := th.subscribe(t, queueTopic(7))
	th.fire(t) // the connect pushes, coalesced into one flush
	ma, mb := receive(t, a), receive(t, b)
	receive(t, other)
	if !bytes.Equal(ma, mb) {
		t.Fatalf("subscribers got different bytes:\n%s\n%s", ma, mb)
	}
	if &ma[0] != &mb[0] {
		t.Error("subscribers got two renderings, want one shared")
	}
	if got := th.renders.Load(); got != 2 {
		t.Errorf("renders = %d, want 2 (one per topic)", got)
	}
	if got := th.clientCount(); got != 3 {
		t.Errorf("clientCount = %d, want 3", got)
	}
}

func TestHubCoalescesBursts(t *testing.T) {
	th := newTestHub(t, 4)
	c := th.subscribe(t, topicOverview)
	th.fire(t)
	receive(t, c)
	th.renders.Store(0)
	for i := 0; i < 20; i++ {
		th.notify(events.Event{Kind: events.QueuesChanged, QueueID: int64(i + 1)})
	}
	th.notify(events.Event{Kind: events.MetricsChanged})
	th.fire(t)
	receive(t, c)
	if got := th.renders.Load(); got != 1 {
		t.Errorf("renders after a burst of 21 events = %d, want 1", got)
	}
	select {
	case <-th.timers:
		t.Error("the burst asked for a second timer")
	default:
	}
	th.mu.Lock()
	last := th.kinds[len(th.kinds)-1]
	th.mu.Unlock()
	if !last[events.QueuesChanged] || !last[events.MetricsChanged] {
		t.Errorf("kinds = %v, want both kinds of the burst", last)
	}
}

func TestHubDropsSlowClientOnly(t *testing.T) {
	th := newTestHub(t, 2)
	slow := th.subscribe(t, topicOverview)
	fast := th.subscribe(t, topicOverview)
	th.fire(t)
	receive(t, fast)
	// The slow client never reads: its buffer of 2 fills, and the third push drops it.
	for i := 0; i < 4; i++ {
		th.notify(events.Event{Kind: events.QueuesChanged})
		th.fire(t)
		receive(t, fast)
	}
	var got int
	for range slow.send { // buffered messages, then closed
		got++
	}
	if got != 2 {
		t.Errorf("slow client got %d messages before being dropped, want its buffer (2)", got)
	}
	if slow.closeCode != closeTryAgainLater {
		t.Errorf("slow client close code = %d, want %d", slow.closeCode, closeTryAgainLater)
	}
	if n := th.clientCount(); n != 1 {
		t.Errorf("clientCount = %d, want 1", n)
	}
	th.notify(events.Event{Kind: events.QueuesChanged})
	th.fire(t)
	receive(t, fast)
}

func TestHubPushesFreshnessToEveryone(t *testing.T) {
	th := newTestHub(t, 4)
	a := th.subscribe(t, topicAudit)
	b := th.subscribe(t, queueTopic(3))
	th.fire(t)
	receive(t, a)
	receive(t, b)
	th.tick <- time.Now()
	for _, c := range []*client{a, b} {
		if msg := receive(t, c); !bytes.Contains(msg, []byte(`id="freshness"`)) {
			t.Errorf("push = %s, want the freshness", msg)
		}
	}
}

func TestHubTopicsOfEvents(t *testing.T) {
	th := newTestHub(t, 4)
	th.subscribe(t, queueTopic(5))
	th.fire(t)
	tests := []struct {
		name string
		ev   events.Event
		want []string
	}{
		{"one queue changed", events.Event{Kind: events.QueuesChanged, QueueID: 2}, []string{"queue:2", "overview"}},
		{"every queue changed", events.Event{Kind: events.MetricsChanged}, []string{"queue:5", "overview"}},
		{"sample", events.Event{Kind: events.SampleTaken, QueueID: 9}, []string{"queue:9"}},
		{"move task", events.Event{Kind: events.MoveTasksChanged, QueueID: 4}, []string{"queue:4", "overview"}},
		{"audit", events.Event{Kind: events.AuditAppended}, []string{"audit"}},
		{"unknown", events.Event{Kind: "other"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// topicsOf reads the clients, which only the hub goroutine may: ask it through an event
			// would be indirect, so compare after the hub is idle (all calls above returned).
			got := fmt.Sprint(th.topicsOf(tt.ev))
			if want := fmt.Sprint(tt.want); got != want {
				t.Errorf("topicsOf = %s, want %s", got, want)
			}
		})
	}
}

func TestHubCloseEndsClients(t *testing.T) {
	th := newTestHub(t, 4)
	c := th.subscribe(t, topicOverview)
	if err := th.close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range c.send {
	}
	if c.closeCode != closeServiceRestart {
		t.Errorf("close code = %d, want %d (browsers reconnect)", c.closeCode, closeServiceRestart)
	}
	if err := th.attach(th.newClient(subscription{Topic: topicOverview}), 0); err == nil {
		t.Error("attach after close succeeded")
	}
}

func TestSubscriptionKeySeparatesEmbedLinks(t *testing.T) {
	plain := subscription{Topic: topicOverview}
	embed := subscription{Topic: topicOverview, Nav: templates.Nav{Embed: true, EmbedToken: "t"}}
	if plain.key() == embed.key() {
		t.Error("an embedded view shares the renderings of a plain one: its links would lose embed=1")
	}
}

func TestHubRendersOncePerView(t *testing.T) {
	th := newTestHub(t, 4)
	byName := url.Values{"sort": {"name"}, "dir": {"desc"}}
	subs := []subscription{
		{Topic: topicOverview},
		{Topic: topicOverview, View: byName},
		{Topic: topicOverview, View: url.Values{"sort": {"name"}, "dir": {"desc"}}}, // same view, built apart
		{Topic: topicOverview, View: url.Values{"q": {"web"}}},
	}
	clients := make([]*client, len(subs))
	for i, sub := range subs {
		clients[i] = th.newClient(sub)
		if err := th.attach(clients[i], 0); err != nil {
			t.Fatal(err)
		}
	}
	th.fire(t)
	msgs := make([][]byte, len(clients))
	for i, c := range clients {
		msgs[i] = receive(t, c)
	}
	if got := th.renders.Load(); got != 3 {
		t.Errorf("renders = %d, want 3 (one per view)", got)
	}
	if &msgs[1][0] != &msgs[2][0] {
		t.Error("two subscribers of the same view got two renderings")
	}
	if bytes.Equal(msgs[0], msgs[1]) || bytes.Equal(msgs[1], msgs[3]) {
		t.Error("subscribers of different views share a rendering")
	}
}
