package sqsim

import (
	"fmt"
	"time"
)

// MessageSnapshot describes one message as it sits in a queue.
type MessageSnapshot struct {
	MessageID       string
	Body            string
	GroupID         string
	DeduplicationID string
	SequenceNumber  string
	ReceiveCount    int
	SentAt          time.Time
	// FirstReceivedAt is zero for a message never received.
	FirstReceivedAt time.Time
	InFlight        bool
	Delayed         bool
	// DeadLetterSourceARN is the ARN of the queue the message was
	// dead-lettered from, if it was.
	DeadLetterSourceARN string
	// MessageAttributes maps each attribute's name to its string value
	// (binary values as raw bytes).
	MessageAttributes map[string]string
}

// Snapshot returns every message of the queue called queueName, visible,
// delayed or in flight, in the queue's order, without receiving them:
// receive counts, visibility and metrics stay as they were.
func (s *Simulator) Snapshot(queueName string) ([]MessageSnapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tick()
	q := s.queues[queueName]
	if q == nil {
		return nil, fmt.Errorf("sqsim: snapshot %q: queue does not exist", queueName)
	}
	now := s.clock.Now()
	out := []MessageSnapshot{}
	for _, m := range q.messages {
		if m.gone {
			continue
		}
		snap := MessageSnapshot{
			MessageID:           m.id,
			Body:                m.body,
			GroupID:             m.groupID,
			DeduplicationID:     m.dedupID,
			SequenceNumber:      m.sequence,
			ReceiveCount:        m.receiveCount,
			SentAt:              m.sentAt,
			FirstReceivedAt:     m.firstReceivedAt,
			InFlight:            m.inFlightAt(now),
			Delayed:             !m.inFlight && now.Before(m.visibleAt),
			DeadLetterSourceARN: m.dlqSourceARN,
		}
		if len(m.attributes) > 0 {
			snap.MessageAttributes = make(map[string]string, len(m.attributes))
			for name, a := range m.attributes {
				snap.MessageAttributes[name] = a.String()
			}
		}
		out = append(out, snap)
	}
	return out, nil
}
