package live

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/events"
)

// testHub is a hub whose timers the test fires, with a renderer that counts its calls. Its view
// type is a string, as a page's filter would be.
type testHub struct {
	*Hub[string]
	timers  chan chan time.Time // each coalescing timer the hub asked for
	tick    chan time.Time
	renders atomic.Int64
	mu      sync.Mutex
	changes []Changes
	block   chan struct{} // when not nil, a rendering waits for it
	// custom, when set, renders instead of the counting renderer.
	custom func(ctx context.Context, sub Subscription[string], changes Changes, memo any) (Push, error)
}

func newTestHub(t testing.TB, buffer int) *testHub {
	t.Helper()
	th := &testHub{timers: make(chan chan time.Time, 64), tick: make(chan time.Time)}
	th.Hub = New(Options[string]{
		Render: func(ctx context.Context, sub Subscription[string], changes Changes, memo any) (Push, error) {
			th.mu.Lock()
			block, custom := th.block, th.custom
			th.mu.Unlock()
			if custom != nil {
				return custom(ctx, sub, changes, memo)
			}
			if block != nil {
				<-block
			}
			n := th.renders.Add(1)
			th.mu.Lock()
			th.changes = append(th.changes, changes)
			th.mu.Unlock()
			return Whole(fmt.Appendf(nil, `<p id="x">%s %s render %d</p>`, sub.Topic, sub.View, n)), nil
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
	t.Cleanup(func() { _ = th.Close(context.Background()) })
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
func (th *testHub) subscribe(t testing.TB, topic Topic, view string) *client[string] {
	t.Helper()
	c := th.newClient(Subscription[string]{Topic: topic, View: view})
	if err := th.attach(c, 0); err != nil {
		t.Fatal(err)
	}
	return c
}

// receive returns the next push of a client, failing after a generous bound: its one message
// (the test hub's pushes have one each).
func receive(t *testing.T, c *client[string]) []byte {
	t.Helper()
	select {
	case msg, ok := <-c.send:
		if !ok {
			t.Fatal("the client was dropped")
		}
		if len(msg.data) != 1 {
			t.Fatalf("a push of %d messages, want one", len(msg.data))
		}
		return msg.data[0]
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
	return nil
}

func TestHubSendsOneRenderingToEverySubscriber(t *testing.T) {
	th := newTestHub(t, 4)
	a := th.subscribe(t, Overview(), "")
	b := th.subscribe(t, Overview(), "")
	other := th.subscribe(t, Queue(7), "")
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
	if got := th.Clients(); got != 3 {
		t.Errorf("Clients = %d, want 3", got)
	}
}

func TestHubCoalescesBursts(t *testing.T) {
	th := newTestHub(t, 4)
	c := th.subscribe(t, Queue(1), "")
	th.fire(t)
	receive(t, c)
	th.renders.Store(0)
	for range 20 {
		th.Notify(events.Event{Kind: events.SampleTaken, QueueID: 1})
	}
	th.Notify(events.Event{Kind: events.MetricsChanged})
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
	last := th.changes[len(th.changes)-1]
	th.mu.Unlock()
	if !last[events.SampleTaken] || !last[events.MetricsChanged] {
		t.Errorf("changes = %v, want both kinds of the burst", last)
	}
}

// TestHubRendersOffItsLoop: while a rendering is slow, the hub goroutine still takes new
// clients, events and drops; the rendering's bytes arrive when it is done.
func TestHubRendersOffItsLoop(t *testing.T) {
	th := newTestHub(t, 4)
	block := make(chan struct{})
	th.mu.Lock()
	th.block = block
	th.mu.Unlock()
	a := th.subscribe(t, Overview(), "")
	th.fire(t) // a's connect push starts rendering, and blocks
	registered := make(chan *client[string])
	go func() { registered <- th.subscribe(t, Audit(), "") }()
	select {
	case <-registered:
	case <-time.After(5 * time.Second):
		t.Fatal("a registration waited for a rendering")
	}
	th.Notify(events.Event{Kind: events.SnapshotBuilt}) // taken while the rendering runs
	th.mu.Lock()
	th.block = nil
	th.mu.Unlock()
	close(block)
	receive(t, a)
}

func TestHubDropsSlowClientOnly(t *testing.T) {
	th := newTestHub(t, 2)
	slow := th.subscribe(t, Overview(), "")
	fast := th.subscribe(t, Overview(), "")
	th.fire(t)
	receive(t, fast)
	// The slow client never reads: its buffer of 2 fills, and the third push drops it.
	for range 4 {
		th.Notify(events.Event{Kind: events.SnapshotBuilt})
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
	if slow.closeCode != CloseTryAgainLater {
		t.Errorf("slow client close code = %d, want %d", slow.closeCode, CloseTryAgainLater)
	}
	if n := th.Clients(); n != 1 {
		t.Errorf("Clients = %d, want 1", n)
	}
}

func TestHubPushesFreshnessToEveryone(t *testing.T) {
	th := newTestHub(t, 4)
	a := th.subscribe(t, Audit(), "")
	b := th.subscribe(t, Queue(3), "")
	th.fire(t)
	receive(t, a)
	receive(t, b)
	th.tick <- time.Now()
	for _, c := range []*client[string]{a, b} {
		if msg := receive(t, c); !bytes.Contains(msg, []byte(`id="freshness"`)) {
			t.Errorf("push = %s, want the freshness", msg)
		}
	}
}

func TestTopicsOfEvents(t *testing.T) {
	tests := []struct {
		name string
		ev   events.Event
		want []Topic // of Overview, Audit, Queue(2), Queue(5)
	}{
		{"a new snapshot", events.Event{Kind: events.SnapshotBuilt}, []Topic{Overview(), Queue(2), Queue(5)}},
		// The overview follows the snapshot alone: a raw change reaches it through the next one.
		{"queues changed", events.Event{Kind: events.QueuesChanged, QueueID: 2}, nil},
		{"every queue's metrics", events.Event{Kind: events.MetricsChanged}, []Topic{Queue(2), Queue(5)}},
		{"sample", events.Event{Kind: events.SampleTaken, QueueID: 5}, []Topic{Queue(5)}},
		{"move task", events.Event{Kind: events.MoveTasksChanged, QueueID: 2}, []Topic{Queue(2)}},
		{"audit", events.Event{Kind: events.AuditAppended}, []Topic{Audit()}},
		{"unknown", events.Event{Kind: "other"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []Topic
			for _, topic := range []Topic{Overview(), Audit(), Queue(2), Queue(5)} {
				if topic.affects(tt.ev) {
					got = append(got, topic)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("affected topics = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseTopic(t *testing.T) {
	for _, topic := range []Topic{Overview(), Audit(), Queue(42)} {
		got, err := ParseTopic(topic.String())
		if err != nil || got != topic {
			t.Errorf("ParseTopic(%q) = %v, %v", topic.String(), got, err)
		}
	}
	for _, bad := range []string{"", "queue:", "queue:0", "queue:-1", "queue:x", "Overview", "queue:1:2"} {
		if _, err := ParseTopic(bad); err == nil {
			t.Errorf("ParseTopic(%q) succeeded", bad)
		}
	}
}

func TestHubRendersOncePerView(t *testing.T) {
	th := newTestHub(t, 4)
	views := []string{"", "dir=desc&sort=name", "dir=desc&sort=name", "q=web"}
	clients := make([]*client[string], len(views))
	for i, v := range views {
		clients[i] = th.subscribe(t, Overview(), v)
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

func TestHubCloseEndsClients(t *testing.T) {
	th := newTestHub(t, 4)
	c := th.subscribe(t, Overview(), "")
	if err := th.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for range c.send {
	}
	if c.closeCode != CloseServiceRestart {
		t.Errorf("close code = %d, want %d (browsers reconnect)", c.closeCode, CloseServiceRestart)
	}
	if err := th.attach(th.newClient(Subscription[string]{Topic: Overview()}), 0); err == nil {
		t.Error("attach after close succeeded")
	}
}

// TestServeRealWebsockets: connections served through the real pumps get the pushes (framed once,
// compressed for the one that negotiated permessage-deflate), count in Clients while open and not after, end with the credential check's code, and end with 1012 when
// the hub closes.
func TestServeRealWebsockets(t *testing.T) {
	th := newTestHub(t, 4)
	var ended atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := (&websocket.Upgrader{EnableCompression: true}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		o := ConnOptions{Recheck: 10 * time.Millisecond}
		if r.URL.Query().Get("checked") == "1" {
			o.Credential = func(context.Context) int {
				if ended.Load() {
					return 4001
				}
				return 0
			}
		}
		_ = th.Serve(conn, Subscription[string]{Topic: Overview()}, o)
	}))
	defer srv.Close()
	dial := func(query string) *websocket.Conn {
		t.Helper()
		dialer := *websocket.DefaultDialer
		dialer.EnableCompression = strings.Contains(query, "deflate=1")
		conn, _, err := dialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/?"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	waitClients := func(n int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for th.Clients() != n {
			if time.Now().After(deadline) {
				t.Fatalf("Clients = %d, want %d", th.Clients(), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	plain, checked := dial("deflate=1"), dial("checked=1") // one compressed, one not
	waitClients(2)
	th.fire(t)
	for _, conn := range []*websocket.Conn{plain, checked} {
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, msg, err := conn.ReadMessage(); err != nil || !bytes.Contains(msg, []byte("overview")) {
			t.Fatalf("push = %q, %v", msg, err)
		}
	}
	ended.Store(true)
	checked.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := checked.ReadMessage(); !websocket.IsCloseError(err, 4001) {
		t.Errorf("after its credential ended: %v, want close 4001", err)
	}
	waitClients(1)
	if err := th.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	plain.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := plain.ReadMessage(); !websocket.IsCloseError(err, CloseServiceRestart) {
		t.Errorf("after Close: %v, want close %d", err, CloseServiceRestart)
	}
	if n := th.Clients(); n != 0 {
		t.Errorf("Clients after Close = %d", n)
	}
}

// TestHubSendsUpdatesToSyncedAndFullToJoiners: a client that had every push of its view gets
// what changed; one that joined since gets the whole view once, then the updates; an empty
// update sends nothing; each rendering gets the previous one's memo.
// TestHubSendsEveryMessageOfAPush: a push of several messages reaches a client as its messages,
// in order, empty ones left out, framed once for every client.
func TestHubSendsEveryMessageOfAPush(t *testing.T) {
	th := newTestHub(t, 4)
	th.mu.Lock()
	th.custom = func(ctx context.Context, sub Subscription[string], changes Changes, memo any) (Push, error) {
		msgs := [][]byte{[]byte("rows"), nil, []byte("parts")}
		return Push{Update: msgs, Full: msgs}, nil
	}
	th.mu.Unlock()
	a, b := th.subscribe(t, Overview(), ""), th.subscribe(t, Overview(), "")
	th.fire(t)
	var got [2]*message
	for i, c := range []*client[string]{a, b} {
		select {
		case got[i] = <-c.send:
		case <-time.After(5 * time.Second):
			t.Fatal("no push")
		}
	}
	if got[0] != got[1] || len(got[0].prepared) != 2 || string(got[0].data[0]) != "rows" || string(got[0].data[1]) != "parts" {
		t.Errorf("pushes %q and %q, want one push of [rows parts] for both", got[0].data, got[1].data)
	}
}

func TestHubSendsUpdatesToSyncedAndFullToJoiners(t *testing.T) {
	th := newTestHub(t, 8)
	var memos []any
	var updates []string // the next renderings' updates, in order
	th.mu.Lock()
	th.custom = func(ctx context.Context, sub Subscription[string], changes Changes, memo any) (Push, error) {
		th.mu.Lock()
		defer th.mu.Unlock()
		memos = append(memos, memo)
		n := len(memos)
		u := updates[0]
		updates = updates[1:]
		return Push{Update: [][]byte{[]byte(u)}, Full: [][]byte{fmt.Appendf(nil, "full %d", n)}, Memo: n}, nil
	}
	updates = []string{"", "update 2", "", "update 4"}
	th.mu.Unlock()

	a := th.subscribe(t, Overview(), "")
	th.fire(t)
	if got := string(receive(t, a)); got != "full 1" {
		t.Fatalf("first push to a = %q, want the full view", got)
	}
	th.Notify(events.Event{Kind: events.SnapshotBuilt})
	th.fire(t)
	if got := string(receive(t, a)); got != "update 2" {
		t.Fatalf("second push to a = %q, want the update", got)
	}
	b := th.subscribe(t, Overview(), "") // its connect push: a full view for b, an empty update for a
	th.fire(t)
	if got := string(receive(t, b)); got != "full 3" {
		t.Fatalf("first push to b = %q, want the full view", got)
	}
	th.Notify(events.Event{Kind: events.SnapshotBuilt})
	th.fire(t)
	for name, c := range map[string]*client[string]{"a": a, "b": b} {
		if got := string(receive(t, c)); got != "update 4" {
			t.Errorf("push to %s = %q, want update 4 (a got nothing from the empty update)", name, got)
		}
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	if fmt.Sprint(memos) != "[<nil> 1 2 3]" {
		t.Errorf("memos given = %v, want [<nil> 1 2 3]", memos)
	}
}
