package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions/actionstest"
	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/pgtest"
	"github.com/toolq/toolq/internal/store"
)

// BenchmarkFleetScale is the read side of 1,000, 5,000 and 10,000 queues with an hour of 15-s
// depth samples each, on SQLite and on PostgreSQL, where the dashboard reads what another
// replica's collector wrote (it has no memory of its own writes: none are its). After each cycle
// (every queue's depth sample, 100 queues' attributes, its event) it reports the snapshot's
// build, the first GET / (which renders the snapshot's rows) and the next ones, gzipped as a
// browser asks, the size of /api/v1/summary, and the process's heap and resident memory at the end (the simulator's and the
// fixture's included, so an upper bound of a dashboard's own). `make bench` runs it;
// the fixtures of 10,000 queues take a minute or two to write.
func BenchmarkFleetScale(b *testing.B) {
	for _, engine := range []string{"sqlite", "postgres"} {
		for _, pairs := range []int{500, 2500, 5000} {
			b.Run(fmt.Sprintf("engine=%s/queues=%d", engine, 2*pairs), func(b *testing.B) {
				w := actionstest.New(b)
				if engine == "postgres" {
					w = actionstest.NewOn(b, pgtest.DB(b))
				}
				benchmarkFleetScale(b, newFleetWorldOn(b, w, pairs, benchBusy))
			})
		}
	}
}

func benchmarkFleetScale(b *testing.B, fw *fleetWorld) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	get := func() time.Duration {
		start := time.Now()
		rec := httptest.NewRecorder()
		fw.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET / = %d", rec.Code)
		}
		return time.Since(start)
	}
	fw.snapshot(b) // the first build reads the hour of samples whole
	get()
	var builds, first, pages []time.Duration
	for b.Loop() {
		b.StopTimer()
		fw.scaleCycle(b)
		b.StartTimer()
		start := time.Now()
		fw.snapshot(b)
		builds = append(builds, time.Since(start))
		first = append(first, get())
		for range 5 {
			pages = append(pages, get())
		}
	}
	b.StopTimer()
	rec := httptest.NewRecorder()
	fw.handler.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/v1/summary", nil))
	b.ReportMetric(float64(rec.Body.Len())/1024, "summary-KB")
	reportPercentiles(b, "build", builds)
	reportPercentiles(b, "first", first)
	reportPercentiles(b, "page", pages)
	// What the fixture's writing left behind goes back to the system before the memory is read.
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
	if rss, ok := residentMB("self"); ok {
		b.ReportMetric(rss, "rss-MB")
	}
}

// scaleCycle stores what an attribute cycle would, in fewer statements than the collector's
// (every queue's depth sample at once, the attributes of the queues that changed), 15 s after
// the previous one, and publishes its event.
func (fw *fleetWorld) scaleCycle(b *testing.B) {
	b.Helper()
	fw.Advance(15 * time.Second)
	now := fw.Now()
	ctx := context.Background()
	samples := make([]store.AttributeSample, 0, len(fw.queues))
	for i, q := range fw.queues {
		v := int64(i / 2 % 40)
		if i%2 == 1 {
			v = int64(i / 2 % 3)
		} else if i < 2*benchBusy {
			v += now.Unix() % 7
			fw.saveAttributes(b, q, now, v)
			continue
		}
		samples = append(samples, store.AttributeSample{QueueID: q.id, At: now, Visible: v, InFlight: 2})
	}
	if err := fw.Store.SaveAttributeSamples(ctx, samples); err != nil {
		b.Fatal(err)
	}
	run, err := fw.Store.StartRun(ctx, store.RunAttributes, now.Add(-time.Second))
	if err != nil {
		b.Fatal(err)
	}
	if err := fw.Store.FinishRun(ctx, store.CollectorRun{ID: run, Kind: store.RunAttributes, StartedAt: now.Add(-time.Second), FinishedAt: now, Queues: len(fw.ids), Calls: len(fw.ids)}); err != nil {
		b.Fatal(err)
	}
	fw.bus.Publish(events.Event{Kind: events.QueuesChanged, At: now})
}
