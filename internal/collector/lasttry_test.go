package collector

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestSampleSparesLastTries measures what opting a source into sampling can cost its messages.
// Consumers left 20 messages one receive short of maxReceiveCount and toolq has no sample of
// them: it cannot know a receive count before it receives. A message whose last delivery a
// sample's receive used goes to the dead-letter queue at its consumer's next receive, untried.
// A guarded pass receives one message first, and grows its batches (2, 4, 8, 10) only while
// what it took shows no consumer failure, so that it stops after spending one last try at most.
// The fresh fleet says what that caution costs where there is nothing to spare.
func TestSampleSparesLastTries(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		failures int // consumer receives of each message before the samples
		maxLost  int
	}{
		{"20 messages one receive short", 3, 1},
		{"20 fresh messages", 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			const maxRC = 4
			srcURL, _ := e.createPair("jobs", "jobs-dlq", maxRC)
			for i := range 20 {
				e.send(srcURL, toolCallBody("render", i, "sess_1"))
			}
			for range tt.failures { // a consumer fails each message once a round
				for range 2 {
					if _, err := e.sqs.ReceiveMessage(e.ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srcURL),
						MaxNumberOfMessages: 10, VisibilityTimeout: 30}); err != nil {
						t.Fatal(err)
					}
				}
				e.advance(31 * time.Second)
			}
			before := map[string]int{}
			for _, m := range e.snapshot("jobs") {
				if m.ReceiveCount != tt.failures {
					t.Fatalf("message %s received %d times before the samples; want %d", m.MessageID, m.ReceiveCount, tt.failures)
				}
				before[m.MessageID] = m.ReceiveCount
			}

			c := e.collector(func(o *Options) { o.Peek.Sources = []string{"jobs"} })
			must(t, c.Discover(e.ctx))
			e.sim.ResetCallCounts()
			for range 3 {
				must(t, c.CycleAttributes(e.ctx))
				must(t, c.PeekDue(e.ctx))
				e.advance(5 * time.Minute)
			}
			lost := 0
			for _, m := range e.snapshot("jobs") {
				if m.ReceiveCount >= maxRC && before[m.MessageID] < maxRC {
					lost++
				}
			}
			if n := len(e.snapshot("jobs")); n != 20 {
				t.Errorf("the source holds %d messages after the samples; want 20", n)
			}
			t.Logf("%s: the samples took the last try of %d of 20 messages, in %d ReceiveMessage calls",
				tt.name, lost, e.sim.CallCount("ReceiveMessage"))
			if lost > tt.maxLost {
				t.Errorf("the samples took the last try of %d messages; want at most %d", lost, tt.maxLost)
			}
		})
	}
}
