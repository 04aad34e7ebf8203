package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// outcomeJS reads a redrive page's outcome: its line, its text and the rows of its tables (by
// tool, by each dimension, by reason).
const outcomeJS = `(() => {
	const sec = document.getElementById('redrive-outcome');
	if (!sec) return null;
	const line = sec.querySelector('.outcome-line');
	const rows = [...sec.querySelectorAll('table.bounces tbody tr')]
		.map(tr => [...tr.children].map(c => c.textContent.replace(/\s+/g, ' ').trim()));
	return {line: line ? line.textContent.replace(/\s+/g, ' ').trim() : '', text: sec.textContent.replace(/\s+/g, ' '), rows};
})()`

type outcomeBlock struct {
	Line string     `json:"line"`
	Text string     `json:"text"`
	Rows [][]string `json:"rows"`
}

// TestRedrivePageShowsWhatCameBack redrives web-search-dlq once its sample holds ten calls of
// the test's own, six that web-search's workers run and four they reject for good (an empty
// query), and reads the redrive's page, reloaded as an operator would, until the four are back:
// by tool, with the count's source and age and what it can miss.
func TestRedrivePageShowsWhatCameBack(t *testing.T) {
	t.Parallel()
	suite.webSearchDLQ.Lock() // the other test that redrives it waits
	defer suite.webSearchDLQ.Unlock()
	d := needDemo(t)
	const dlq, source = "web-search-dlq", "web-search"
	t.Cleanup(func() {
		if t.Failed() { // a task the page shows running: has it ended in SQS?
			d.logMoveTasks(t, dlq)
			d.logDepths(t, dlq, source)
		}
	})
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		call := map[string]any{"toolCallId": fmt.Sprintf("tc_e2e_outcome_%02d", i), "toolName": "web_search",
			"toolArgs": map[string]any{"query": fmt.Sprintf("e2e outcome %d", i)}, "sessionId": "sess_e2e_outcome"}
		if i < 4 {
			// web_search rejects an empty query on every attempt. A call that failed into the DLQ
			// carries the error its worker wrote into it, so that the worker sends it on as it
			// is: a bounce-back is the redriven body come back, not a body rewritten.
			call["toolArgs"] = map[string]any{"query": ""}
			call["error"] = map[string]any{"code": "empty_query", "message": "query is empty", "at": time.Now().UnixMilli()}
		}
		body, _ := json.Marshal(call)
		entries = append(entries, types.SendMessageBatchRequestEntry{MessageBody: aws.String(string(body)),
			MessageAttributes: map[string]types.MessageAttributeValue{"mcpServer": {DataType: aws.String("String"), StringValue: aws.String("e2e-search")}}})
	}
	d.send(t, dlq, entries...)
	// The redrive remembers what the DLQ's newest sample holds: wait for one that holds them.
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, body, err := httpGet(t.Context(), d.page("/api/v1/queues/"+dlq+"/messages?q=tc_e2e_outcome&limit=50"))
		var page struct{ Matched int }
		if err == nil && json.Unmarshal(body, &page) == nil && page.Matched == 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample of %s holds the test's ten calls: %v %.300s", dlq, err, body)
		}
		time.Sleep(500 * time.Millisecond)
	}

	p := newTab(t)
	p.open(d.page("/queues/" + dlq))
	startRedrive(p, source, "50")
	done := waitTaskEnd(p, 90*time.Second, "50/s")
	if done[1] != "COMPLETED" {
		t.Fatalf("the move task ended %q (row %q)", done[1], done)
	}
	href := waitJS(p, dlqPageWait, "the redrive's link in its row",
		`document.querySelector('#redrive-panel table.history tbody tr a[href*="/redrives/"]')?.getAttribute('href') ?? ''`,
		func(href string) bool { return href != "" })
	if !strings.HasPrefix(href, "/queues/"+dlq+"/redrives/") {
		t.Fatalf("the redrive's row links to %q", href)
	}

	// The rejected calls fail maxReceiveCount times in web-search and come back (the six others
	// do not): the page is not live, so it is reloaded until the samples show the four.
	var got outcomeBlock
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	for back := 0; back < 4; {
		if ctx.Err() != nil {
			t.Fatalf("the redrive page did not show the four rejected calls back: %+v", got)
		}
		p.open(d.page(href))
		got = mustEval[outcomeBlock](p, outcomeJS)
		for _, row := range got.Rows {
			if len(row) == 3 && row[0] == "e2e-search" { // the test's calls' mcpServer
				fmt.Sscan(row[2], &back)
			}
		}
		if back < 4 {
			time.Sleep(2 * time.Second)
		}
	}
	for _, row := range got.Rows {
		if len(row) == 3 && row[0] == "e2e-search" && row[1] != "10" {
			t.Errorf("e2e-search row %q: want the ten calls remembered", row)
		}
	}
	if !strings.Contains(got.Line, " back within ") || !strings.Contains(got.Line, "web_search") {
		t.Errorf("outcome line = %q", got.Line)
	}
	for _, want := range []string{"From toolq's samples of the dead-letter queue", "counted at the sample of", "toolq knew", "Arrivals count until", "By tool", "By mcpServer"} {
		if !strings.Contains(got.Text, want) {
			t.Errorf("the redrive page lacks %q: %s", want, got.Text)
		}
	}
	if n := p.dialogCount(); n != 0 {
		t.Errorf("%d dialogs opened: hostile text ran", n)
	}
}
