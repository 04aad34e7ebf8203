package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/actions"
)

// BenchmarkMCPAgainstREST is list_queues and get_summary over 1,000 queues through the router:
// a tools/call as an MCP client sends it after its initialize (one POST, the stateless server's
// session of one request, the answer as structured content and as text) against the same read as
// GET /api/v1/…, each on the same current snapshot. Besides the time, it reports the process's
// CPU time per call, which other work on the machine does not inflate, and each answer's size.
// Answers go to a writer that counts them, as a socket takes them: httptest's recorder would add
// the growth of a megabyte buffer to each call.
//
// The clients=20 cases are 20 clients calling list_queues for the whole fleet at once, each its
// next call as soon as its last is answered, over real HTTP connections (gzip, as the SDKs'
// clients ask): the latency each call sees, p50 and p99, and the CPU time per call, the clients'
// reading included.
func BenchmarkMCPAgainstREST(b *testing.B) {
	srv := newMCPBenchServer(b)
	for _, bc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"list_queues/mcp", func() *http.Request { return mcpCallRequest("list_queues", `{"limit":1000}`) }},
		{"list_queues/rest", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil) }},
		{"get_summary/mcp", func() *http.Request { return mcpCallRequest("get_summary", `{}`) }},
		{"get_summary/rest", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api/v1/summary", nil) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var size int
			cpu := cpuTime()
			for b.Loop() {
				w := &countingResponse{header: http.Header{}}
				srv.Handler().ServeHTTP(w, bc.req())
				if w.status != http.StatusOK || strings.Contains(string(w.head), `"isError":true`) {
					b.Fatalf("status %d: %.300s", w.status, w.head)
				}
				size = w.size
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size)/1024, "answer-KB")
		})
	}
	web := httptest.NewServer(srv.Handler())
	b.Cleanup(web.Close)
	b.Run("list_queues/mcp/clients=20", func(b *testing.B) {
		concurrentCalls(b, 20, func() (*http.Request, error) {
			return mcpHTTPRequest(web.URL, "list_queues", `{"limit":1000}`)
		})
	})
	b.Run("list_queues/rest/clients=20", func(b *testing.B) {
		concurrentCalls(b, 20, func() (*http.Request, error) { return http.NewRequest(http.MethodGet, web.URL+"/api/v1/queues", nil) })
	})
}

// concurrentCalls makes b.N calls from clients clients at once, each with its own connection,
// and reports the latencies' p50 and p99, the CPU time and the wall time per call.
func concurrentCalls(b *testing.B, clients int, newRequest func() (*http.Request, error)) {
	var (
		next      atomic.Int64
		mu        sync.Mutex
		latencies []time.Duration
		failed    atomic.Value
	)
	cpu, start := cpuTime(), time.Now()
	var wg sync.WaitGroup
	for range clients {
		client := &http.Client{Transport: &http.Transport{}}
		wg.Go(func() {
			defer client.CloseIdleConnections()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := benchCall(client, newRequest); err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				latencies = append(latencies, time.Since(t0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(cpuTime()-cpu)/float64(b.N), "cpu-ms/op")
	b.ReportMetric(ms(time.Since(start))/float64(b.N), "wall-ms/op")
	slices.Sort(latencies)
	b.ReportMetric(ms(latencies[len(latencies)/2]), "p50-ms")
	b.ReportMetric(ms(latencies[(len(latencies)*99)/100]), "p99-ms")
}

// benchCall makes one call and reads its whole answer.
func benchCall(client *http.Client, newRequest func() (*http.Request, error)) error {
	req, err := newRequest()
	if err != nil {
		return err
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	n, err := io.Copy(io.Discard, res.Body)
	if err == nil && (res.StatusCode != http.StatusOK || n < 100<<10) {
		err = fmt.Errorf("%s: %d, %d bytes", req.URL.Path, res.StatusCode, n)
	}
	return err
}

// newMCPBenchServer is the server of 1,000 queues, its snapshot current, with the rate limit
// off: one client makes every call.
func newMCPBenchServer(b *testing.B) *Server {
	b.Helper()
	fw := newFleetWorld(b, benchPairs1000, benchBusy)
	fw.snapshot(b)
	srv, err := New(Options{Views: fw.Views, Actions: fw.Actions(actions.Options{}), Bus: fw.bus, Now: fw.Now, RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close(context.Background()) })
	return srv
}

// mcpCallRequest is a tools/call of tool with args as an MCP client sends it after initialize.
func mcpCallRequest(tool, args string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, mcpPath, strings.NewReader(mcpCallBody(tool, args)))
	setMCPHeaders(r.Header)
	return r
}

// setMCPHeaders sets the headers of a Streamable HTTP client's POST.
func setMCPHeaders(h http.Header) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("Mcp-Protocol-Version", "2025-06-18")
}

func mcpCallBody(tool, args string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
}

// mcpHTTPRequest is mcpCallRequest for a server at base.
func mcpHTTPRequest(base, tool, args string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, base+mcpPath, strings.NewReader(mcpCallBody(tool, args)))
	if err != nil {
		return nil, err
	}
	setMCPHeaders(req.Header)
	return req, nil
}

// countingResponse takes an answer as a socket would, keeping its status, its size and its
// first bytes.
type countingResponse struct {
	header http.Header
	status int
	size   int
	head   []byte
}

func (w *countingResponse) Header() http.Header { return w.header }

func (w *countingResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *countingResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	if len(w.head) < 512 {
		w.head = append(w.head, p[:min(len(p), 512-len(w.head))]...)
	}
	w.size += len(p)
	return len(p), nil
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
