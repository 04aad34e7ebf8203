package server

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/toolq/toolq/internal/events"
	"github.com/toolq/toolq/internal/live"
)

// BenchmarkOverviewPage is a full overview request through the router: views, store and render.
func BenchmarkOverviewPage(b *testing.B) {
	pw := newPageWorld(b, pageWorldOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if rec := pw.do(b, request{path: "/"}); rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkQueuePage is a dead-letter queue's page: charts, sample, redrive panel.
func BenchmarkQueuePage(b *testing.B) {
	pw := newPageWorld(b, pageWorldOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if rec := pw.do(b, request{path: "/queues/web-search-dlq"}); rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkOverviewPush is what the hub does once per burst for all overview subscribers.
func BenchmarkOverviewPush(b *testing.B) {
	pw := newPageWorld(b, pageWorldOptions{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := pw.srv.overviewPush(ctx, pageView{}, live.Changes{events.QueuesChanged: true}, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueuePushWithCharts is what the hub does once per metrics cycle for the subscribers of
// one queue page and chart range.
func BenchmarkQueuePushWithCharts(b *testing.B) {
	pw := newPageWorld(b, pageWorldOptions{})
	ctx := context.Background()
	q, err := pw.Views.ResolveQueue(ctx, "web-search")
	if err != nil {
		b.Fatal(err)
	}
	for _, rng := range []string{"1h", "7d"} {
		b.Run(rng, func(b *testing.B) {
			view := pageView{Query: url.Values{"range": {rng}}.Encode()}
			changes := live.Changes{events.MetricsChanged: true}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pw.srv.queuePush(ctx, q.ID, view, changes); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
