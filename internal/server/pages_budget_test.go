package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/collector"
	"github.com/toolq/toolq/internal/store"
)

// TestPagesShowToolqsReceivesPerMessage samples an opted-in source of idle messages with the
// real collector, over passes, and reads the pages: each message shows what toolq spent of its
// receives against its limit (maxReceiveCount − 2), marked at the limit, and the queue page
// says toolq paused and why. The API gives the same numbers.
func TestPagesShowToolqsReceivesPerMessage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	dlqARN := pw.CreateQueue(t, "jobs-dlq", "", nil)
	pw.CreateQueue(t, "jobs", "", map[string]string{
		"RedrivePolicy": `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":3}`,
	})
	out, err := pw.SQS.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := pw.SQS.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(`{"toolName":"render"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := collector.New(collector.Options{
		Regions: []collector.Region{{Name: "us-east-1", SQS: pw.SQS}}, Store: pw.Store, Now: pw.Now,
		QueuePrefixes: []string{"jobs"}, Peek: collector.PeekOptions{Sources: []string{"jobs"}},
		PeekSourceInterval: time.Minute, Backfill: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(t.Context()); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := c.CycleAttributes(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := c.PeekDue(t.Context()); err != nil {
			t.Fatal(err)
		}
		pw.Advance(time.Minute)
	}

	doc, _ := pw.page(t, request{path: "/queues/jobs/messages"}, http.StatusOK)
	cells := doc.Find("table.messages tbody .receives .own-limit")
	if cells.Length() != 4 {
		t.Fatalf("%d messages marked at toolq's limit; want 4:\n%s", cells.Length(), outer(doc.Find("table.messages")))
	}
	if text := strings.TrimSpace(cells.First().Text()); text != "toolq 1" {
		t.Errorf("toolq's receives = %q; want toolq 1", text)
	}
	if all := strings.Join(strings.Fields(doc.Find("table.messages tbody .receives").First().Text()), " "); all != "1 of 3 consumers 0 · toolq 1" {
		t.Errorf("receives = %q; want 1 of 3 consumers 0 · toolq 1", all)
	}
	if title, _ := cells.First().Attr("title"); !strings.Contains(title, "does not sample this queue again") {
		t.Errorf("title = %q", title)
	}
	queue, _ := pw.page(t, request{path: "/queues/jobs"}, http.StatusOK)
	peek := strings.Join(strings.Fields(queue.Find("#peek-h").Parent().Text()), " ")
	for _, want := range []string{"at most 1; 1 so far", "paused: toolq's receives of message", "maxReceiveCount − 2"} {
		if !strings.Contains(peek, want) {
			t.Errorf("the sampling card lacks %q: %s", want, peek)
		}
	}
	rec := pw.do(t, request{path: "/api/v1/queues/jobs/messages"})
	var page struct {
		Messages []struct {
			ReceiveCount    int  `json:"receiveCount"`
			OwnReceives     int  `json:"ownReceives"`
			OwnReceiveLimit *int `json:"ownReceiveLimit"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil || len(page.Messages) != 4 {
		t.Fatalf("API messages: %v %s", err, rec.Body)
	}
	for _, m := range page.Messages {
		if m.OwnReceives != 1 || m.OwnReceiveLimit == nil || *m.OwnReceiveLimit != 1 || m.ReceiveCount != 0 {
			t.Errorf("API message = %+v; want 1 own receive of 1, none by consumers", m)
		}
	}
	snap, err := pw.Sim.Snapshot("jobs")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range snap {
		if m.ReceiveCount != 1 {
			t.Errorf("message %s received %d times after five passes; want 1", m.MessageID, m.ReceiveCount)
		}
	}
}

// TestEveryToolFilterLinkWorks stores a sample whose tool names are all a collector may store
// (256 bytes, tabs and newlines, URL punctuation, markup, other scripts, none), follows every
// tool filter the queue page and the messages page offer, and checks that each answers with
// that tool's messages only.
func TestEveryToolFilterLinkWorks(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := t.Context()
	dlq, err := pw.Views.ResolveQueue(ctx, "web-search-dlq")
	if err != nil {
		t.Fatal(err)
	}
	tools := []string{strings.Repeat("x", 256), "a\tb\nc", "a&b=c#d%e+f g/h?i", "<script>alert(1)</script>", "ツール", ""}
	var msgs []store.SampledMessage
	for i, name := range tools {
		for j := range 2 {
			msgs = append(msgs, store.SampledMessage{MessageID: fmt.Sprintf("m-%d-%d", i, j), ToolName: name, Body: "{}", BodySize: 2,
				SentAt: pw.Now().Add(-time.Minute), Attributes: []store.MessageAttribute{}})
		}
	}
	if _, err := pw.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: pw.Now().Add(time.Second),
		Seen: len(msgs), ApproxVisible: int64(len(msgs)), Receives: 2, MessagesTaken: len(msgs)}, msgs, nil); err != nil {
		t.Fatal(err)
	}
	links := map[string]bool{}
	for _, path := range []string{"/queues/web-search-dlq", "/queues/web-search-dlq/messages"} {
		doc, _ := pw.page(t, request{path: path}, http.StatusOK)
		doc.Find(`a[href*="tool="]`).Each(func(_ int, a *goquery.Selection) {
			href, _ := a.Attr("href")
			links[href] = true
		})
		doc.Find(`select[name="tool"] option`).Each(func(_ int, o *goquery.Selection) {
			if v, _ := o.Attr("value"); v != "" {
				links["/queues/web-search-dlq/messages?tool="+url.QueryEscape(v)] = true
			}
		})
	}
	if len(links) < len(tools)-1 {
		t.Fatalf("%d tool filter links offered; want one per named tool at least: %v", len(links), links)
	}
	for href := range links {
		u, err := url.Parse(href)
		if err != nil {
			t.Fatal(err)
		}
		want := u.Query().Get("tool")
		doc, _ := pw.page(t, request{path: href}, http.StatusOK)
		rows := doc.Find("table.messages tbody tr")
		if rows.Length() != 2 {
			t.Errorf("%q: %d rows, want the tool's 2", want, rows.Length())
		}
		rows.Each(func(_ int, r *goquery.Selection) {
			if got := r.Find("td").Not(".select").First().Text(); got != want {
				t.Errorf("%q: a row of tool %q", want, got)
			}
		})
	}
}
