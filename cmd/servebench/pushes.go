package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// arrival is one websocket message as one client got it.
type arrival struct {
	client int
	key    uint64 // the message's bytes, hashed: the same push is the same bytes for every client
	size   int
	at     time.Time
}

// watchPushes connects cfg.ws clients to the overview, as browsers with permessage-deflate, and
// watches the pushes for cfg.wsFor seconds: each push's size (uncompressed, as the first
// client got it, a push being the messages that came within 100 ms of each other), how much
// later than the first client each client got each message, and the server's RSS.
func (b *bench) watchPushes(ctx context.Context, pid int) error {
	conns, err := b.dialClients(ctx)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	if err != nil {
		return err
	}
	arrivals := make(chan arrival, 4096)
	var readers sync.WaitGroup
	for i, c := range conns {
		readers.Go(func() {
			for {
				_, msg, err := c.ReadMessage()
				if err != nil {
					return
				}
				h := fnv.New64a()
				h.Write(msg)
				arrivals <- arrival{client: i, key: h.Sum64(), size: len(msg), at: time.Now()}
			}
		})
	}
	done := make(chan struct{})
	peak := make(chan float64)
	go func() { peak <- watchRSS(pid, done) }()
	var got []arrival
	settle := time.Now().Add(3 * time.Second) // the connect pushes: the whole view, not counted
	end := time.After(time.Duration(b.cfg.wsFor)*time.Second + 3*time.Second)
collect:
	for {
		select {
		case a := <-arrivals:
			if a.at.After(settle) {
				got = append(got, a)
			}
		case <-end:
			break collect
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	close(done)
	rss := <-peak
	for _, c := range conns {
		_ = c.Close()
	}
	readers.Wait()
	b.reportPushes(got, rss)
	return nil
}

// dialClients connects the clients, from 127.0.x.y addresses, 16 to an address, so that the
// server's quota of websockets per client address admits them all.
func (b *bench) dialClients(ctx context.Context) ([]*websocket.Conn, error) {
	wsURL := "ws" + strings.TrimPrefix(b.serveURL, "http") + "/ws?topic=overview"
	var conns []*websocket.Conn
	for i := range b.cfg.ws {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, byte(1+i/16/250), byte(2+i/16%250))}
		d := websocket.Dialer{EnableCompression: true, HandshakeTimeout: time.Minute,
			NetDialContext: (&net.Dialer{LocalAddr: local}).DialContext}
		c, resp, err := d.DialContext(ctx, wsURL, http.Header{"Origin": {b.serveURL}})
		if resp != nil && resp.Body != nil {
			_ = resp.Body.Close()
		}
		if err != nil {
			return conns, fmt.Errorf("websocket client %d: %w", i, err)
		}
		conns = append(conns, c)
	}
	return conns, nil
}

// reportPushes prints the pushes' sizes and delivery spread.
func (b *bench) reportPushes(got []arrival, rss float64) {
	first := map[uint64]time.Time{}
	for _, a := range got {
		if t, ok := first[a.key]; !ok || a.at.Before(t) {
			first[a.key] = a.at
		}
	}
	var late []time.Duration
	var pushes []int // sizes of client 0's pushes
	var last time.Time
	for _, a := range got {
		late = append(late, a.at.Sub(first[a.key]))
		if a.client != 0 {
			continue
		}
		if len(pushes) == 0 || a.at.Sub(last) > 100*time.Millisecond {
			pushes = append(pushes, 0)
		}
		pushes[len(pushes)-1] += a.size
		last = a.at
	}
	largest, sum := 0, 0
	for _, p := range pushes {
		largest, sum = max(largest, p), sum+p
	}
	mean := 0
	if len(pushes) > 0 {
		mean = sum / len(pushes)
	}
	fmt.Printf("%s: %d websocket clients, %d s: %d pushes, mean %.1f KB, largest %.1f KB (uncompressed); delivery after the first client p50 %.0f ms, p99 %.0f ms; RSS at most %.0f MB\n",
		b.cfg.label, b.cfg.ws, b.cfg.wsFor, len(pushes), float64(mean)/1000, float64(largest)/1000,
		ms(percentile(late, 50)), ms(percentile(late, 99)), rss)
}
