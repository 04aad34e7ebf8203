package server

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/toolq/toolq/internal/events"
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
		if _, err := pw.srv.overviewPush(ctx, subscription{Topic: topicOverview}); err != nil {
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
			sub := subscription{Topic: queueTopic(q.ID), View: url.Values{"range": {rng}}}
			kinds := kindSet{events.MetricsChanged: true}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pw.srv.queuePush(ctx, q.ID, sub, kinds); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHubBroadcast sends one rendering to 1,000 subscribers of a topic.
func BenchmarkHubBroadcast(b *testing.B) {
	th := newTestHub(b, 1)
	clients := make([]*client, 1000)
	for i := range clients {
		clients[i] = th.subscribe(b, topicOverview)
	}
	th.fire(b)
	for _, c := range clients {
		<-c.send
	}
	b.ResetTimer()
	for b.Loop() {
		th.notify(eventQueuesChanged)
		th.fire(b)
		for _, c := range clients {
			<-c.send
		}
	}
}
