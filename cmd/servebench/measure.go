package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// measure prints the build's figures: the page against /healthz, the page's size, the RSS with
// clients on the page, and the websocket pushes when asked.
func (b *bench) measure(ctx context.Context) error {
	pid := b.serve.Process.Pid
	idle := residentMB(pid)
	var page, health []time.Duration
	var size int
	for range b.cfg.requests {
		body, took, err := b.get(ctx, "/", true)
		if err != nil {
			return err
		}
		page, size = append(page, took), len(body)
		if _, took, err = b.get(ctx, "/healthz", true); err != nil {
			return err
		}
		health = append(health, took)
	}
	p50, h50 := percentile(page, 50), percentile(health, 50)
	fmt.Printf("%s: GET / p50 %.1f ms (p99 %.1f), /healthz p50 %.2f ms: %.1fx; page %.1f KB gzipped; RSS idle %.0f MB\n",
		b.cfg.label, ms(p50), ms(percentile(page, 99)), ms(h50), float64(p50)/float64(h50), float64(size)/1000, idle)
	loaded, failed, peak := b.clientsOnPage(ctx, pid)
	fmt.Printf("%s: %d clients on GET /: p50 %.1f ms, p99 %.1f ms, %d of %d requests failed (a minute without an answer); RSS at most %.0f MB\n",
		b.cfg.label, b.cfg.clients, ms(percentile(loaded, 50)), ms(percentile(loaded, 99)), failed, 5*b.cfg.clients, peak)
	if b.cfg.ws > 0 {
		return b.watchPushes(ctx, pid)
	}
	return nil
}

// clientsOnPage has cfg.clients clients fetch the page five times each, all at once, and
// returns the times of those answered, how many were not, and the server's largest RSS
// meanwhile.
func (b *bench) clientsOnPage(ctx context.Context, pid int) ([]time.Duration, int, float64) {
	var mu sync.Mutex
	var times []time.Duration
	failed := 0
	done := make(chan struct{})
	peak := make(chan float64)
	go func() { peak <- watchRSS(pid, done) }()
	var wg sync.WaitGroup
	for range b.cfg.clients {
		wg.Go(func() {
			for range 5 {
				_, took, err := b.get(ctx, "/", true)
				mu.Lock()
				if err != nil {
					failed++
				} else {
					times = append(times, took)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(done)
	return times, failed, <-peak
}

// watchRSS reads pid's RSS every 100 ms until done, and returns the largest.
func watchRSS(pid int, done <-chan struct{}) float64 {
	top := residentMB(pid)
	for {
		select {
		case <-done:
			return max(top, residentMB(pid))
		case <-time.After(100 * time.Millisecond):
			top = max(top, residentMB(pid))
		}
	}
}

// percentile is the p-th percentile of d (nearest rank).
func percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(d))
	i := (len(s)*p+99)/100 - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
