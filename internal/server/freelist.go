package server

// freeList keeps up to its capacity of values from one use to the next: the large buffers and
// compressors a page takes. Unlike a sync.Pool, which the garbage collector empties, it keeps
// them until they are taken. At a page an attribute cycle the collector collected about as often
// as pages came, and the megabyte buffers a page of a thousand queues holds were grown afresh
// each time: two megabytes of garbage a page, which brought the next collection nearer.
type freeList[T any] chan T

// newFreeList returns a list that keeps up to n values.
func newFreeList[T any](n int) freeList[T] { return make(freeList[T], n) }

// get takes a kept value, or makes one with fresh when none is kept.
func (l freeList[T]) get(fresh func() T) T {
	select {
	case v := <-l:
		return v
	default:
		return fresh()
	}
}

// put keeps v, unless the list is full.
func (l freeList[T]) put(v T) {
	select {
	case l <- v:
	default:
	}
}
