package views

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/toolq/toolq/internal/store"
	"github.com/toolq/toolq/internal/store/storetest"
	"github.com/toolq/toolq/internal/tracelink"
)

// TestMessageTraces: a message's traceparent attribute and AWSTraceHeader become links under
// --trace-url, built from the parsed ids alone; a malformed value stays text with no link; the
// newest messages' links are what an arrival carries.
func TestMessageTraces(t *testing.T) {
	t.Parallel()
	const (
		w3c  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		xray = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
		bad  = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\"><script>alert(1)</script>"
	)
	tmpl, err := tracelink.ParseTemplate("https://grafana.example/explore?traceId={traceId}")
	if err != nil {
		t.Fatal(err)
	}
	messages := []store.SampledMessage{
		{MessageID: "both", TraceHeader: xray, Attributes: []store.MessageAttribute{{Name: "traceparent", DataType: "String", Value: w3c}}},
		{MessageID: "xray", TraceHeader: xray},
		{MessageID: "malformed", TraceHeader: "Root=1-nothex;Evil=1", Attributes: []store.MessageAttribute{{Name: "Traceparent", DataType: "String", Value: bad}}},
		{MessageID: "none", Attributes: []store.MessageAttribute{{Name: "mcpServer", DataType: "String", Value: "research"}}},
	}
	tests := []struct {
		id   string
		want []MessageTrace
	}{
		{"both", []MessageTrace{
			{Header: "traceparent", Value: w3c, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", URL: "https://grafana.example/explore?traceId=4bf92f3577b34da6a3ce929d0e0e4736"},
			{Header: "AWSTraceHeader", Value: xray, TraceID: "1-5759e988-bd862e3fe1be46a994272793", URL: "https://grafana.example/explore?traceId=1-5759e988-bd862e3fe1be46a994272793"},
		}},
		{"xray", []MessageTrace{{Header: "AWSTraceHeader", Value: xray, TraceID: "1-5759e988-bd862e3fe1be46a994272793", URL: "https://grafana.example/explore?traceId=1-5759e988-bd862e3fe1be46a994272793"}}},
		{"malformed", []MessageTrace{{Header: "traceparent", Value: bad}, {Header: "AWSTraceHeader", Value: "Root=1-nothex;Evil=1"}}},
		{"none", []MessageTrace{}},
	}
	for _, linked := range []bool{true, false} {
		st, err := store.Open(context.Background(), storetest.Path(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		opts := Options{Store: st, Now: func() time.Time { return now }}
		if linked {
			opts.TraceURL = tmpl
		}
		f := &fixture{t: t, ctx: context.Background(), store: st, ids: map[string]int64{}, svc: New(opts)}
		q := f.queue("web-search-dlq")
		_, err = st.SaveSample(f.ctx, store.Sample{QueueID: q, Kind: store.SampleDeadLetter, At: now, Seen: 4, ApproxVisible: 4, MessagesTaken: 4}, messages, nil)
		f.must(err)
		for _, tt := range tests {
			t.Run(tt.id, func(t *testing.T) {
				m, err := f.svc.Message(f.ctx, q, tt.id)
				if err != nil {
					t.Fatal(err)
				}
				want := tt.want
				if !linked {
					want = []MessageTrace{}
					for _, w := range tt.want {
						w.URL = ""
						want = append(want, w)
					}
				}
				if !reflect.DeepEqual(m.Traces, want) {
					t.Errorf("linked %v: traces = %+v; want %+v", linked, m.Traces, want)
				}
			})
		}
		newest, err := f.svc.NewestTraces(f.ctx, q)
		f.must(err)
		// The newest three, newest first: none, malformed (no link), xray.
		var want []AlertTrace
		if linked {
			want = []AlertTrace{{MessageID: "xray", TraceID: "1-5759e988-bd862e3fe1be46a994272793", URL: "https://grafana.example/explore?traceId=1-5759e988-bd862e3fe1be46a994272793"}}
		}
		if len(newest) != len(want) || (len(want) > 0 && newest[0] != want[0]) {
			t.Errorf("linked %v: NewestTraces = %+v; want %+v", linked, newest, want)
		}
	}
}
