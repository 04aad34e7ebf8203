// Package events carries change notifications from the collector and the actions to the live
// pages, the notifier and the event stream. It holds no data: an event says what changed, and subscribers read the store again.
package events

import (
	"sync"
	"time"
)

// Kind names what changed.
type Kind string

// The kinds of change toolq publishes.
const (
	// QueuesChanged: the set of watched queues or their attribute samples changed (a collector cycle ended).
	QueuesChanged Kind = "queues"
	// MetricsChanged: new CloudWatch datapoints were stored.
	MetricsChanged Kind = "metrics"
	// SampleTaken: a new message sample (DLQ contents, group backlog) of one queue was stored.
	SampleTaken Kind = "sample"
	// MoveTasksChanged: a move task of one DLQ started, progressed or ended.
	MoveTasksChanged Kind = "movetasks"
	// AuditAppended: an action was recorded in the audit log.
	AuditAppended Kind = "audit"
	// AlertsRaised: the notifier stored new alerts (DLQ arrivals, health changes, …), which the
	// event stream follows.
	AlertsRaised Kind = "alerts"
	// SnapshotBuilt: the read side built a new snapshot of every queue (views.Snapshot), which
	// the overview's pushes and the notifier follow. Each replica builds its own, so it is
	// never sent to the others.
	SnapshotBuilt Kind = "snapshot"
)

// Event is one change. QueueID is zero when the change is not about one queue.
type Event struct {
	Kind    Kind
	QueueID int64
	At      time.Time
}

// Publisher is what producers of events need: the collector and the actions take one.
type Publisher interface {
	Publish(Event)
}

// Discard is a Publisher that drops every event, for tools and tests that have no subscribers.
var Discard Publisher = discard{}

type discard struct{}

func (discard) Publish(Event) {}

// Bus fans events out to subscribers. Publish never blocks: a subscriber whose buffer is full
// misses the event, which is safe because events only say "read again".
type Bus struct {
	mu       sync.Mutex
	subs     map[chan Event]struct{}
	watchers map[*func(Event)]struct{}
}

// NewBus returns an empty Bus.
func NewBus() *Bus {
	return &Bus{subs: make(map[chan Event]struct{})}
}

// Publish calls every watcher with e, then sends it to every subscriber that has room for it.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for w := range b.watchers {
		(*w)(e)
	}
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
		}
	}
}

// Subscribe returns a channel of events with the given buffer and a function that ends the
// subscription and closes the channel.
func (b *Bus) Subscribe(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, buffer)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			b.mu.Lock()
			delete(b.subs, ch)
			b.mu.Unlock()
			close(ch)
		})
	}
}

// Watch calls fn with every event published from now on, within Publish, before Publish
// returns: a reader of the store that watches learns of a change before anyone can read what
// it changed. fn must not block or publish. The returned function ends the watch.
func (b *Bus) Watch(fn func(Event)) func() {
	w := &fn
	b.mu.Lock()
	if b.watchers == nil {
		b.watchers = map[*func(Event)]struct{}{}
	}
	b.watchers[w] = struct{}{}
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		delete(b.watchers, w)
		b.mu.Unlock()
	}
}
