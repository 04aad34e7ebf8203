package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// bench is one build's sim and serve, with the fleet made on the simulator.
type bench struct {
	cfg      config
	dir      string
	sim      *exec.Cmd
	serve    *exec.Cmd
	simURL   string
	serveURL string
	client   *http.Client
}

// startBench starts the simulator, makes the fleet on it, starts the dashboard and waits until
// it shows every queue after a cycle.
func startBench(ctx context.Context, cfg config) (*bench, error) {
	dir, err := os.MkdirTemp("", "servebench-")
	if err != nil {
		return nil, err
	}
	b := &bench{cfg: cfg, dir: dir, client: &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		MaxIdleConnsPerHost: 256, DisableCompression: true}}}
	simAddr, serveAddr := freeAddr(), freeAddr()
	b.simURL, b.serveURL = "http://"+simAddr, "http://"+serveAddr
	if b.sim, err = b.start(ctx, "sim", "sim", "--listen", simAddr); err != nil {
		return b, err
	}
	if err := waitListening(ctx, simAddr); err != nil {
		return b, fmt.Errorf("sim: %w", err)
	}
	started := time.Now()
	if err := makeFleet(ctx, b.simURL, cfg.pairs, cfg.holding); err != nil {
		return b, err
	}
	fmt.Printf("%s: %d queues made on the simulator in %.1f s\n", cfg.label, 2*cfg.pairs, time.Since(started).Seconds())
	started = time.Now()
	if b.serve, err = b.start(ctx, "serve", "serve", "--endpoint-url", b.simURL, "--region", "us-east-1",
		"--listen", serveAddr, "--db", filepath.Join(dir, "toolq.db")); err != nil {
		return b, err
	}
	if err := b.waitCycle(ctx); err != nil {
		return b, err
	}
	fmt.Printf("%s: every queue on the overview, after a cycle, %.1f s after serve started\n", cfg.label, time.Since(started).Seconds())
	return b, nil
}

// start runs the binary with args, its output in the bench's directory.
func (b *bench) start(ctx context.Context, name string, args ...string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(b.dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, b.cfg.binary, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return cmd, nil
}

// stop ends both processes and removes the directory.
func (b *bench) stop() {
	for _, cmd := range []*exec.Cmd{b.serve, b.sim} {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
			}
		}
	}
	_ = os.RemoveAll(b.dir)
}

// freeAddr returns a loopback address with a port nothing listens on now.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err) // no loopback port at all: nothing to measure
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitListening waits until addr accepts connections.
func waitListening(ctx context.Context, addr string) error {
	for range 300 {
		if c, err := net.Dial("tcp", addr); err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return errors.New("not listening after 30 s")
}

// makeFleet creates pairs source queues, each with a dead-letter queue, and sends a message to
// every holding-th dead-letter queue, 32 calls at a time, through the stock SDK.
func makeFleet(ctx context.Context, endpoint string, pairs, holding int) error {
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(endpoint),
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", "")})
	work := make(chan int)
	errs := make(chan error, 32)
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := range work {
				if err := makePair(ctx, client, i, i%holding == 0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	go func() {
		defer close(work)
		for i := range pairs {
			select {
			case work <- i:
			case err := <-errs:
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// makePair creates one source queue with its dead-letter queue.
func makePair(ctx context.Context, client *sqs.Client, i int, hold bool) error {
	dlq, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("calls-%05d-dlq", i))})
	if err != nil {
		return fmt.Errorf("create a dead-letter queue: %w", err)
	}
	policy := fmt.Sprintf(`{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:calls-%05d-dlq","maxReceiveCount":"5"}`, i)
	if _, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("calls-%05d", i)),
		Attributes: map[string]string{"RedrivePolicy": policy}}); err != nil {
		return fmt.Errorf("create a source queue: %w", err)
	}
	if hold {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl,
			MessageBody: aws.String(fmt.Sprintf(`{"toolCallId":"tc_%d","toolName":"web_search"}`, i))}); err != nil {
			return fmt.Errorf("send to a dead-letter queue: %w", err)
		}
	}
	return nil
}

// totalsQueues finds the queue count in the overview's totals line, as both builds write it.
var totalsQueues = regexp.MustCompile(`id="totals"[^>]*><span><strong>([0-9\x{202f}]+)</strong> queues`)

// waitCycle waits until the overview counts every queue and says when its data was updated.
func (b *bench) waitCycle(ctx context.Context) error {
	want := strconv.Itoa(2 * b.cfg.pairs)
	for range 1800 {
		if body, _, err := b.get(ctx, "/", false); err == nil {
			if m := totalsQueues.FindSubmatch(body); m != nil && strings.ReplaceAll(string(m[1]), "\u202f", "") == want &&
				strings.Contains(string(body), `data-age=`) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("serve did not show %s queues after a cycle within 3 minutes (log: %s)", want, b.dir)
}

// get fetches path from serve; gzip asks for the compressed body, returned as sent.
func (b *bench) get(ctx context.Context, path string, gzip bool) ([]byte, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.serveURL+path, nil)
	if err != nil {
		return nil, 0, err
	}
	if gzip {
		req.Header.Set("Accept-Encoding", "gzip")
	}
	started := time.Now()
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	took := time.Since(started)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return body, took, err
}

// residentMB is a process's resident set size now, from /proc.
func residentMB(pid int) float64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
