package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/collector"
)

// TestPagesShowToolqsReceivesPerMessage samples an opted-in source of idle messages with the
// real collector, over passes, and reads the pages: each message shows what toolq spent of its
// receives against its limit (maxReceiveCount − 2), marked at the limit, and the queue page
// says toolq paused and why. The API gives the same numbers.
func TestPagesShowToolqsReceivesPerMessage(t *testing.T) {
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
	cells := doc.Find("table.messages tbody td.own-limit")
	if cells.Length() != 4 {
		t.Fatalf("%d messages marked at toolq's limit; want 4:\n%s", cells.Length(), outer(doc.Find("table.messages")))
	}
	if text := strings.TrimSpace(cells.First().Text()); text != "1 of 1" {
		t.Errorf("toolq's receives = %q; want 1 of 1", text)
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
