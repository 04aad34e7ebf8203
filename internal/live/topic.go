package live

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/toolq/toolq/internal/events"
)

// TopicKind is what a page shows: the overview, the audit log or one queue.
type TopicKind int

// Topic kinds.
const (
	OverviewTopic TopicKind = iota + 1
	AuditTopic
	QueueTopic
)

// Topic is what one page follows: a kind, and for a queue's page the queue's id.
type Topic struct {
	Kind    TopicKind
	QueueID int64 // QueueTopic only
}

// Overview is the overview's topic.
func Overview() Topic { return Topic{Kind: OverviewTopic} }

// Audit is the audit log's topic.
func Audit() Topic { return Topic{Kind: AuditTopic} }

// Queue is the topic of the page of the queue with that id.
func Queue(id int64) Topic { return Topic{Kind: QueueTopic, QueueID: id} }

// String is the topic as a page names it in its websocket URL: "overview", "audit",
// "queue:<id>".
func (t Topic) String() string {
	switch t.Kind {
	case OverviewTopic:
		return "overview"
	case AuditTopic:
		return "audit"
	case QueueTopic:
		return "queue:" + strconv.FormatInt(t.QueueID, 10)
	}
	return "unknown"
}

// ErrUnknownTopic is returned by ParseTopic for a name that is no topic.
var ErrUnknownTopic = fmt.Errorf("live: unknown topic")

// ParseTopic reads a topic as String writes it.
func ParseTopic(s string) (Topic, error) {
	switch {
	case s == "overview":
		return Overview(), nil
	case s == "audit":
		return Audit(), nil
	case strings.HasPrefix(s, "queue:"):
		id, err := strconv.ParseInt(strings.TrimPrefix(s, "queue:"), 10, 64)
		if err == nil && id > 0 {
			return Queue(id), nil
		}
	}
	return Topic{}, fmt.Errorf("%w: %.64q", ErrUnknownTopic, s)
}

// affects reports whether an event changes what a page of topic t shows. The overview shows
// the read side's snapshot, and changes with each new one; a queue's page shows its summary from
// the snapshot too, and besides its charts, samples and move tasks, read as it is pushed. An
// event about no queue in particular changes every queue's page.
func (t Topic) affects(ev events.Event) bool {
	queue := t.Kind == QueueTopic && (ev.QueueID == 0 || ev.QueueID == t.QueueID)
	switch ev.Kind {
	case events.SnapshotBuilt:
		return t.Kind == OverviewTopic || t.Kind == QueueTopic
	case events.MetricsChanged, events.MoveTasksChanged, events.SampleTaken:
		return queue
	case events.AuditAppended:
		return t.Kind == AuditTopic
	}
	return false
}
