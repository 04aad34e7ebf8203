package sqsim

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"
)

// dedupWindow is how long SQS remembers a FIFO deduplication id.
const dedupWindow = 5 * time.Minute

// dedupRecord remembers the message a deduplication id first produced.
type dedupRecord struct {
	messageID string
	sequence  string
	expires   time.Time
}

// dedupKey scopes a deduplication id to the queue or, with
// DeduplicationScope=messageGroup, to its message group.
func (q *queue) dedupKey(groupID, dedupID string) string {
	if q.attrs.deduplicationScope == "messageGroup" {
		return groupID + "\x00" + dedupID
	}
	return dedupID
}

// deduplicated returns the record of an earlier send with the same
// deduplication id within the window, if any.
func (q *queue) deduplicated(groupID, dedupID string, now time.Time) (dedupRecord, bool) {
	r, ok := q.dedup[q.dedupKey(groupID, dedupID)]
	if !ok || !now.Before(r.expires) {
		return dedupRecord{}, false
	}
	return r, true
}

// remember opens the deduplication window for m's id, dropping expired
// records first so that the table stays as small as five minutes of sends.
func (q *queue) remember(groupID, dedupID string, m *message, now time.Time) {
	if len(q.dedup) >= 1024 && len(q.dedup)%1024 == 0 {
		for k, r := range q.dedup {
			if !now.Before(r.expires) {
				delete(q.dedup, k)
			}
		}
	}
	q.dedup[q.dedupKey(groupID, dedupID)] = dedupRecord{messageID: m.id, sequence: m.sequence, expires: now.Add(dedupWindow)}
}

// contentDeduplicationID is the id ContentBasedDeduplication derives: the
// SHA-256 of the body alone (message attributes do not count).
func contentDeduplicationID(body string) string {
	sum := sha256.Sum256([]byte(body))
	return hex.EncodeToString(sum[:])
}

// sequenceBase makes sequence numbers look like SQS's 20-digit ones.
const sequenceBase = 10_000_000_000_000_000_000

// nextSequence returns the queue's next SequenceNumber. All have 20 digits,
// so they order the same as strings and as numbers.
func (q *queue) nextSequence() string {
	q.sequence++
	return fmt.Sprintf("%020d", uint64(sequenceBase)+q.sequence)
}

// fifoCandidates returns, in the order a receive should take them, the
// messages of q that may be delivered now: only the leading receivable
// messages of each group that has nothing in flight. Messages of the group
// that comes first are all listed before any other group's, because a
// receive prefers to return messages of one group.
func fifoCandidates(q *queue, now time.Time) []*message {
	locked := make(map[string]bool)
	for _, m := range q.messages {
		if m.inFlightAt(now) {
			locked[m.groupID] = true
		}
	}
	var order []string
	byGroup := make(map[string][]*message)
	for _, m := range q.messages {
		if m.gone || locked[m.groupID] {
			continue
		}
		if !m.receivable(now) {
			// A delayed message holds back the rest of its group.
			locked[m.groupID] = true
			continue
		}
		if _, seen := byGroup[m.groupID]; !seen {
			order = append(order, m.groupID)
		}
		byGroup[m.groupID] = append(byGroup[m.groupID], m)
	}
	var out []*message
	for _, g := range order {
		out = append(out, byGroup[g]...)
	}
	return out
}
