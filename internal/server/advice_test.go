package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"

	"github.com/toolq/toolq/internal/auth"
	"github.com/toolq/toolq/internal/store"
)

// newAdviceHarness adds to the API harness's world a queue without a dead-letter queue
// (notifications) and an EventBridge rule that delivers to audit, whose target dead-letter queue
// audit-dlq holds one sampled event that failed with EventBridge's attributes.
func newAdviceHarness(t *testing.T) *apiHarness {
	t.Helper()
	h := newAPIHarness(t, harnessConfig{mode: auth.ModeNone})
	w := h.w
	w.CreateQueue(t, "notifications", "", nil)
	w.CreateQueue(t, "audit", "", nil)
	w.CreateQueue(t, "audit-dlq", "", map[string]string{"MessageRetentionPeriod": "1209600"})
	w.Watch(t, "notifications", "audit", "audit-dlq")
	w.TargetDeadLetter(t, "audit", "audit-dlq")
	ctx := context.Background()
	dlq, err := w.Store.GetQueueByARN(ctx, w.ARN("audit-dlq"))
	if err != nil {
		t.Fatal(err)
	}
	now := w.Now()
	if _, err := w.Store.SaveSample(ctx, store.Sample{QueueID: dlq.ID, Kind: store.SampleDeadLetter, At: now, Seen: 1, ApproxVisible: 1, Receives: 1, MessagesTaken: 1},
		[]store.SampledMessage{{QueueID: dlq.ID, MessageID: "ev-1", ReceiveCount: 0, SentAt: now.Add(-time.Minute), Body: `{"detail-type":"ToolCallCompleted"}`, BodySize: 40,
			Attributes: []store.MessageAttribute{
				{Name: "ERROR_CODE", DataType: "String", Value: "SDK_CLIENT_ERROR"},
				{Name: "ERROR_MESSAGE", DataType: "String", Value: "One or more parameters are invalid. Reason: Message must be shorter than 8192 bytes."},
				{Name: "RULE_ARN", DataType: "String", Value: "arn:aws:events:us-east-1:000000000000:rule/mcp/tool-call-completed"},
				{Name: "TARGET_ARN", DataType: "String", Value: w.ARN("audit")},
				{Name: "RETRY_ATTEMPTS", DataType: "Number", Value: "0"},
			}}}, nil); err != nil {
		t.Fatal(err)
	}
	return h
}

func TestAdviceAPI(t *testing.T) {
	t.Parallel()
	h := newAdviceHarness(t)
	// Every answer is checked against the OpenAPI document by the harness (checkContract).
	get := func(target string, status int) map[string]any {
		t.Helper()
		rec := h.do(t, apiRequest{target: target})
		if rec.Code != status {
			t.Fatalf("GET %s = %d, want %d: %.300s", target, rec.Code, status, rec.Body)
		}
		var got map[string]any
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	all := get("/api/v1/advice", 200)
	fired := map[string][]string{}
	for _, a := range all["advice"].([]any) {
		a := a.(map[string]any)
		fired[a["queue"].(string)] = append(fired[a["queue"].(string)], a["rule"].(string))
	}
	if !strings.Contains(strings.Join(fired["notifications"], ","), "no-dlq") {
		t.Errorf("notifications: advice %v, want no-dlq", fired["notifications"])
	}
	if len(fired["audit-dlq"]) != 0 || len(fired["orders-dlq"]) != 0 {
		t.Errorf("dead-letter queues got %v and %v: neither lacks a DLQ, and alarms were never read", fired["audit-dlq"], fired["orders-dlq"])
	}
	if n := len(all["rules"].([]any)); n < 20 {
		t.Errorf("%d rules listed", n)
	}

	one := get("/api/v1/advice?queue=notifications&rule=no-dlq", 200)
	if got := one["advice"].([]any); len(got) != 1 || !strings.Contains(got[0].(map[string]any)["fix"].(string), "create-queue --queue-name notifications-dlq") {
		t.Errorf("notifications' no-dlq: %v", got)
	}
	get("/api/v1/advice?rule=no-such-rule", 400)
	get("/api/v1/advice?queue=nope", 404)
	get("/api/v1/advice?queue=..%2F..", 400)

	list := get("/api/v1/queues?misconfigured=true", 200)
	var names []string
	for _, q := range list["queues"].([]any) {
		names = append(names, q.(map[string]any)["name"].(string))
	}
	if !strings.Contains(","+strings.Join(names, ",")+",", ",notifications,") || strings.Contains(strings.Join(names, ","), "dlq") {
		t.Errorf("misconfigured queues = %v", names)
	}

	detail := get("/api/v1/queues/audit-dlq", 200)
	if detail["deadLetterKind"] != "eventbridge-target" || detail["isDeadLetterQueue"] != true || !strings.Contains(detail["redriveUnavailable"].(string), "PutEvents") {
		t.Errorf("audit-dlq: kind %v, DLQ %v, redriveUnavailable %v", detail["deadLetterKind"], detail["isDeadLetterQueue"], detail["redriveUnavailable"])
	}
	if of := detail["deadLetterOfTargets"].([]any); len(of) != 1 || of[0].(map[string]any)["rule"] != "tool-call-completed" {
		t.Errorf("deadLetterOfTargets = %v", of)
	}
	if fed := get("/api/v1/queues/audit", 200)["fedBy"].([]any); len(fed) != 1 || fed[0].(map[string]any)["deadLetterQueue"] != "audit-dlq" {
		t.Errorf("audit fedBy = %v", fed)
	}
	msgs := get("/api/v1/queues/audit-dlq/messages", 200)
	m := msgs["messages"].([]any)[0].(map[string]any)
	if f, _ := m["reason"].(map[string]any); f == nil || f["source"] != "eventbridge" || f["code"] != "SDK_CLIENT_ERROR" || f["targetArn"] != h.w.ARN("audit") {
		t.Errorf("reason = %v", m["reason"])
	}

	// The actions refuse a move task, through the API as through the page.
	rec := h.do(t, apiRequest{method: http.MethodPost, target: "/api/v1/queues/audit-dlq/redrives", header: jsonPost("")})
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "eventbridge_dead_letter_queue") {
		t.Errorf("POST redrives on audit-dlq = %d %s", rec.Code, rec.Body)
	}
}

