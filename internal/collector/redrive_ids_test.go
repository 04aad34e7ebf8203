package collector

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestOwnReceivesSurviveAPartialRedrive: a redrive gives the messages it
// moves new ids (as AWS does), so a message toolq sees again under the same
// id after a redrive is one the task left where it was, and toolq's earlier
// receives of it still count.
func TestOwnReceivesSurviveAPartialRedrive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srcURL, _ := e.createPair("web-search", "web-search-dlq", 2)
	e.deadLetter(srcURL, "web-search-dlq", 2)
	c := e.collector(nil)
	must(t, c.Discover(e.ctx))
	for range 2 {
		must(t, c.PeekDue(e.ctx))
		e.advance(time.Minute)
	}
	before := e.snapshot("web-search-dlq")
	// A redrive of one message a second, cancelled after its first second.
	dlq := e.queueNamed("web-search-dlq")
	start, err := e.sqs.StartMessageMoveTask(e.ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(dlq.ARN), MaxNumberOfMessagesPerSecond: aws.Int32(1)})
	must(t, err)
	must(t, c.PollMoveTasks(e.ctx))
	e.advance(time.Second)
	_, err = e.sqs.CancelMessageMoveTask(e.ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	must(t, err)
	e.advance(time.Second)
	must(t, c.PollMoveTasks(e.ctx))
	left := e.snapshot("web-search-dlq")
	if len(before) != 2 || len(left) != 1 {
		t.Fatalf("the DLQ held %d messages, then %d; want 2, then the 1 the cancelled task left", len(before), len(left))
	}
	for _, m := range e.snapshot("web-search") {
		if m.MessageID == before[0].MessageID || m.MessageID == before[1].MessageID {
			t.Fatalf("the redriven message kept its id %s", m.MessageID)
		}
	}

	e.advance(time.Minute)
	must(t, c.PeekDue(e.ctx))
	_, msgs := e.latestMessages("web-search-dlq")
	if len(msgs) != 1 || msgs[0].MessageID != left[0].MessageID || msgs[0].OwnReceives != 3 {
		t.Fatalf("after the redrive: %+v; want %s with toolq's 3 receives since it arrived", msgs, left[0].MessageID)
	}
}
