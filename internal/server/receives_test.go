package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/toolq/toolq/internal/collector"
)

// TestReceivesAgreeOnEveryPage: a FIFO source whose consumers failed a session's head twice,
// sampled twice by the real collector, and a dead-letter queue sampled twice. Every place that
// shows a message's receives (the groups table, the nearing table, the messages table, the
// message's page, the paused banner, the API) shows the same three numbers for it, and all of
// them is what SQS counts.
func TestReceivesAgreeOnEveryPage(t *testing.T) {
	t.Parallel()
	pw := newPageWorld(t, pageWorldOptions{})
	ctx := t.Context()
	dlqARN := pw.CreateQueue(t, "calls-dlq.fifo", "", nil)
	pw.CreateQueue(t, "calls.fifo", "", map[string]string{
		"RedrivePolicy":     `{"deadLetterTargetArn":"` + dlqARN + `","maxReceiveCount":5}`,
		"VisibilityTimeout": "1",
	})
	pw.CreateQueue(t, "jobs-dlq", "", nil)
	pw.CreateQueue(t, "jobs", "jobs-dlq", nil)
	pw.DeadLetter(t, "jobs", 2)

	u, err := pw.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("calls.fifo")})
	if err != nil {
		t.Fatal(err)
	}
	for i, group := range []string{"sess_a", "sess_a", "sess_a", "sess_b"} {
		if _, err := pw.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: u.QueueUrl,
			MessageBody:    aws.String(`{"toolName":"create_document","sessionId":"` + group + `"}`),
			MessageGroupId: aws.String(group), MessageDeduplicationId: aws.String("d" + strconv.Itoa(i))}); err != nil {
			t.Fatal(err)
		}
	}
	// A consumer fails sess_a's head twice: it receives it and lets its visibility time out.
	for range 2 {
		out, err := pw.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: u.QueueUrl, MaxNumberOfMessages: 1})
		if err != nil || len(out.Messages) != 1 {
			t.Fatalf("consumer receive: %v, %d messages", err, len(out.Messages))
		}
		pw.Advance(2 * time.Second)
	}

	c, err := collector.New(collector.Options{
		Regions: []collector.Region{{Name: "us-east-1", SQS: pw.SQS}}, Store: pw.Store, Now: pw.Now,
		QueuePrefixes: []string{"calls", "jobs"}, Peek: collector.PeekOptions{Sources: []string{"calls.fifo"}},
		PeekSourceInterval: time.Minute, PeekDeadLetterInterval: time.Minute, Backfill: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.CycleAttributes(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.PeekDue(ctx); err != nil {
			t.Fatal(err)
		}
		pw.Advance(time.Minute)
	}
	// The third pass finds sess_a's head one receive from maxReceiveCount and pauses, receiving
	// nothing.
	if err := c.CycleAttributes(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.PeekDue(ctx); err != nil {
		t.Fatal(err)
	}

	// What SQS counts, read without a receive.
	sqsCount := map[string]int{}
	for _, q := range []string{"calls.fifo", "jobs-dlq"} {
		snap, err := pw.Sim.Snapshot(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range snap {
			sqsCount[m.MessageID] = m.ReceiveCount
		}
	}

	seen := map[string]map[string]string{} // message id → where → receives text
	note := func(where, id, text string) {
		if seen[id] == nil {
			seen[id] = map[string]string{}
		}
		seen[id][where] = text
	}
	rows := func(where string, doc *goquery.Document, sel string) {
		doc.Find(sel).Each(func(_ int, r *goquery.Selection) {
			cell := r.Find(".receives")
			if cell.Length() != 1 {
				return
			}
			href, _ := r.Find(`a[href*="/messages/"]`).First().Attr("href")
			ref, err := url.PathUnescape(path.Base(strings.SplitN(href, "?", 2)[0]))
			if err != nil || ref == "" || ref == "." {
				t.Errorf("%s: a row's receives without its message link: %s", where, outer(r))
				return
			}
			note(where, ref, strings.Join(strings.Fields(cell.Text()), " "))
		})
	}
	queue, _ := pw.page(t, request{path: "/queues/calls.fifo"}, http.StatusOK)
	rows("groups table", queue, "#groups table tbody tr, section table:not(.messages) tbody tr")
	rows("nearing table", queue, "table.messages tbody tr")
	msgs, _ := pw.page(t, request{path: "/queues/calls.fifo/messages"}, http.StatusOK)
	rows("messages table", msgs, "table.messages tbody tr")
	dlqMsgs, _ := pw.page(t, request{path: "/queues/jobs-dlq/messages"}, http.StatusOK)
	rows("dead-letter messages table", dlqMsgs, "table.messages tbody tr")
	for id := range sqsCount {
		q := "calls.fifo"
		if _, ok := seen[id]["dead-letter messages table"]; ok {
			q = "jobs-dlq"
		}
		page, _ := pw.page(t, request{path: "/queues/" + q + "/messages/" + url.PathEscape(id)}, http.StatusOK)
		note("message page", id, strings.Join(strings.Fields(page.Find(".receives").First().Text()), " "))
	}

	// The paused banner names the message it protects, with the same numbers.
	banner := regexp.MustCompile(`message (\S+) has been received (\d+) of (\d+) times \(consumers (\d+), toolq (\d+)\)`).
		FindStringSubmatch(strings.Join(strings.Fields(queue.Text()), " "))
	if banner == nil {
		t.Fatalf("the queue page does not say why sampling paused:\n%s", queue.Text())
	}
	note("paused banner", banner[1], banner[2]+" of "+banner[3]+" consumers "+banner[4]+" · toolq "+banner[5])

	// The API: messages and groups.
	for _, q := range []string{"calls.fifo", "jobs-dlq"} {
		var page struct {
			Messages []struct {
				MessageID string         `json:"messageId"`
				Receives  receivesFields `json:"receives"`
			} `json:"messages"`
		}
		rec := pw.do(t, request{path: "/api/v1/queues/" + q + "/messages"})
		if err := json.Unmarshal(rec.Body.Bytes(), &page); err != nil {
			t.Fatalf("API messages of %s: %v %s", q, err, rec.Body)
		}
		for _, m := range page.Messages {
			note("API messages", m.MessageID, m.Receives.text())
		}
	}
	var groups struct {
		Groups []struct {
			HeadMessageID string         `json:"headMessageId"`
			HeadReceives  receivesFields `json:"headReceives"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(pw.do(t, request{path: "/api/v1/queues/calls.fifo/groups"}).Body.Bytes(), &groups); err != nil || len(groups.Groups) != 2 {
		t.Fatalf("API groups: %v %+v", err, groups)
	}
	for _, g := range groups.Groups {
		note("API groups", g.HeadMessageID, g.HeadReceives.text())
	}

	if len(sqsCount) != 6 {
		t.Fatalf("the simulator holds %d messages; want 4 in calls.fifo and 2 in jobs-dlq", len(sqsCount))
	}
	receives := regexp.MustCompile(`^(\d+)(?: of (\d+))? consumers (\d+) · toolq (\d+)$`)
	for id, count := range sqsCount {
		places := seen[id]
		if len(places) < 3 {
			t.Errorf("message %s shows in %d places (%v); want the table, its page and the API at least", id, len(places), places)
		}
		var first, firstWhere string
		for where, text := range places {
			if first == "" {
				first, firstWhere = text, where
				continue
			}
			if text != first {
				t.Errorf("message %s: %s says %q, %s says %q", id, firstWhere, first, where, text)
			}
		}
		m := receives.FindStringSubmatch(first)
		if m == nil {
			t.Errorf("message %s: receives %q do not read as all, consumers and toolq", id, first)
			continue
		}
		all, _ := strconv.Atoi(m[1])
		consumers, _ := strconv.Atoi(m[3])
		toolq, _ := strconv.Atoi(m[4])
		if all != count || consumers+toolq != all {
			t.Errorf("message %s: receives %q; SQS counts %d", id, first, count)
		}
	}
	// The session's head: two by its consumer, two by toolq, of maxReceiveCount 5.
	if got := seen[banner[1]]["groups table"]; got != "4 of 5 consumers 2 · toolq 2" {
		t.Errorf("the blocked head's receives in the groups table = %q; want 4 of 5 consumers 2 · toolq 2", got)
	}
}

// receivesFields is a message's receives as the API gives them.
type receivesFields struct {
	All       int  `json:"all"`
	Consumers int  `json:"consumers"`
	Toolq     int  `json:"toolq"`
	Max       *int `json:"max"`
}

// text writes them as the pages do.
func (r receivesFields) text() string {
	s := strconv.Itoa(r.All)
	if r.Max != nil {
		s += " of " + strconv.Itoa(*r.Max)
	}
	return s + " consumers " + strconv.Itoa(r.Consumers) + " · toolq " + strconv.Itoa(r.Toolq)
}