func TestAdviceGauge(t *testing.T) {
	t.Parallel()
	h := newAdviceHarness(t)
	rec := h.do(t, apiRequest{target: "/metrics"})
	body := rec.Body.String()
	if !strings.Contains(body, `toolq_advice{account="default",queue="notifications",region="us-east-1",rule="no-dlq"} 1`) {
		t.Errorf("/metrics has no no-dlq gauge for notifications:\n%s", grepLines(body, "toolq_advice"))
	}
	if strings.Contains(body, `toolq_advice{account="default",queue="audit-dlq"`) {
		t.Errorf("an advice gauge for audit-dlq:\n%s", grepLines(body, "toolq_advice"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestAdvicePages(t *testing.T) {
	t.Parallel()
	h := newAdviceHarness(t)
	page := func(target string, status int) *goquery.Document {
		t.Helper()
		rec := h.do(t, apiRequest{target: target, header: map[string]string{"Accept": "text/html"}})
		if rec.Code != status {
			t.Fatalf("GET %s = %d, want %d: %.300s", target, rec.Code, status, rec.Body)
		}
		doc, err := goquery.NewDocumentFromReader(rec.Body)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	// The overview's "misconfigured" filter keeps notifications and leaves out the DLQs.
	doc := page("/?misconfigured=1", 200)
	names := rowNames(doc)
	if !strings.Contains(strings.Join(names, ","), "notifications") || strings.Contains(strings.Join(names, ","), "dlq") {
		t.Errorf("misconfigured rows = %v", names)
	}
	if doc.Find(`input[name=misconfigured][checked]`).Length() != 1 {
		t.Errorf("the filter's checkbox is not checked")
	}
	if tag := doc.Find(`tr a.tag-advice`).First().Text(); !strings.HasPrefix(tag, "misconfigured (") {
		t.Errorf("row tag = %q", tag)
	}
	if got := rowNames(page("/", 200)); len(got) <= len(names) {
		t.Errorf("without the filter %d rows, with it %d", len(got), len(names))
	}

	// notifications' page says what to fix, and how.
	doc = page("/queues/notifications", 200)
	advice := doc.Find("#advice")
	if !strings.Contains(advice.Text(), "no-dlq") || !strings.Contains(advice.Find("pre.fix").Text(), "aws sqs create-queue --queue-name notifications-dlq") {
		t.Errorf("advice section: %q", advice.Text())
	}
	if !strings.Contains(doc.Find("nav.related").Text(), "has no dead-letter queue") {
		t.Errorf("no warning about the missing DLQ: %q", doc.Find("nav.related").Text())
	}
	if !strings.Contains(doc.Find(".consumers").Text(), "No Lambda event source mapping") {
		t.Errorf("consumers section: %q", doc.Find(".consumers").Text())
	}

	// audit-dlq is a DLQ of its own kind: its failed events and their reasons, and no redrive.
	doc = page("/queues/audit-dlq", 200)
	if !strings.Contains(doc.Find(".tags").Text(), "EventBridge target DLQ") {
		t.Errorf("tags: %q", doc.Find(".tags").Text())
	}
	if doc.Find("#redrive-panel").Length() != 0 || doc.Find("form.redrive-start").Length() != 0 {
		t.Errorf("an EventBridge DLQ has a redrive panel")
	}
	if !strings.Contains(doc.Find("section.redrive").Text(), "PutEvents") {
		t.Errorf("no reason for the missing redrive: %q", doc.Find("section.redrive").Text())
	}
	if reason := doc.Find("#messages td.reason").First().Text(); !strings.Contains(reason, "SDK_CLIENT_ERROR: One or more parameters are invalid") {
		t.Errorf("failure reason cell = %q", reason)
	}
	if !strings.Contains(doc.Find("nav.related").Text(), "Dead-letter queue of rule tool-call-completed") {
		t.Errorf("related: %q", doc.Find("nav.related").Text())
	}
	if !strings.Contains(page("/queues/audit", 200).Find("nav.related").Text(), "Fed by rule tool-call-completed on bus mcp") {
		t.Errorf("audit does not say what feeds it")
	}
	doc = page("/queues/audit-dlq/messages/ev-1", 200)
	if !strings.Contains(doc.Find("dl.fields").Text(), "EventBridge could not deliver the event to") {
		t.Errorf("message page: %q", doc.Find("dl.fields").Text())
	}
	if rec := h.do(t, apiRequest{target: "/queues/audit-dlq/redrive", header: map[string]string{"Accept": "text/html"}}); rec.Code != http.StatusUnprocessableEntity {
		t.Errorf("GET redrive panel of audit-dlq = %d, want 422", rec.Code)
	}
}
