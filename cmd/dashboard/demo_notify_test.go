package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/toolq/toolq/internal/notify"
	"github.com/toolq/toolq/traffic"
)

// TestDemoNotifiesSlackOfTheFailingServer is the "done when": the real demo, with
// --notify pointing at a local receiver, posts a Slack-shaped message for a DLQ arrival that names
// the failing MCP server (docs-legacy, the server traffic's blocked sessions talk to). It logs
// how long after the DLQ's first message the receiver got it.
func TestDemoNotifiesSlackOfTheFailingServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo for about a minute")
	}
	t.Parallel() // a demo of its own, in real time: it waits more than it works
	type arrival struct {
		at   time.Time
		body []byte
	}
	var mu sync.Mutex
	var got []arrival
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, arrival{time.Now(), body})
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)

	cfg := testDashboard("127.0.0.1:0")
	target, err := notify.ParseTarget("slack:" + recv.URL + "/services/T0/B0/demo#kinds=dlq")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Notify.Targets = []notify.Target{target}
	addrs, stop := startDemo(t, demoConfig{dashboard: cfg, simListen: "127.0.0.1:0", region: "us-east-1", seed: 1})
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("runDemo: %v", err)
		}
	}()

	// The simulator's public endpoint tells when the DLQ got its first message.
	client := newTestClient(t, addrs.Simulator)
	var dlqURL string
	var firstArrival time.Time
	deadline := time.Now().Add(150 * time.Second)
	for time.Now().Before(deadline) {
		if dlqURL == "" {
			if out, err := client.GetQueueUrl(t.Context(), &sqs.GetQueueUrlInput{QueueName: aws.String(traffic.QueueToolCallsDLQ)}); err == nil {
				dlqURL = aws.ToString(out.QueueUrl)
			}
		}
		if dlqURL != "" && firstArrival.IsZero() {
			out, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(dlqURL),
				AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
			if err == nil && out.Attributes["ApproximateNumberOfMessages"] != "0" {
				firstArrival = time.Now()
			}
		}
		mu.Lock()
		for _, a := range got {
			var msg struct {
				Text   string `json:"text"`
				Blocks []struct {
					Type   string                  `json:"type"`
					Fields []struct{ Text string } `json:"fields"`
				} `json:"blocks"`
			}
			if json.Unmarshal(a.body, &msg) != nil || len(msg.Blocks) == 0 || msg.Blocks[0].Type != "header" {
				continue
			}
			for _, b := range msg.Blocks {
				for _, f := range b.Fields {
					if strings.HasPrefix(f.Text, "*mcpServer*\n") && strings.Contains(f.Text, "docs-legacy") && strings.Contains(msg.Text, traffic.QueueToolCallsDLQ) {
						mu.Unlock()
						if !firstArrival.IsZero() {
							t.Logf("Slack message naming docs-legacy %v after the DLQ's first message (attribute interval %v): %s",
								a.at.Sub(firstArrival).Round(100*time.Millisecond), cfg.Collector.AttributesInterval, msg.Text)
						}
						return
					}
				}
			}
		}
		mu.Unlock()
		time.Sleep(200 * time.Millisecond) // waiting for the demo's traffic, not for time to pass
	}
	mu.Lock()
	defer mu.Unlock()
	t.Fatalf("no Slack message naming docs-legacy for %s within 150 s; the receiver got %d messages", traffic.QueueToolCallsDLQ, len(got))
}
