package server

import "testing"

// TestFreeListKeepsUpToItsSize: a free list gives back what was put, newest or not, makes a value
// when it holds none, and keeps no more than its size.
func TestFreeListKeepsUpToItsSize(t *testing.T) {
	l := newFreeList[*int](2)
	made := 0
	fresh := func() *int { made++; return new(int) }
	a, b, c := l.get(fresh), l.get(fresh), l.get(fresh)
	if made != 3 {
		t.Fatalf("an empty list made %d values for three gets, want 3", made)
	}
	l.put(a)
	l.put(b)
	l.put(c) // the list is full: c is dropped
	for range 2 {
		if got := l.get(fresh); got != a && got != b {
			t.Error("a get from a full list made a value instead of giving back one put")
		}
	}
	if l.get(fresh); made != 4 {
		t.Errorf("the list kept %d values past its size", 3-(made-3))
	}
}
