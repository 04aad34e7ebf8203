package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
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
func BenchmarkMCPAgainstREST(b *testing.B) {
	fw := newFleetWorld(b, benchPairs1000, benchBusy)
	fw.snapshot(b)
	// The fleet's server with the rate limit off: one client makes every call.
	srv, err := New(Options{Views: fw.Views, Actions: fw.Actions(actions.Options{}), Bus: fw.bus, Now: fw.Now, RateLimit: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = srv.Close(context.Background()) })
	call := func(tool, args string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, mcpPath, strings.NewReader(
			`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		return r
	}
	for _, bc := range []struct {
		name string
		req  func() *http.Request
	}{
		{"list_queues/mcp", func() *http.Request { return call("list_queues", `{"limit":1000}`) }},
		{"list_queues/rest", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api/v1/queues", nil) }},
		{"get_summary/mcp", func() *http.Request { return call("get_summary", `{}`) }},
		{"get_summary/rest", func() *http.Request { return httptest.NewRequest(http.MethodGet, "/api/v1/summary", nil) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var size int
			cpu := cpuTime()
			for b.Loop() {
				rec := httptest.NewRecorder()
				srv.Handler().ServeHTTP(rec, bc.req())
				if rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"isError":true`) {
					b.Fatalf("status %d: %.300s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(size)/1024, "answer-KB")
		})
	}
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
