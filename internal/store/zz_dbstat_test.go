package store

import (
	"testing"
	"time"
)

func TestZZDBStat(t *testing.T) {
	size, by := writeQueueHistory(t, 3*24*time.Hour)
	t.Log(size)
	for _, x := range by {
		t.Logf("%-32s %8.2f MiB", x.name, float64(x.bytes)/(1<<20))
	}
}
