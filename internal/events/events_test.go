package events

import (
	"testing"
	"time"
)

func TestBusFansOutAndNeverBlocks(t *testing.T) {
	b := NewBus()
	fast, cancelFast := b.Subscribe(4)
	defer cancelFast()
	slow, cancelSlow := b.Subscribe(1)
	defer cancelSlow()

	for i := range 3 {
		// Publish must return even though slow's buffer fills after the first event.
		b.Publish(Event{Kind: QueuesChanged, QueueID: int64(i), At: time.Unix(int64(i), 0)})
	}
	for i := range 3 {
		if e := <-fast; e.QueueID != int64(i) {
			t.Errorf("fast subscriber got queue %d, want %d", e.QueueID, i)
		}
	}
	if e := <-slow; e.QueueID != 0 {
		t.Errorf("slow subscriber got queue %d first, want 0", e.QueueID)
	}
	select {
	case e := <-slow:
		t.Errorf("slow subscriber got %+v; its full buffer should have dropped it", e)
	default:
	}
}

func TestBusCancelClosesAndIsIdempotent(t *testing.T) {
	b := NewBus()
	ch, cancel := b.Subscribe(1)
	cancel()
	cancel() // a second cancel is harmless
	if _, ok := <-ch; ok {
		t.Error("channel still open after cancel")
	}
	b.Publish(Event{Kind: AuditAppended}) // publishing to no subscriber is fine
	Discard.Publish(Event{Kind: SampleTaken})
}
