package server

import (
	"bufio"
	"bytes"
	"compress/flate"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/toolq/toolq/internal/actions"
	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/views"
	"github.com/toolq/toolq/web/static"
	"github.com/toolq/toolq/web/templates"
)

// fleetWorld is the real server over a store that holds what the collector would have stored
// for a fleet of source queues, each with its dead-letter queue, after an hour: every queue's
// attributes as SQS returns them, an hour of 15-s depth samples, an age-of-oldest-message
// datapoint a minute for the sources, and a sample of five messages of each dead-letter queue.
// Its views follow its bus, as app.New wires them, and build the next snapshot once a cycle
// published its change.
type fleetWorld struct {
	*actionstest.World
	srv     *Server
	bus     *events.Bus
	handler http.Handler
	ids     []int64 // every queue's id, sources and DLQs alternately
	queues  []fleetQueue
}

// fleetQueue is what the fleet's cycles write of a queue: its attributes as SQS returns them.
type fleetQueue struct {
	id        int64
	name, dlq string // dlq: its dead-letter queue's name, "" for a DLQ
	fifo      bool
}

// sqsAttributes are the attributes GetQueueAttributes(All) returns for a queue of the fleet.
func sqsAttributes(name string, fifo bool, dlq string, visible int64) map[string]string {
	a := map[string]string{
		"QueueArn":                              "arn:aws:sqs:us-east-1:000000000000:" + name,
		"ApproximateNumberOfMessages":           strconv.FormatInt(visible, 10),
		"ApproximateNumberOfMessagesNotVisible": "2",
		"ApproximateNumberOfMessagesDelayed":    "0",
		"CreatedTimestamp":                      "1764460000",
		"LastModifiedTimestamp":                 "1764460000",
		"VisibilityTimeout":                     "30",
		"MaximumMessageSize":                    "262144",
		"MessageRetentionPeriod":                "345600",
		"DelaySeconds":                          "0",
		"ReceiveMessageWaitTimeSeconds":         "20",
		"SqsManagedSseEnabled":                  "true",
	}
	if fifo {
		a["FifoQueue"] = "true"
		a["ContentBasedDeduplication"] = "false"
		a["DeduplicationScope"] = "messageGroup"
		a["FifoThroughputLimit"] = "perMessageGroupId"
	}
	if dlq != "" {
		a["RedrivePolicy"] = `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:` + dlq + `","maxReceiveCount":5}`
	} else {
		a["MessageRetentionPeriod"] = "1209600"
		a["RedriveAllowPolicy"] = `{"redrivePermission":"allowAll"}`
	}
	return a
}

// newFleetWorld builds the fleet: pairs sources (half of them FIFO) and their DLQs, of which
// the first busy pairs' depths moved over the hour and the others' stayed, as in a fleet where
// most tool calls go to a few queues.
func newFleetWorld(b testing.TB, pairs, busy int) *fleetWorld {
	b.Helper()
	return newFleetWorldOn(b, actionstest.New(b), pairs, busy)
}

// newFleetWorldOn is newFleetWorld in the world w (on a database of the caller's choice).
func newFleetWorldOn(b testing.TB, w *actionstest.World, pairs, busy int) *fleetWorld {
	b.Helper()
	ctx := context.Background()
	now := w.Now()
	fw := &fleetWorld{World: w, bus: events.NewBus()}
	// Every read after a change waits for the snapshot that has it, so that each measured page
	// reads the cycle stored before it (Run builds it as soon in the server).
	w.Views = views.New(views.Options{Store: w.Store, Now: w.Clock.Now, Changes: fw.bus, Lag: -1})
	var history []store.AttributeSample
	var ages []store.MetricPoint
	for i := range pairs {
		fifo := i%2 == 0
		suffix := ""
		if fifo {
			suffix = ".fifo"
		}
		src, dlq := fmt.Sprintf("tool-calls-%04d%s", i, suffix), fmt.Sprintf("tool-calls-%04d-dlq%s", i, suffix)
		for _, q := range []struct {
			name, dlq string
			visible   int64
		}{{src, dlq, int64(i % 40)}, {dlq, "", int64(i % 3)}} {
			arn := "arn:aws:sqs:us-east-1:000000000000:" + q.name
			id, err := w.Store.UpsertQueue(ctx, store.Queue{Region: actionstest.Region, Name: q.name, ARN: arn,
				URL: "https://sqs.us-east-1.amazonaws.com/000000000000/" + q.name, FIFO: fifo, FirstSeen: now.Add(-2 * time.Hour), LastSeen: now})
			if err != nil {
				b.Fatal(err)
			}
			fw.ids = append(fw.ids, id)
			fw.queues = append(fw.queues, fleetQueue{id: id, name: q.name, dlq: q.dlq, fifo: fifo})
			for k := 240; k > 0; k-- {
				moved := int64(0)
				if i < busy {
					moved = int64(k % 5)
				}
				history = append(history, store.AttributeSample{QueueID: id, At: now.Add(-time.Duration(k) * 15 * time.Second),
					Visible: q.visible + moved, InFlight: 2})
			}
			if q.dlq != "" {
				for k := 60; k > 0; k-- {
					ages = append(ages, store.MetricPoint{QueueID: id, Metric: "ApproximateAgeOfOldestMessage",
						At: now.Add(-time.Duration(k) * time.Minute), Period: 60, Value: float64(30 + k)})
				}
			}
			fw.saveAttributes(b, fw.queues[len(fw.queues)-1], now, q.visible)
			if q.dlq == "" {
				var msgs []store.SampledMessage
				for m := range 5 {
					body := fmt.Sprintf(`{"toolCallId":"tc_%d_%d","toolName":"create_document","sessionId":"sess_%d"}`, i, m, m)
					msgs = append(msgs, store.SampledMessage{MessageID: fmt.Sprintf("m-%d-%d", i, m), ReceiveCount: 5,
						SentAt: now.Add(-time.Hour), Body: body, BodySize: len(body), ToolName: "create_document",
						DeadLetterSourceARN: "arn:aws:sqs:us-east-1:000000000000:" + src})
				}
				if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: id, Kind: store.SampleDeadLetter, At: now.Add(-30 * time.Second),
					Seen: 5, ApproxVisible: 5, Receives: 1, MessagesTaken: 5}, msgs, nil); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	if err := w.Store.SaveAttributeSamples(ctx, history); err != nil {
		b.Fatal(err)
	}
	if err := w.Store.UpsertMetricPoints(ctx, ages); err != nil {
		b.Fatal(err)
	}
	run, err := w.Store.StartRun(ctx, store.RunAttributes, now.Add(-time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Store.FinishRun(ctx, store.CollectorRun{ID: run, Kind: store.RunAttributes, StartedAt: now.Add(-time.Second), FinishedAt: now, Queues: 2 * pairs, Calls: 2 * pairs}); err != nil {
		b.Fatal(err)
	}
	srv, err := New(Options{Views: w.Views, Actions: w.Actions(actions.Options{}), Bus: fw.bus, Now: w.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close(context.Background()) })
	fw.srv, fw.handler = srv, srv.Handler()
	return fw
}

// saveAttributes stores q's attributes as SQS returns them with visible messages, and its depth
// sample, as the collector does with each GetQueueAttributes answer.
func (fw *fleetWorld) saveAttributes(b testing.TB, q fleetQueue, at time.Time, visible int64) {
	b.Helper()
	target, mrc := "", 0
	if q.dlq != "" {
		target, mrc = "arn:aws:sqs:us-east-1:000000000000:"+q.dlq, 5
	}
	if err := fw.Store.SaveQueueAttributes(context.Background(), store.QueueAttributes{QueueID: q.id, At: at,
		Attributes: sqsAttributes(q.name, q.fifo, q.dlq, visible), DeadLetterTargetARN: target, MaxReceiveCount: mrc,
		Depth: store.AttributeSample{Visible: visible, InFlight: 2}}); err != nil {
		b.Fatal(err)
	}
}

// cycle stores what an attribute cycle would, as the collector does: every queue's attributes
// as SQS returns them with its depth sample, n sources of them with a new depth (their health
// and so the rows' order stay), 15 s after the previous cycle; then it publishes the change, and
// returns when it did.
func (fw *fleetWorld) cycle(b testing.TB, n int) time.Time {
	b.Helper()
	fw.Advance(15 * time.Second)
	now := fw.Now()
	ctx := context.Background()
	for i, q := range fw.queues {
		v := int64(i / 2 % 40) // the depth newFleetWorld gave it
		if i%2 == 1 {
			v = int64(i / 2 % 3)
		} else if i < 2*n {
			v += now.Unix() % 7
		}
		fw.saveAttributes(b, q, now, v)
	}
	run, err := fw.Store.StartRun(ctx, store.RunAttributes, now.Add(-time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := fw.Store.FinishRun(ctx, store.CollectorRun{ID: run, Kind: store.RunAttributes, StartedAt: now.Add(-time.Second), FinishedAt: now, Queues: len(fw.ids), Calls: len(fw.ids)}); err != nil {
		b.Fatal(err)
	}
	published := time.Now()
	fw.bus.Publish(events.Event{Kind: events.QueuesChanged, At: now})
	return published
}

// snapshot builds the snapshot of what was stored, as the views' Run does after a change.
func (fw *fleetWorld) snapshot(b testing.TB) *views.Snapshot {
	b.Helper()
	snap, err := fw.Views.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return snap
}

// benchPairs1000 is 1,000 queues: 500 sources, each with its DLQ; benchBusy of them busy.
const (
	benchPairs1000 = 500
	benchBusy      = 100
)

// reportPercentiles reports the p50 and p99 of durations in milliseconds.
func reportPercentiles(b *testing.B, name string, d []time.Duration) {
	b.Helper()
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / float64(time.Millisecond) }
	b.ReportMetric(at(0.50), name+"-p50-ms")
	b.ReportMetric(at(0.99), name+"-p99-ms")
}

// deflateSize is the size of b as permessage-deflate sends it (gorilla's level 1).
func deflateSize(b []byte) int {
	var buf bytes.Buffer
	zw, _ := flate.NewWriter(&buf, flate.BestSpeed)
	zw.Write(b)
	zw.Close()
	return buf.Len()
}

// BenchmarkFleetOverviewPage is GET / of 1,000 queues with an hour of history through the router,
// gzipped as a browser asks, an attribute cycle stored and its snapshot built before each pair
// of requests, as the pages are read between cycles: the first page after a snapshot renders
// its rows (in the server a push usually has), the second writes them as rendered. It reports
// the page's size as sent (gzip, and brotli for a client that asks for it alone) and the
// JavaScript a first visit loads.
func BenchmarkFleetOverviewPage(b *testing.B) {
	fw := newFleetWorld(b, benchPairs1000, benchBusy)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	fw.handler.ServeHTTP(httptest.NewRecorder(), req)
	var first, again []time.Duration
	var sent, raw int
	for b.Loop() {
		b.StopTimer()
		fw.cycle(b, 100)
		fw.snapshot(b)
		b.StartTimer()
		for _, took := range []*[]time.Duration{&first, &again} {
			start := time.Now()
			rec := httptest.NewRecorder()
			fw.handler.ServeHTTP(rec, req)
			*took = append(*took, time.Since(start))
			if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" {
				b.Fatalf("status %d, encoding %q", rec.Code, rec.Header().Get("Content-Encoding"))
			}
			sent = rec.Body.Len()
		}
	}
	b.StopTimer()
	rec := httptest.NewRecorder()
	fw.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	raw = rec.Body.Len()
	brotliReq := httptest.NewRequest(http.MethodGet, "/", nil)
	brotliReq.Header.Set("Accept-Encoding", "br")
	rec = httptest.NewRecorder()
	start := time.Now()
	fw.handler.ServeHTTP(rec, brotliReq)
	b.ReportMetric(float64(time.Since(start))/float64(time.Millisecond), "page-br-ms")
	b.ReportMetric(float64(rec.Body.Len())/1024, "page-br-KB")
	reportPercentiles(b, "first", first)
	reportPercentiles(b, "page", again)
	b.ReportMetric(float64(sent)/1024, "page-gzip-KB")
	b.ReportMetric(float64(raw)/1024, "page-raw-KB")
	js, jsGzip := 0, 0
	for _, name := range []string{"htmx.min.js", "ws.js", "app.js"} {
		for _, enc := range []string{"", "gzip"} {
			r := httptest.NewRequest(http.MethodGet, static.URL(name), nil)
			if enc != "" {
				r.Header.Set("Accept-Encoding", enc)
			}
			rec := httptest.NewRecorder()
			fw.handler.ServeHTTP(rec, r)
			if enc == "" {
				js += rec.Body.Len()
			} else {
				jsGzip += rec.Body.Len()
			}
		}
	}
	b.ReportMetric(float64(js)/1024, "js-raw-KB")
	b.ReportMetric(float64(jsGzip)/1024, "js-gzip-KB")
}

// BenchmarkFleetOverviewPush is one overview push of 1,000 queues after an attribute cycle in
// which 100 queues changed depth: what the hub renders once for all the subscribers of a view,
// the snapshot built before. In a fleet of 100 busy pairs and in one where every queue's depth
// moved over the hour, it reports the updates' sizes, median and largest (a minute's turn: the
// sparklines that moved; raw and as permessage-deflate sends them), and the whole table's, which
// a page that just subscribed gets.
func BenchmarkFleetOverviewPush(b *testing.B) {
	for _, busy := range []int{benchBusy, benchPairs1000} {
		b.Run(fmt.Sprintf("busy=%d", 2*busy), func(b *testing.B) { benchmarkOverviewPush(b, busy) })
	}
}

func benchmarkOverviewPush(b *testing.B, busy int) {
	fw := newFleetWorld(b, benchPairs1000, busy)
	ctx := context.Background()
	sub := subscriptionOf(live.Overview(), templates.Nav{}, nil)
	first, err := fw.srv.hubPush(ctx, sub, live.Changes{live.Connect: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	memo := first.Memo
	var took []time.Duration
	var updates [][]byte // each push's messages, one after another
	for b.Loop() {
		b.StopTimer()
		fw.cycle(b, 100)
		fw.snapshot(b)
		b.StartTimer()
		start := time.Now()
		p, err := fw.srv.hubPush(ctx, sub, live.Changes{events.SnapshotBuilt: true}, memo)
		took = append(took, time.Since(start))
		if err != nil {
			b.Fatal(err)
		}
		memo = p.Memo
		updates = append(updates, bytes.Join(p.Update, nil))
	}
	b.StopTimer()
	reportPercentiles(b, "push", took)
	// The median update, and the largest: a minute's turn, when every moving sparkline moves on.
	slices.SortFunc(updates, func(a, b []byte) int { return len(a) - len(b) })
	median, largest := updates[(len(updates)-1)/2], updates[len(updates)-1]
	b.ReportMetric(float64(len(median))/1024, "update-p50-raw-KB")
	b.ReportMetric(float64(deflateSize(median))/1024, "update-p50-deflate-KB")
	b.ReportMetric(float64(len(largest))/1024, "update-max-raw-KB")
	b.ReportMetric(float64(deflateSize(largest))/1024, "update-max-deflate-KB")
	full := bytes.Join(first.Full, nil)
	b.ReportMetric(float64(len(full))/1024, "full-raw-KB")
	b.ReportMetric(float64(deflateSize(full))/1024, "full-deflate-KB")
}

// BenchmarkFleetPushTo1000Websockets connects 1,000 websocket clients to the overview of 1,000
// queues, with permessage-deflate negotiated as browsers do it or without, then stores attribute
// cycles in which 100 queues change depth and publishes their event, and measures when each
// client got the push: its delivery (from the first client's receipt to each client's: the
// hub's send to all) and from the event (with the hub's 250-ms coalescing and the rendering).
// Once a minute every moving sparkline moves on and the push carries most rows; those cycles
// are stored between the measured ones. The clients run in a process of their own on the same
// two cores, and decompress what they get; the RSS reported is the server's process's, and the
// clients' apart.
//
// With clients=wire the clients negotiate permessage-deflate as browsers do but read the frames
// off the wire without inflating them, a push with rows told by its size (every fiftieth
// client inflates every message and checks that its size told right): the delivery of
// compressed pushes without a thousand browsers' inflating on the server's two cores, as
// browsers inflate on machines of their own.
func BenchmarkFleetPushTo1000Websockets(b *testing.B) {
	for _, mode := range []clientMode{clientsDeflate, clientsWire, clientsPlain} {
		b.Run(mode.String(), func(b *testing.B) { benchmarkPushToWebsockets(b, 1000, mode) })
	}
}

// clientMode is how the benchmark's websocket clients read.
type clientMode int

const (
	clientsDeflate clientMode = iota // permessage-deflate, every message inflated (gorilla's client)
	clientsWire                      // permessage-deflate, frames read off the wire, a tenth inflated
	clientsPlain                     // no compression (gorilla's client)
)

func (m clientMode) String() string {
	return [...]string{"deflate=true", "deflate=true,clients=wire", "deflate=false"}[m]
}

func benchmarkPushToWebsockets(b *testing.B, clients int, mode clientMode) {
	fw := newFleetWorld(b, benchPairs1000, benchBusy)
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { _ = fw.Views.Run(ctx); close(ran) }()
	b.Cleanup(func() { stop(); <-ran })
	srv := httptest.NewServer(fw.handler)
	b.Cleanup(srv.Close)
	// Each client notes when it got a push with rows; the benchmark waits for one note of each.
	notes, clientsPID := startWebsocketClients(b, srv.URL, clients, mode)
	wait := func(i int) time.Time {
		select {
		case at, ok := <-notes[i]:
			if !ok {
				b.Fatalf("client %d was disconnected", i)
			}
			return at
		case <-time.After(time.Minute):
			b.Fatalf("client %d got no push", i)
		}
		return time.Time{}
	}
	drain := func() {
		time.Sleep(time.Second) // what is on its way
		for _, n := range notes {
			for len(n) > 0 {
				<-n
			}
		}
	}
	for i := range clients {
		wait(i) // its connect push
	}
	drain()
	var delivery, fromEvent []time.Duration
	for b.Loop() {
		if fw.Now().Add(15*time.Second).Truncate(time.Minute) != fw.Now().Truncate(time.Minute) {
			b.StopTimer()
			fw.cycle(b, 100) // the minute turns
			for i := range clients {
				wait(i)
			}
			drain()
			b.StartTimer()
		}
		published := fw.cycle(b, 100)
		ats := make([]time.Time, clients)
		first := time.Time{}
		for i := range clients {
			ats[i] = wait(i)
			if first.IsZero() || ats[i].Before(first) {
				first = ats[i]
			}
		}
		for _, at := range ats {
			delivery = append(delivery, at.Sub(first))
			fromEvent = append(fromEvent, at.Sub(published))
		}
		b.StopTimer()
		drain()
		b.StartTimer()
	}
	reportPercentiles(b, "delivery", delivery)
	reportPercentiles(b, "from-event", fromEvent)
	if rss, ok := residentMB("self"); ok {
		b.ReportMetric(rss, "rss-MB")
	}
	if rss, ok := residentMB(strconv.Itoa(clientsPID)); ok {
		b.ReportMetric(rss, "clients-rss-MB")
	}
}

// wsClientsEnv, set, makes this test binary the benchmark's websocket clients (see TestMain):
// "URL COUNT MODE" (a clientMode).
const wsClientsEnv = "TOOLQ_BENCH_WEBSOCKET_CLIENTS"

// startWebsocketClients starts count websocket clients of the overview at serverURL in a process
// of their own (this test binary again, as TestMain's client fleet), so that the server's memory
// and garbage collection are its own; they still share its two cores. It returns a channel per
// client that gets the time at which the client got each push with rows (closed when the client
// is disconnected) once every client is connected, and the process's id.
func startWebsocketClients(b *testing.B, serverURL string, count int, mode clientMode) ([]chan time.Time, int) {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", wsClientsEnv, serverURL, count, mode))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = stdin.Close() // the clients end when their input does
		_ = cmd.Wait()
	})
	notes := make([]chan time.Time, count)
	for i := range notes {
		notes[i] = make(chan time.Time, 64)
	}
	connected := make(chan struct{})
	go func() {
		closed := make([]bool, count)
		lines := bufio.NewScanner(stdout)
		for lines.Scan() {
			var i int
			var at int64
			switch line := lines.Text(); {
			case line == "connected":
				close(connected)
			case strings.HasPrefix(line, "failed "):
				b.Errorf("websocket client: %s", line)
			case strings.HasPrefix(line, "closed "):
				if _, err := fmt.Sscanf(line, "closed %d", &i); err == nil && !closed[i] {
					closed[i] = true
					close(notes[i])
				}
			default:
				if _, err := fmt.Sscanf(line, "%d %d", &i, &at); err == nil && !closed[i] {
					select {
					case notes[i] <- time.Unix(0, at):
					default: // the benchmark reads every note; never block the reads
					}
				}
			}
		}
		for i, done := range closed {
			if !done {
				close(notes[i])
			}
		}
	}()
	select {
	case <-connected:
	case <-time.After(2 * time.Minute):
		b.Fatal("the websocket clients did not connect within 2 minutes")
	}
	return notes, cmd.Process.Pid
}

// runWebsocketClients is the benchmark's client fleet: it connects the clients spec says, from
// 127.0.x.y addresses so that the server's per-address quota of websockets admits them all,
// prints "connected", then "CLIENT UNIXNANO" for each push with rows a client gets ("closed
// CLIENT" when one is disconnected), until its standard input ends.
func runWebsocketClients(spec string) error {
	var serverURL string
	var count int
	var mode clientMode
	if _, err := fmt.Sscanf(spec, "%s %d %d", &serverURL, &count, &mode); err != nil {
		return fmt.Errorf("%s=%q: %w", wsClientsEnv, spec, err)
	}
	u := "ws" + strings.TrimPrefix(serverURL, "http") + "/ws?topic=overview"
	host := strings.TrimPrefix(serverURL, "http://")
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	emit := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		_ = out.Flush()
	}
	var conns []*websocket.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for i := range count {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/25), byte(1+i%25))}
		if mode == clientsWire {
			wire, err := dialWire(local, u, "http://"+host)
			if err != nil {
				return fmt.Errorf("client %d: %w", i, err)
			}
			check := i%50 == 0
			go func() {
				defer wire.Close()
				for {
					rows, err := wire.readMessage()
					at := time.Now()
					if err == nil && check {
						err = wire.checkRows(rows)
					}
					if err != nil {
						if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
							emit("failed %d %v", i, err)
						}
						emit("closed %d", i)
						return
					}
					if rows {
						emit("%d %d", i, at.UnixNano())
					}
				}
			}()
			continue
		}
		d := websocket.Dialer{
			EnableCompression: mode == clientsDeflate,
			NetDialContext:    (&net.Dialer{LocalAddr: local}).DialContext,
		}
		conn, _, err := d.Dial(u, http.Header{"Origin": {"http://" + host}})
		if err != nil {
			return fmt.Errorf("client %d: %w", i, err)
		}
		conns = append(conns, conn)
		go func() {
			for {
				hasRows, err := readForRows(conn)
				if err != nil {
					emit("closed %d", i)
					return
				}
				if hasRows {
					emit("%d %d", i, time.Now().UnixNano())
				}
			}
		}()
	}
	emit("connected")
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

// readChunks lend the benchmark's clients what they read messages into.
var readChunks = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// readForRows reads one message whole and reports whether it carries overview rows. It reads in
// chunks, as a browser would on a machine of its own: the benchmark's thousand clients share the
// server's two cores, and a buffer of each message per client would have them spend those on
// allocations (the whole table is 1.2 MB).
func readForRows(conn *websocket.Conn) (bool, error) {
	_, r, err := conn.NextReader()
	if err != nil {
		return false, err
	}
	const rowID = "queue-row-"
	chunk := readChunks.Get().(*[]byte)
	defer readChunks.Put(chunk)
	buf := *chunk
	found, tail := false, 0 // tail: the previous read's last bytes, kept at buf's start
	for {
		n, err := r.Read(buf[tail:])
		if n > 0 && !found {
			found = bytes.Contains(buf[:tail+n], []byte(rowID))
			keep := min(len(rowID)-1, tail+n)
			copy(buf, buf[tail+n-keep:tail+n])
			tail = keep
		}
		if errors.Is(err, io.EOF) {
			return found, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// residentMB reads a process's resident set size ("self", or a process id).
func residentMB(pid string) (float64, bool) {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
}
